"""The records the views store: compact msgspec arrays, one shape per kind of thing.

Timestamps are microseconds since the epoch (from the log's `recorded_at`); `seq` is the
log position of the event that created the thing, which orders a workspace's entities
and relations the way the official server orders its file: oldest first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import msgspec

__all__ = [
    "ContextRecord",
    "EntityRecord",
    "EntityView",
    "NameRecord",
    "RelationRecord",
    "RelationView",
    "TypeCount",
    "WorkspaceRecord",
]


class EntityView(Protocol):
    """What readers of an entity may rely on: a stored record or a time-travel working copy."""

    @property
    def stream(self) -> str: ...
    @property
    def workspace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def entity_type(self) -> str: ...
    @property
    def observations(self) -> Iterable[str]: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def version(self) -> int: ...
    @property
    def created_at(self) -> int: ...
    @property
    def updated_at(self) -> int: ...
    @property
    def seq(self) -> int: ...


class RelationView(Protocol):
    """What readers of a relation may rely on: a stored record or a working copy."""

    @property
    def stream(self) -> str: ...
    @property
    def workspace(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def relation_type(self) -> str: ...
    @property
    def confidence(self) -> float | None: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def version(self) -> int: ...
    @property
    def created_at(self) -> int: ...
    @property
    def updated_at(self) -> int: ...
    @property
    def seq(self) -> int: ...


class _Record(msgspec.Struct, frozen=True, array_like=True, gc=False):
    pass


class EntityRecord(_Record):
    """The current state of one live entity."""

    stream: str
    workspace: str
    name: str
    entity_type: str
    observations: tuple[str, ...]
    metadata: dict[str, Any]
    version: int
    created_at: int
    updated_at: int
    seq: int


class RelationRecord(_Record):
    """The current state of one live relation."""

    stream: str
    workspace: str
    source: str
    target: str
    relation_type: str
    confidence: float | None
    metadata: dict[str, Any]
    version: int
    created_at: int
    updated_at: int
    seq: int


class ContextRecord(_Record):
    """A workspace's working context: what the agent is doing and what comes next."""

    workspace: str
    active_task: str | None = None
    status: str | None = None
    reason: str | None = None
    next_steps: tuple[str, ...] | None = None
    last_commit: str | None = None
    version: int = 0
    updated_at: int = 0


class NameRecord(_Record):
    """Every entity ever created under one name in one workspace, and the live one."""

    live: str | None
    streams: tuple[str, ...]


class WorkspaceRecord(_Record):
    """A workspace's name and its totals."""

    name: str
    entities: int = 0
    relations: int = 0


class TypeCount(_Record):
    """How many live entities (or relations) of one type a workspace holds."""

    type_name: str
    count: int


_encoder = msgspec.msgpack.Encoder()
encode = _encoder.encode
"""The stored bytes of any record."""

decode_entity = msgspec.msgpack.Decoder(EntityRecord).decode
decode_relation = msgspec.msgpack.Decoder(RelationRecord).decode
decode_context = msgspec.msgpack.Decoder(ContextRecord).decode
decode_name = msgspec.msgpack.Decoder(NameRecord).decode
decode_workspace = msgspec.msgpack.Decoder(WorkspaceRecord).decode
decode_type_count = msgspec.msgpack.Decoder(TypeCount).decode
