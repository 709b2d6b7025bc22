"""The graph folded into dictionaries: the state behind rebuilds and time travel.

Records are kept as the fold left them (saving is free); counts and totals are derived
once from what is live, rather than kept up to date event by event.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import Any

from chronograph.eventstore import Envelope, EventLog
from chronograph.projections.fold import apply_all
from chronograph.projections.keys import ENTITY, RELATION
from chronograph.projections.records import ContextRecord, EntityRecord, NameRecord, RelationRecord, WorkspaceRecord

__all__ = ["DictState", "PresentSets", "fold_log", "paused_gc"]


_pausing = threading.Lock()
_paused = 0
"""Threads inside `paused_gc` now."""
_resume = False
"""Whether the collector was on when the first of them paused it."""


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cycle collector for a bulk fold.

    A fold allocates millions of objects that live on and form no cycles; the
    collector would rescan them over and over for nothing (a fifth of the fold's time).
    Threads pause it together: it runs again when the last of them is done (if it ran
    before the first began), never left off by two that overlapped.
    """
    global _paused, _resume
    with _pausing:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _pausing:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()


_NO_METADATA: dict[str, Any] = {}
_NO_VALIDITY: dict[str, tuple[int | None, int | None]] = {}


class PresentSets:
    """Each entity's observations as a set the fold may add to, kept between events while the
    entity keeps that very list (the fold appends to it; any other change replaces it): adding
    to a big entity then costs what is added, not the entity's size."""

    def __init__(self) -> None:
        self._sets: dict[str, tuple[list[str], set[str]]] = {}

    def __call__(self, entity: EntityRecord) -> set[str]:
        known = self._sets.get(entity.stream)
        if known is not None and known[0] is entity.observations:
            return known[1]
        present = set(entity.observations)
        self._sets[entity.stream] = (entity.observations, present)
        return present

    def drop(self, stream: str) -> None:
        """Forget the set of `stream` (its entity left)."""
        self._sets.pop(stream, None)


