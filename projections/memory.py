"""The graph folded into dictionaries: the state behind rebuilds and time travel."""

from __future__ import annotations

from collections.abc import Sequence

from eventstore import Envelope, EventStore
from projections.fold import apply_all
from projections.keys import ENTITY, RELATION
from projections.records import (
    ContextRecord,
    EntityRecord,
    NameRecord,
    RelationRecord,
    WorkspaceRecord,
)

__all__ = ["MemoryState", "fold_log"]


class MemoryState:
    """Everything the views hold, in dictionaries; `position` is the last event folded."""

    def __init__(self) -> None:
        self.entities: dict[str, EntityRecord] = {}
        self.names: dict[tuple[str, str], NameRecord] = {}
        self.relations: dict[str, RelationRecord] = {}
        self.contexts: dict[str, ContextRecord] = {}
        self.workspaces: dict[str, WorkspaceRecord] = {}
        self.type_counts: dict[tuple[str, bytes, str], int] = {}
        self.position = 0

    def fold(self, envelopes: Sequence[Envelope]) -> MemoryState:
        """Fold a batch of envelopes in order and return self."""
        if envelopes:
            apply_all(self, envelopes)
            self.position = envelopes[-1].position
        return self

    # --- State protocol -------------------------------------------------------------------

    def get_entity(self, stream: str) -> EntityRecord | None:
        return self.entities.get(stream)

    def live_entity(self, workspace: str, name: str) -> EntityRecord | None:
        record = self.names.get((workspace, name))
        return None if record is None or record.live is None else self.entities.get(record.live)

    def save_entity(self, record: EntityRecord, previous: EntityRecord | None) -> None:
        self.entities[record.stream] = record
        if previous is None:
            key = (record.workspace, record.name)
            known = self.names.get(key)
            streams = (*known.streams, record.stream) if known else (record.stream,)
            self.names[key] = NameRecord(record.stream, streams)
            self._count(record.workspace, ENTITY, record.entity_type, +1)
        elif previous.entity_type != record.entity_type:
            self._count(record.workspace, ENTITY, previous.entity_type, -1, total=False)
            self._count(record.workspace, ENTITY, record.entity_type, +1, total=False)

    def remove_entity(self, record: EntityRecord) -> None:
        del self.entities[record.stream]
        key = (record.workspace, record.name)
        known = self.names[key]
        if known.live == record.stream:
            self.names[key] = NameRecord(None, known.streams)
        self._count(record.workspace, ENTITY, record.entity_type, -1)

    def get_relation(self, stream: str) -> RelationRecord | None:
        return self.relations.get(stream)

    def save_relation(self, record: RelationRecord, previous: RelationRecord | None) -> None:
        self.relations[record.stream] = record
        if previous is None:
            self._count(record.workspace, RELATION, record.relation_type, +1)

    def remove_relation(self, record: RelationRecord) -> None:
        del self.relations[record.stream]
        self._count(record.workspace, RELATION, record.relation_type, -1)

    def context(self, workspace: str) -> ContextRecord | None:
        return self.contexts.get(workspace)

    def save_context(self, record: ContextRecord) -> None:
        self.contexts[record.workspace] = record
        self._workspace(record.workspace)

    # --- bookkeeping ----------------------------------------------------------------------

    def _workspace(self, workspace: str) -> WorkspaceRecord:
        record = self.workspaces.get(workspace)
        if record is None:
            record = self.workspaces[workspace] = WorkspaceRecord(workspace)
        return record

    def _count(self, workspace: str, kind: bytes, type_name: str, delta: int, total: bool = True) -> None:
        key = (workspace, kind, type_name)
        count = self.type_counts.get(key, 0) + delta
        if count:
            self.type_counts[key] = count
        else:
            del self.type_counts[key]
        if total:
            record = self._workspace(workspace)
            if kind == ENTITY:
                record = WorkspaceRecord(record.name, record.entities + delta, record.relations)
            else:
                record = WorkspaceRecord(record.name, record.entities, record.relations + delta)
            self.workspaces[workspace] = record


def fold_log(store: EventStore, to_position: int | None = None) -> MemoryState:
    """Fold the log from position 1 to `to_position` (default: its head) into memory."""
    state = MemoryState()
    with store.read() as reader:
        last = reader.head() if to_position is None else min(to_position, reader.head())
        for batch in reader.batches(1, last, batch_size=4096):
            state.fold(batch)
    return state
