"""The `Graph` questions answered from a `DictState`: the past, as time travel folds it.

It hands out the state's records themselves (read-only by convention) rather than a
copy of each: a whole past graph is printed at once, and copies would cost a third of
the time of printing it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from functools import cached_property

from chronograph.eventstore.keys import digest
from chronograph.projections.records import ContextRecord, EntityRecord, RelationRecord, WorkspaceRecord
from chronograph.projections.states.dictstate import DictState
from chronograph.projections.states.graph import Direction, page
from chronograph.projections.streams import relation_stream

__all__ = ["DictGraph"]


class DictGraph:
    """A read-only `Graph` over a state folded into dictionaries."""

    def __init__(self, state: DictState) -> None:
        self.state = state
        self.position = state.position

    @cached_property
    def _entities_by_workspace(self) -> dict[str, list[EntityRecord]]:
        grouped: dict[str, list[EntityRecord]] = defaultdict(list)
        for entity in sorted(self.state.entities.values(), key=lambda e: e.seq):
            grouped[entity.workspace].append(entity)
        return grouped

    @cached_property
    def _relations_by_workspace(self) -> dict[str, list[RelationRecord]]:
        grouped: dict[str, list[RelationRecord]] = defaultdict(list)
        for relation in sorted(self.state.relations.values(), key=lambda r: r.seq):
            grouped[relation.workspace].append(relation)
        return grouped

    @cached_property
    def _adjacency(self) -> dict[tuple[str, str, str], list[RelationRecord]]:
        index: dict[tuple[str, str, str], list[RelationRecord]] = defaultdict(list)
        for records in self._relations_by_workspace.values():
            for record in records:
                index[(record.workspace, record.source, "out")].append(record)
                index[(record.workspace, record.target, "in")].append(record)
        return index

    def entity(self, workspace: str, name: str) -> EntityRecord | None:
        """The entity called `name` that was live then, or None."""
        return self.state.live_entity(workspace, name)

    def entity_by_stream(self, stream: str) -> EntityRecord | None:
        """The entity of `stream` if it was live then, or None."""
        return self.state.entities.get(stream)

    def relation_by_stream(self, stream: str) -> RelationRecord | None:
        """The relation of `stream` if it was live then, or None."""
        return self.state.relations.get(stream)

    def entities(
        self, workspace: str, offset: int = 0, limit: int | None = None
    ) -> Iterator[EntityRecord]:
        """The workspace's entities live then, oldest first."""
        records = self._entities_by_workspace.get(workspace, [])
        return page(records, offset, limit)

    def relations(
        self, workspace: str, offset: int = 0, limit: int | None = None
    ) -> Iterator[RelationRecord]:
        """The workspace's relations live then, oldest first."""
        records = self._relations_by_workspace.get(workspace, [])
        return page(records, offset, limit)

    def relation(
        self, workspace: str, source: str, relation_type: str, target: str
    ) -> RelationRecord | None:
        """The relation with this identity if it was live then, or None."""
        return self.relation_by_stream(relation_stream(workspace, source, relation_type, target))

    def relations_of(
        self, workspace: str, name: str, direction: Direction = "both"
    ) -> list[RelationRecord]:
        """The relations live then leaving, reaching or touching `name`."""
        ways = ("out", "in") if direction == "both" else (direction,)
        found = {r.stream: r for way in ways for r in self._adjacency.get((workspace, name, way), ())}
        return sorted(found.values(), key=lambda record: record.seq)

    def most_connected(self, workspace: str, limit: int) -> list[tuple[str, int]]:
        """The `limit` names with the most relations live then, and how many, most first."""

        def name_digest(name: str) -> bytes:
            return digest(name.encode("utf-8", "surrogatepass"), 16)

        counts: Counter[str] = Counter()
        for relation in self._relations_by_workspace.get(workspace, ()):
            counts[relation.source] += 1
            if relation.target != relation.source:
                counts[relation.target] += 1
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], name_digest(kv[0])))  # as the live views tie
        return ordered[:limit]

    def context(self, workspace: str) -> ContextRecord | None:
        """The workspace's context then, or None."""
        return self.state.contexts.get(workspace)

    def workspace(self, workspace: str) -> WorkspaceRecord | None:
        """The workspace's totals then, or None."""
        return self.state.workspaces.get(workspace)

    def workspaces(self) -> list[WorkspaceRecord]:
        """Every workspace written to by then, by name."""
        return sorted(self.state.workspaces.values(), key=lambda record: record.name)

    def type_counts(self, workspace: str, kind: bytes) -> dict[str, int]:
        """Entities (ENTITY) or relations (RELATION) per type then."""
        return dict(sorted(
            (type_name, count)
            for (ws, k, type_name), count in self.state.type_counts.items()
            if ws == workspace and k == kind
        ))

    def name_streams(self, workspace: str, name: str) -> tuple[str, ...]:
        """Every entity stream created under `name` by then, oldest first."""
        record = self.state.name_record(workspace, name)
        return () if record is None else record.streams

