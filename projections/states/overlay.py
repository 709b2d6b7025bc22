"""An overlay: the fold's `State` over the live views, changed in dictionaries, the views untouched.

A command decides what to write by folding each event it decides into an overlay of
the views it read, with the very envelope the log will store: it sees its own events
exactly as the views will once they are appended, through the one fold. Records read
from the views are copied before the fold changes them; nothing reaches the views until
the events are appended and folded inline.
"""

from __future__ import annotations

from chronograph.projections.records import ContextRecord, EntityRecord, RelationRecord, copy_record
from chronograph.projections.states.graph import Direction
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.streams import relation_stream

__all__ = ["Overlay"]


class Overlay:
    """The live views of `base` with the changes folded into this overlay on top."""

    from_start = False  # over the live views (a `Segment` is over a rebuild's)

    def __init__(self, base: LmdbState) -> None:
        self.base = base
        self._entities: dict[str, EntityRecord | None] = {}
        """stream -> the entity as changed here (None: removed here)"""
        self._names: dict[tuple[str, str], str | None] = {}
        """(workspace, name) -> the stream live under it after the changes here"""
        self._new_streams: dict[tuple[str, str], list[str]] = {}
        self._relations: dict[str, RelationRecord | None] = {}
        self._contexts: dict[str, ContextRecord] = {}

    # --- State protocol ---------------------------------------------------------------------

    def get_entity(self, stream: str) -> EntityRecord | None:
        if stream not in self._entities:
            found = self.base.get_entity(stream)
            self._entities[stream] = None if found is None else copy_record(found)
        return self._entities[stream]

    def live_entity(self, workspace: str, name: str) -> EntityRecord | None:
        key = (workspace, name)
        if key in self._names:
            stream = self._names[key]
            return None if stream is None else self.get_entity(stream)
        found = self.base.live_entity(workspace, name)
        if found is None:
            return None
        if found.stream not in self._entities:  # the record just read, not read again by stream
            self._entities[found.stream] = copy_record(found)
        return self._entities[found.stream]

    def add_entity(self, entity: EntityRecord) -> None:
        self._entities[entity.stream] = entity
        key = (entity.workspace, entity.name)
        self._names[key] = entity.stream
        self._new_streams.setdefault(key, []).append(entity.stream)

    def changed_entity(self, entity: EntityRecord, old_type: str) -> None:
        self._entities[entity.stream] = entity

    def remove_entity(self, entity: EntityRecord) -> None:
        self._entities[entity.stream] = None
        key = (entity.workspace, entity.name)
        if self._names.get(key, entity.stream) == entity.stream:
            self._names[key] = None

    def present(self, entity: EntityRecord) -> set[str]:
        return set(entity.observations)

    def get_relation(self, stream: str) -> RelationRecord | None:
        if stream not in self._relations:
            found = self.base.get_relation(stream)
            self._relations[stream] = None if found is None else copy_record(found)
        return self._relations[stream]

    def add_relation(self, relation: RelationRecord) -> None:
        self._relations[relation.stream] = relation

    def changed_relation(self, relation: RelationRecord) -> None:
        self._relations[relation.stream] = relation

    def remove_relation(self, relation: RelationRecord) -> None:
        self._relations[relation.stream] = None

    def get_context(self, workspace: str) -> ContextRecord | None:
        if workspace not in self._contexts:
            found = self.base.get_context(workspace)
            if found is None:
                return None
            self._contexts[workspace] = copy_record(found)
        return self._contexts[workspace]

    def save_context(self, context: ContextRecord) -> None:
        self._contexts[context.workspace] = context

    def saw_workspace(self, workspace: str) -> None:
        pass  # only erasures say so, and no command decides one: the views note it inline

    def forget_entity(self, stream: str, workspace: str) -> None:
        entity = self.get_entity(stream)  # names are the views' business: forgetting purged them inline
        if entity is not None:
            for relation in self.relations_of(workspace, entity.name):
                self.remove_relation(relation)
            self.remove_entity(entity)

    # --- the questions commands ask ---------------------------------------------------------

    def entity(self, workspace: str, name: str) -> EntityRecord | None:
        """The live entity called `name`, as changed here."""
        return self.live_entity(workspace, name)

    def has_entity(self, workspace: str, name: str) -> bool:
        """Whether an entity called `name` is live, as changed here (the entity not decoded)."""
        key = (workspace, name)
        if key in self._names:
            return self._names[key] is not None
        return self.base.has_entity(workspace, name)

    def restored_since(self, workspace: str, position: int, created_by: int) -> list[str]:
        """`LmdbGraph.restored_since`, as changed here."""
        found = [stream for stream in self.base.restored_since(workspace, position, created_by)
                 if stream not in self._entities]
        found += [entity.stream for entity in self._entities.values() if entity is not None and
                  entity.workspace == workspace and entity.seq > position and entity.created_at <= created_by]
        return found

    def relation(self, workspace: str, source: str, relation_type: str, target: str) -> RelationRecord | None:
        """The live relation with this identity, as changed here."""
        return self.get_relation(relation_stream(workspace, source, relation_type, target))

    def relations_of(self, workspace: str, name: str, direction: Direction = "both") -> list[RelationRecord]:
        """The live relations touching `name`, as changed here, oldest first."""
        def touches(relation: RelationRecord | None) -> bool:  # as changed here, which may have moved it
            return relation is not None and relation.workspace == workspace and (
                (direction != "in" and relation.source == name) or (direction != "out" and relation.target == name))

        found: dict[str, RelationRecord] = {}
        for record in self.base.relations_of(workspace, name, direction):
            current = self.get_relation(record.stream)
            if current is not None and touches(current):
                found[current.stream] = current
        for relation in self._relations.values():
            if relation is not None and relation.stream not in found and touches(relation):
                found[relation.stream] = relation
        return sorted(found.values(), key=lambda record: record.seq)

    def context(self, workspace: str) -> ContextRecord | None:
        """The workspace's context, as changed here."""
        return self.get_context(workspace)

    def name_streams(self, workspace: str, name: str) -> tuple[str, ...]:
        """Every entity stream ever created under `name`, those created here included."""
        known = self.base.name_streams(workspace, name)
        new = [s for s in self._new_streams.get((workspace, name), ()) if s not in known]
        return (*known, *new)

