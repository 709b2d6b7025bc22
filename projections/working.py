"""Working copies: the mutable form of records that the fold changes in place.

The fold runs a million times a second only if it does not build a new frozen record
per event; so it mutates these, and each `State` decides what saving means (nothing
for dictionaries, encoding the record for LMDB).
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from projections.records import ContextRecord, EntityRecord, RelationRecord

__all__ = ["Context", "Entity", "Relation"]


class Entity(msgspec.Struct, gc=False):
    """An entity being folded; `observations` is an ordered set (dict keys)."""

    stream: str
    workspace: str
    name: str
    entity_type: str
    observations: dict[str, None]
    metadata: dict[str, Any]
    version: int
    created_at: int
    updated_at: int
    seq: int

    @classmethod
    def of(cls, record: EntityRecord) -> Entity:
        """A working copy of a stored record."""
        return cls(
            record.stream, record.workspace, record.name, record.entity_type,
            dict.fromkeys(record.observations), record.metadata,
            record.version, record.created_at, record.updated_at, record.seq,
        )

    def record(self) -> EntityRecord:
        """The frozen record of the current state."""
        return EntityRecord(
            self.stream, self.workspace, self.name, self.entity_type,
            tuple(self.observations), self.metadata,
            self.version, self.created_at, self.updated_at, self.seq,
        )


class Relation(msgspec.Struct, gc=False):
    """A relation being folded."""

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

    @classmethod
    def of(cls, record: RelationRecord) -> Relation:
        """A working copy of a stored record."""
        return cls(
            record.stream, record.workspace, record.source, record.target, record.relation_type,
            record.confidence, record.metadata,
            record.version, record.created_at, record.updated_at, record.seq,
        )

    def record(self) -> RelationRecord:
        """The frozen record of the current state."""
        return RelationRecord(
            self.stream, self.workspace, self.source, self.target, self.relation_type,
            self.confidence, self.metadata,
            self.version, self.created_at, self.updated_at, self.seq,
        )


class Context(msgspec.Struct, gc=False):
    """A workspace context being folded."""

    workspace: str
    active_task: str | None = None
    status: str | None = None
    reason: str | None = None
    next_steps: tuple[str, ...] | None = None
    last_commit: str | None = None
    version: int = 0
    updated_at: int = 0

    FIELDS: ClassVar[tuple[str, ...]] = ("active_task", "status", "reason", "next_steps", "last_commit")

    @classmethod
    def of(cls, record: ContextRecord) -> Context:
        """A working copy of a stored record."""
        return cls(
            record.workspace, record.active_task, record.status, record.reason,
            record.next_steps, record.last_commit, record.version, record.updated_at,
        )

    def record(self) -> ContextRecord:
        """The frozen record of the current state."""
        return ContextRecord(
            self.workspace, self.active_task, self.status, self.reason, self.next_steps,
            self.last_commit, self.version, self.updated_at,
        )