class DictState:
    """Everything the views hold, in dictionaries; `position` is the last event folded."""

    from_start = True  # a rebuild's, an as-of fold's, a snapshot's (see `fold.FIRST`)

    def __init__(self) -> None:
        self.entities: dict[str, EntityRecord] = {}
        self.relations: dict[str, RelationRecord] = {}
        self.contexts: dict[str, ContextRecord] = {}
        self._names: dict[tuple[str, str], list[str | None]] = {}
        """(workspace, name) -> [live stream or None, every stream ever, oldest first...]"""
        self._seen: dict[str, None] = {}
        self._present = PresentSets()
        self._strings: dict[str, str] = {}
        """Each workspace, name and type once: a relation's ends share its entities' names (at a
        million entities, a third of the fold's memory was copies of the same few strings)."""
        self.position = 0
        # Plain dictionary lookups, bound once: the fold calls these for most events.
        self.get_entity = self.entities.get  # type: ignore[method-assign,assignment]
        self.get_relation = self.relations.get  # type: ignore[method-assign,assignment]
        self.get_context = self.contexts.get  # type: ignore[method-assign,assignment]

    def fold(self, envelopes: Sequence[Envelope]) -> DictState:
        """Fold a batch of envelopes in order and return self."""
        if envelopes:
            self.__dict__.pop("derived", None)
            apply_all(self, envelopes)
            self.position = envelopes[-1].position
        return self

    # --- State protocol -------------------------------------------------------------------

    def get_entity(self, stream: str) -> EntityRecord | None:
        return self.entities.get(stream)

    def live_entity(self, workspace: str, name: str) -> EntityRecord | None:
        known = self._names.get((workspace, name))
        return None if known is None or known[0] is None else self.entities[known[0]]

    def add_entity(self, entity: EntityRecord) -> None:
        share = self._strings.setdefault
        entity.workspace, entity.name = share(entity.workspace, entity.workspace), share(entity.name, entity.name)
        entity.entity_type = share(entity.entity_type, entity.entity_type)
        if not entity.metadata:  # the fold replaces these dictionaries, never changes one in place
            entity.metadata = _NO_METADATA
        if not entity.validity:
            entity.validity = _NO_VALIDITY
        self.entities[entity.stream] = entity
        key = (entity.workspace, entity.name)
        known = self._names.get(key)
        if known is None:
            self._names[key] = [entity.stream, entity.stream]
        else:
            known[0] = entity.stream
            if entity.stream not in known[1:]:  # a restored entity keeps its stream
                known.append(entity.stream)
        self._seen[entity.workspace] = None

    def changed_entity(self, entity: EntityRecord, old_type: str) -> None:
        pass  # the record is the state

    def remove_entity(self, entity: EntityRecord) -> None:
        del self.entities[entity.stream]
        self._present.drop(entity.stream)
        known = self._names[(entity.workspace, entity.name)]
        if known[0] == entity.stream:
            known[0] = None

    def present(self, entity: EntityRecord) -> set[str]:
        return self._present(entity)

    def get_relation(self, stream: str) -> RelationRecord | None:
        return self.relations.get(stream)

    def add_relation(self, relation: RelationRecord) -> None:
        share = self._strings.setdefault
        relation.workspace = share(relation.workspace, relation.workspace)
        relation.source = share(relation.source, relation.source)
        relation.target = share(relation.target, relation.target)
        relation.relation_type = share(relation.relation_type, relation.relation_type)
        if not relation.metadata:
            relation.metadata = _NO_METADATA
        self.relations[relation.stream] = relation
        self._seen[relation.workspace] = None

    def changed_relation(self, relation: RelationRecord) -> None:
        pass

    def remove_relation(self, relation: RelationRecord) -> None:
        del self.relations[relation.stream]

    def get_context(self, workspace: str) -> ContextRecord | None:
        return self.contexts.get(workspace)

    def save_context(self, context: ContextRecord) -> None:
        self.contexts[context.workspace] = context
        self._seen[context.workspace] = None

    def saw_workspace(self, workspace: str) -> None:
        self._seen[workspace] = None

    def forget_entity(self, stream: str, workspace: str) -> None:
        entity = self.entities.get(stream)
        if entity is not None:
            for relation in [r for r in self.relations.values()
                             if r.workspace == workspace and entity.name in (r.source, r.target)]:
                self.remove_relation(relation)
            self.remove_entity(entity)
        for key, known in list(self._names.items()):
            if key[0] == workspace and stream in known[1:]:
                rest = [s for s in known[1:] if s != stream]
                live = None if known[0] == stream else known[0]
                if rest or live is not None:
                    self._names[key] = [live, *rest]
                else:
                    del self._names[key]

    @property
    def size(self) -> int:
        """How many records the state holds (entities, relations, contexts)."""
        return len(self.entities) + len(self.relations) + len(self.contexts)

    # --- derived views ----------------------------------------------------------------------

    def names(self) -> dict[tuple[str, str], NameRecord]:
        """(workspace, name) -> every entity stream created under the name, and the live one."""
        return {key: NameRecord(known[0], tuple(known[1:])) for key, known in self._names.items()}  # type: ignore[arg-type]

    def name_record(self, workspace: str, name: str) -> NameRecord | None:
        """The NameRecord of one name, or None if it was never used."""
        known = self._names.get((workspace, name))
        return None if known is None else NameRecord(known[0], tuple(known[1:]))  # type: ignore[arg-type]

    @cached_property
    def derived(self) -> tuple[dict[str, WorkspaceRecord], dict[tuple[str, bytes, str], int]]:
        """(workspace totals, live counts per (workspace, kind, type)), computed once."""
        counts: dict[tuple[str, bytes, str], int] = {}
        entities = dict.fromkeys(self._seen, 0)
        relations = dict.fromkeys(self._seen, 0)
        for entity in self.entities.values():
            key = (entity.workspace, ENTITY, entity.entity_type)
            counts[key] = counts.get(key, 0) + 1
            entities[entity.workspace] += 1
        for relation in self.relations.values():
            key = (relation.workspace, RELATION, relation.relation_type)
            counts[key] = counts.get(key, 0) + 1
            relations[relation.workspace] += 1
        totals = {ws: WorkspaceRecord(ws, entities[ws], relations[ws]) for ws in self._seen}
        return totals, counts

    @property
    def workspaces(self) -> dict[str, WorkspaceRecord]:
        """Every workspace written to, with its totals."""
        return self.derived[0]

    @property
    def type_counts(self) -> dict[tuple[str, bytes, str], int]:
        """Live entities and relations per (workspace, kind, type)."""
        return self.derived[1]


def fold_log(log: EventLog, to_position: int | None = None) -> DictState:
    """Fold the log from position 1 to `to_position` (default: its head) into dictionaries."""
    state = DictState()
    with log.read() as reader, paused_gc():
        last = reader.head() if to_position is None else min(to_position, reader.head())
        for batch in reader.batches(1, last, batch_size=4096, slim=True):
            state.fold(batch)
    return state
