"""The records the views store, and the fold changes: msgspec arrays, one shape per kind of thing.

Entities, relations and contexts are mutable: the fold changes them in place, and each
`State` decides what saving means (nothing for dictionaries, encoding the record for
LMDB). A whole log is folded without building a new object per event; a record that
must keep its state while the fold goes on is copied with `copy_record`.

Timestamps are microseconds since the epoch (from the log's `recorded_at`); `seq` is the
log position of the event that created the thing, which orders a workspace's entities
and relations the way the official server orders its file: oldest first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import msgspec
from chronograph.eventstore.compact import relation_stream
from chronograph.eventstore.keys import Stored, entity_key, entity_stream_of
from chronograph.projections.sealed import seal_array, seal_into, sealed_decoder

__all__ = [
    "ContextRecord",
    "bulk_encoder",
    "EntityRecord",
    "NameRecord",
    "RelationRecord",
    "TypeCount",
    "WorkspaceRecord",
    "copy_record",
    "stored_entity",
    "stored_name",
    "spelled",
    "stored_relation",
]


class EntityRecord(msgspec.Struct, array_like=True, gc=False):
    """The current state of one live entity; `observations` never repeat."""

    stream: str
    workspace: str
    name: str
    entity_type: str
    observations: list[str]
    metadata: dict[str, Any]
    version: int
    created_at: int
    updated_at: int
    seq: int
    validity: dict[str, tuple[int | None, int | None]] = {}
    """observation -> (valid from, valid until) in µs, for the observations that have a valid time"""


ENTITY_KEY = 15
"""The size of an entity stream's key (see `keys.stream_key`): its record leaves the stream out."""


def stored_entity(entity: EntityRecord, key: bytes) -> EntityRecord:
    """What the entities table keeps of `entity` under its `key`: without its stream's text when
    the key is that text's own bytes (an entity's stream, see `keys.stream_key`; view format 5),
    which a reader puts back (`keys.entity_stream_of`), and with `updated_at` 0 while it is
    `created_at` (view format 9; 8 bytes), which `LmdbGraph` puts back as it reads."""
    stream = "" if len(key) == ENTITY_KEY else entity.stream
    updated = 0 if entity.updated_at == entity.created_at else entity.updated_at
    if stream == entity.stream and updated == entity.updated_at:
        return entity
    return msgspec.structs.replace(entity, stream=stream, updated_at=updated)


class RelationRecord(msgspec.Struct, array_like=True, gc=False):
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
    valid_from: int | None = None
    """When it started being true in the world (µs), if the writer said"""
    valid_until: int | None = None
    """When it stopped being true (µs), if it did"""


def spelled(relation: RelationRecord) -> bool:
    """Whether `relation`'s stream is the one its fields spell (`relation_stream`)."""
    return relation.stream == relation_stream(relation.workspace, relation.source, relation.relation_type,
                                              relation.target)


def stored_relation(relation: RelationRecord) -> RelationRecord:
    """What the relations table keeps of `relation`, which `LmdbGraph` puts back as it reads:
    without its stream's text when the other fields spell it (`relation_stream` of its
    workspace, ends and type: every relation but one a redacted log renamed; view format 6), nor
    then its workspace, which its key numbers; `updated_at` 0 while it is `created_at`, and `seq` 0,
    which its key holds (`keys.relation_key`; view format 9: 20 bytes in the default workspace)."""
    its_own = spelled(relation)
    return msgspec.structs.replace(relation, stream="" if its_own else relation.stream, seq=0,
                                   workspace="" if its_own else relation.workspace,
                                   updated_at=0 if relation.updated_at == relation.created_at else relation.updated_at)


class ContextRecord(msgspec.Struct, array_like=True, gc=False):
    """A workspace's working context: what the agent is doing and what comes next."""

    workspace: str
    active_task: str | None = None
    status: str | None = None
    reason: str | None = None
    next_steps: tuple[str, ...] | None = None
    last_commit: str | None = None
    version: int = 0
    updated_at: int = 0

    FIELDS: ClassVar[tuple[str, ...]] = ("active_task", "status", "reason", "next_steps", "last_commit")
    """The fields a ContextUpdated event may set."""


