"""Random graph histories for the projection tests, with a plain model of what they mean.

`Simulator` turns operations into the events a careful writer would append (skipping
ones that make no sense, such as observations on a missing entity) and keeps its own
model of the resulting graph, written without any projection code.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from chronograph.eventstore import (
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityRestored,
    EntityUpdated,
    Event,
    ObservationsAdded,
    ObservationsDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    StreamWrite,
)
from chronograph.projections import ENTITY, RELATION, Graph, context_stream, relation_stream
from hypothesis import strategies as st

NAMES = ["ada", "bob", "cy", "Dee"]
WORKSPACES = ["default", "lab"]
TYPES = ["person", "project"]
TEXTS = ["likes tea", "Likes TEA", "ships code", "ünïcode ✓", "tea"]

texts = st.lists(st.sampled_from(TEXTS), max_size=3)
relation_types = st.sampled_from(["knows", "uses"])


def operations(sim: Simulator) -> st.SearchStrategy[tuple[Any, ...]]:
    """One operation, mostly on things that exist in `sim`, so most of them write."""
    live = sorted(sim.entities)
    related = sorted(sim.relations)
    spots = st.sampled_from(live) if live else st.tuples(st.sampled_from(WORKSPACES), st.sampled_from(NAMES))
    any_spot = st.tuples(st.sampled_from(WORKSPACES), st.sampled_from(NAMES))
    spot = st.one_of(spots, spots, spots, any_spot)
    pair = spot.flatmap(lambda s: st.tuples(st.just(s), st.sampled_from(
        [n for w, n in live if w == s[0]] or NAMES)))
    relation = st.sampled_from(related) if related else st.nothing()
    choices = [
        spot.flatmap(lambda s: st.tuples(st.just("create"), st.just(s[0]), st.just(s[1]),
                                         st.sampled_from(TYPES), texts)),
        spot.flatmap(lambda s: st.tuples(st.just("add"), st.just(s[0]), st.just(s[1]), texts)),
        spot.flatmap(lambda s: st.tuples(st.just("remove"), st.just(s[0]), st.just(s[1]), texts)),
        spot.flatmap(lambda s: st.tuples(
            st.just("update"), st.just(s[0]), st.just(s[1]), st.none() | st.sampled_from(TYPES),
            st.none() | texts, st.none() | st.dictionaries(st.sampled_from("xy"), st.integers(0, 3)))),
        spot.map(lambda s: ("delete", s[0], s[1])),
        (st.sampled_from(sorted(sim.deleted)) if sim.deleted else any_spot).map(lambda s: ("restore", s[0], s[1])),
        pair.flatmap(lambda p: st.tuples(st.just("relate"), st.just(p[0][0]), st.just(p[0][1]),
                                         relation_types, st.just(p[1]), st.none() | st.floats(0, 1))),
        st.tuples(st.just("context"), st.sampled_from(WORKSPACES), st.none() | st.sampled_from(["plan", "ship"]),
                  st.none() | st.sampled_from(["IN_PROGRESS", "BLOCKED"]), st.none() | texts),
    ]
    if related:
        choices.append(relation.flatmap(lambda k: st.tuples(
            st.just("rerate"), st.just(k[0]), st.just(k[1]), st.just(k[2]), st.just(k[3]), st.floats(0, 1))))
        choices.append(relation.map(lambda k: ("unrelate", *k)))
    return st.one_of(choices)


def draw_history(data: st.DataObject, sim: Simulator, steps: int) -> list[tuple[Any, ...]]:
    """Draw `steps` operations against the evolving `sim` (which decides nothing yet)."""
    preview = copy.deepcopy(sim)
    history = []
    for step in range(steps):
        operation = data.draw(operations(preview), label=f"step {step}")
        preview.decide(operation, 0)
        history.append(operation)
    return history


@dataclass
class Simulator:
    """Decides events for operations and models the graph they produce."""

    position: int = 0
    entities: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    relations: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    name_streams: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    deleted: dict[tuple[str, str], tuple[dict[str, Any], int, int]] = field(default_factory=dict)
    """(workspace, name) -> the entity as it was deleted, its version then and that version's position"""
    counter: int = 0
    _last: dict[str, int] = field(default_factory=dict)
    """stream -> the position of its newest event"""

    def decide(self, operation: tuple[Any, ...], now: int) -> list[StreamWrite]:
        """The writes for `operation` at time `now`; the model already reflects them."""
        kind, ws, *rest = operation
        staged: list[tuple[str, Event]] = []
        method = getattr(self, "_" + kind)
        method(staged, ws, now, *rest)
        return [StreamWrite(stream, [event]) for stream, event in staged]

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the modelled graph, in the shape of `snapshot(graph)`."""
        return copy.deepcopy(model_view(self))

    # --- operations -------------------------------------------------------------------------

    def _emit(self, staged: list[tuple[str, Event]], stream: str, event: Event) -> int:
        self.position += 1
        self._last[stream] = self.position
        self.versions[stream] = self.versions.get(stream, 0) + 1
        staged.append((stream, event))
        return self.versions[stream]

    def _create(self, staged, ws, now, name, entity_type, observations):  # type: ignore[no-untyped-def]
        if (ws, name) in self.entities:
            return
        self.counter += 1
        stream = f"entity-{self.counter}"
        observations = list(dict.fromkeys(observations))
        event = EntityCreated(workspace=ws, name=name, entity_type=entity_type,
                              observations=tuple(observations))
        version = self._emit(staged, stream, event)
        self.entities[(ws, name)] = dict(
            stream=stream, type=entity_type, observations=observations, metadata={},
            version=version, created=now, updated=now, seq=self.position,
        )
        self.name_streams.setdefault((ws, name), []).append(stream)

    def _add(self, staged, ws, now, name, observations):  # type: ignore[no-untyped-def]
        entity = self.entities.get((ws, name))
        new = [o for o in dict.fromkeys(observations) if entity and o not in entity["observations"]]
        if entity is None or not new:
            return
        entity["version"] = self._emit(staged, entity["stream"], ObservationsAdded(observations=tuple(new)))
        entity["observations"] += new
        entity["updated"] = now

    def _remove(self, staged, ws, now, name, observations):  # type: ignore[no-untyped-def]
        entity = self.entities.get((ws, name))
        gone = [o for o in dict.fromkeys(observations) if entity and o in entity["observations"]]
        if entity is None or not gone:
            return
        event = ObservationsDeleted(observations=tuple(gone))
        entity["version"] = self._emit(staged, entity["stream"], event)
        entity["observations"] = [o for o in entity["observations"] if o not in gone]
        entity["updated"] = now

    def _update(self, staged, ws, now, name, entity_type, observations, metadata):  # type: ignore[no-untyped-def]
        entity = self.entities.get((ws, name))
        if entity is None or (entity_type, observations, metadata) == (None, None, None):
            return
        changes: dict[str, Any] = {}
        if entity_type is not None:
            changes["entity_type"] = entity["type"] = entity_type
        if observations is not None:
            entity["observations"] = list(dict.fromkeys(observations))
            changes["observations"] = tuple(entity["observations"])
        if metadata is not None:
            changes["metadata"] = entity["metadata"] = metadata
        entity["version"] = self._emit(staged, entity["stream"], EntityUpdated(**changes))
        entity["updated"] = now

    def _delete(self, staged, ws, now, name):  # type: ignore[no-untyped-def]
        entity = self.entities.pop((ws, name), None)
        if entity is None:
            return
        for key in [k for k in self.relations if k[0] == ws and name in (k[1], k[3])]:
            self._unrelate(staged, *key[:1], now, *key[1:])
        self.deleted[(ws, name)] = (copy.deepcopy(entity), entity["version"], self._last[entity["stream"]])
        self._emit(staged, entity["stream"], EntityDeleted())

    def _restore(self, staged, ws, now, name):  # type: ignore[no-untyped-def]
        """A revert of the newest deleted entity called `name` to its last version, while the name is free."""
        if (ws, name) in self.entities or (ws, name) not in self.deleted:
            return
        entity, version, position = self.deleted.pop((ws, name))
        event = EntityRestored(workspace=ws, name=name, entity_type=entity["type"],
                               observations=tuple(entity["observations"]), metadata=entity["metadata"],
                               reverted_to=version, restores=position, created_at=entity["created"])
        entity.update(version=self._emit(staged, entity["stream"], event), updated=now, seq=self.position)
        self.entities[(ws, name)] = entity

    def _relate(self, staged, ws, now, source, relation_type, target, confidence):  # type: ignore[no-untyped-def]
        key = (ws, source, relation_type, target)
        if key in self.relations or (ws, source) not in self.entities or (ws, target) not in self.entities:
            return
        stream = relation_stream(ws, source, relation_type, target)
        event = RelationCreated(workspace=ws, source=source, target=target,
                                relation_type=relation_type, confidence=confidence)
        version = self._emit(staged, stream, event)
        self.relations[key] = dict(confidence=confidence, metadata={}, version=version,
                                   created=now, updated=now, seq=self.position)

    def _rerate(self, staged, ws, now, source, relation_type, target, confidence):  # type: ignore[no-untyped-def]
        relation = self.relations.get((ws, source, relation_type, target))
        if relation is None:
            return
        stream = relation_stream(ws, source, relation_type, target)
        relation["version"] = self._emit(staged, stream, RelationUpdated(confidence=confidence))
        relation["confidence"] = confidence
        relation["updated"] = now

    def _unrelate(self, staged, ws, now, source, relation_type, target):  # type: ignore[no-untyped-def]
        if self.relations.pop((ws, source, relation_type, target), None) is not None:
            self._emit(staged, relation_stream(ws, source, relation_type, target), RelationDeleted())

    def _context(self, staged, ws, now, task, status, steps):  # type: ignore[no-untyped-def]
        changes = {k: v for k, v in
                   (("active_task", task), ("status", status), ("next_steps", steps)) if v is not None}
        if not changes:
            return
        if "next_steps" in changes:
            changes["next_steps"] = tuple(changes["next_steps"])
        version = self._emit(staged, context_stream(ws), ContextUpdated(workspace=ws, **changes))
        context = self.contexts.setdefault(ws, {})
        context.update(changes, version=version, updated=now)


def model_view(sim: Simulator) -> dict[str, Any]:
    """The model as plain data, workspace by workspace."""
    view: dict[str, Any] = {}
    for ws in WORKSPACES:
        entities = sorted(
            ((name, e) for (w, name), e in sim.entities.items() if w == ws), key=lambda p: p[1]["seq"]
        )
        relations = sorted(
            ((k, r) for k, r in sim.relations.items() if k[0] == ws), key=lambda p: p[1]["seq"]
        )
        ctx = sim.contexts.get(ws)
        view[ws] = {
            "entities": [
                (n, e["type"], tuple(e["observations"]), e["metadata"], e["version"],
                 e["created"], e["updated"], e["stream"])
                for n, e in entities
            ],
            "relations": [
                (k[1], k[2], k[3], r["confidence"], r["metadata"], r["version"], r["created"], r["updated"])
                for k, r in relations
            ],
            "context": None if ctx is None else (
                ctx.get("active_task"), ctx.get("status"), ctx.get("next_steps"),
                ctx["version"], ctx["updated"],
            ),
            "entity_types": _count(e["type"] for (w, _), e in sim.entities.items() if w == ws),
            "relation_types": _count(k[2] for k in sim.relations if k[0] == ws),
            "names": {n: tuple(s) for (w, n), s in sim.name_streams.items() if w == ws},
            "touching": {
                n: [(k[1], k[2], k[3]) for k, _ in relations if n in (k[1], k[3])] for n in NAMES
            },
        }
    return view


def graph_view(graph: Graph) -> dict[str, Any]:
    """What a `Graph` (views or time travel) says, in the shape of `model_view`."""
    view: dict[str, Any] = {}
    for ws in WORKSPACES:
        ctx = graph.context(ws)
        view[ws] = {
            "entities": [
                (e.name, e.entity_type, tuple(e.observations), e.metadata, e.version, e.created_at,
                 e.updated_at, e.stream)
                for e in graph.entities(ws)
            ],
            "relations": [
                (r.source, r.relation_type, r.target, r.confidence, r.metadata, r.version,
                 r.created_at, r.updated_at)
                for r in graph.relations(ws)
            ],
            "context": None if ctx is None else (
                ctx.active_task, ctx.status, ctx.next_steps, ctx.version, ctx.updated_at
            ),
            "entity_types": graph.type_counts(ws, ENTITY),
            "relation_types": graph.type_counts(ws, RELATION),
            "names": {n: graph.name_streams(ws, n) for n in NAMES if graph.name_streams(ws, n)},
            "touching": {
                n: [(r.source, r.relation_type, r.target) for r in graph.relations_of(ws, n)]
                for n in NAMES
            },
        }
    return view


def _count(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return dict(sorted(counts.items()))