class NameRecord(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """Every entity ever created under one name in one workspace, and the live one."""

    live: str | None
    streams: tuple[str, ...]


class _StoredName(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A NameRecord as the names table keeps it: the live stream by its place among the streams,
    so that each stream's text is stored once (view format 5; the text of a live stream that
    is not among them, which the fold never makes, would be kept as it is), and an entity's
    stream as its 15 bytes (`keys.entity_key`; view format 9: 39 -> 17 bytes a stream)."""

    live: int | str | None
    streams: tuple[Any, ...]
    """text, or bytes (msgspec decodes no union of the two: `_name` checks them)"""


def stored_name(record: NameRecord) -> msgspec.Struct:
    """What the names table keeps of `record` (encode it with `encode` or a `bulk_encoder`)."""
    live, streams = record.live, record.streams
    return _StoredName(streams.index(live) if live is not None and live in streams else live,
                       tuple(stream if (key := entity_key(stream)) is None else key for stream in streams))


class WorkspaceRecord(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A workspace's name and its totals."""

    name: str
    entities: int = 0
    relations: int = 0


class TypeCount(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """How many live entities (or relations) of one type a workspace holds."""

    type_name: str
    count: int


R = TypeVar("R", EntityRecord, RelationRecord, ContextRecord)
D = TypeVar("D", bound=msgspec.Struct)


def copy_record(record: R) -> R:
    """A copy the fold may change without touching `record`.

    The fold appends to an entity's observation list in place and replaces every other
    container it changes, so the list is the one thing copied deeper.
    """
    if isinstance(record, EntityRecord):
        return msgspec.structs.replace(record, observations=list(record.observations))
    return msgspec.structs.replace(record)


_encoder = msgspec.msgpack.Encoder()


def encode(record: msgspec.Struct) -> bytes:
    """The stored bytes of any record: a msgpack array, sealed (see `projections.sealed`)."""
    return seal_array(_encoder.encode(record))


def bulk_encoder() -> Callable[[msgspec.Struct], bytes]:
    """`encode` for one thread's long run of records (a rebuild): the same bytes, encoded into
    one reused buffer and sealed there, in a third of the time. Never share one between threads."""
    encoder = msgspec.msgpack.Encoder()
    buffer = bytearray()

    def encoded(record: msgspec.Struct) -> bytes:
        encoder.encode_into(record, buffer, 0)
        return seal_into(buffer)

    return encoded


def _decoder(kind: type[D]) -> Callable[[Stored], D]:
    return sealed_decoder(msgspec.msgpack.Decoder(kind).decode, f"a stored {kind.__name__}")


entity_decoder = msgspec.msgpack.Decoder(EntityRecord)
relation_decoder = msgspec.msgpack.Decoder(RelationRecord)
"""Without the checksum check: for readers that check it themselves (`LmdbGraph`'s hot loops). An
entity keyed by its stream's bytes comes back with an empty stream, which the reader puts back
from the key (see `stored_entity`); a relation too, put back from its fields (see `stored_relation`)."""

decode_context = _decoder(ContextRecord)
_decode_stored_name = msgspec.msgpack.Decoder(_StoredName).decode


def _name(value: Stored) -> NameRecord:
    stored = _decode_stored_name(value)
    streams = tuple(stream if type(stream) is str else _entity_stream(stream) for stream in stored.streams)
    live = stored.live
    return NameRecord(streams[live] if type(live) is int else live, streams)  # type: ignore[arg-type]


def _entity_stream(key: object) -> str:
    if type(key) is not bytes or len(key) != ENTITY_KEY:
        raise msgspec.ValidationError("a name's stream is neither text nor an entity's key")
    return entity_stream_of(key)


decode_name = sealed_decoder(_name, "a stored NameRecord")
decode_workspace = _decoder(WorkspaceRecord)
decode_type_count = _decoder(TypeCount)
