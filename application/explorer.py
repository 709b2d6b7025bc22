"""What the graph explorer (the web page) asks: the core's answers in the shapes the page draws.

Not tools: the page is an adapter over the core like the MCP server, and reads only, for a
principal: each answer checks its read grant on the workspace first (the core's check, as
the tools'), and the list of workspaces shows only the readable ones. A view
of the graph is a *neighbourhood*, never the whole of a big graph: the entities a search
finds (with those that relate two or more of them, marked `bridge`), the ones the page
already shows, or the most connected ones, with the relations
among them, as of any position of the log (from the snapshots, as time travel does) and
for any valid time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from weakref import WeakKeyDictionary

import msgspec
from chronograph.application.core.audit import AuditOut
from chronograph.application.core.history import HistoryOut
from chronograph.application.core.search import SearchOut
from chronograph.application.engine.outputs import entity_out, relation_out
from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Principal
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError, NotFoundError
from chronograph.eventstore import LogReader, RelationCreated, clock
from chronograph.projections import (
    ENTITY,
    RELATION,
    EntityRecord,
    Graph,
    RelationRecord,
    entity_as_of,
    position_of,
    relation_as_of,
    stream_history,
)

__all__ = ["LIMIT", "audit", "entity_page", "graph", "overview"]

LIMIT = 80
"""Entities a view shows at most (the page expands from there)."""


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


def overview(memory: Memory, workspace: str, as_of: int | str | None = None, *,
             principal: Principal = LOCAL_PRINCIPAL) -> dict[str, Any]:
    """The workspaces `principal` may read, this one's counts per type as of `as_of` (None: now;
    the legend under a graph shown as it was counts what was there then), and the log's extent
    (for the slider).

    Raises:
        ForbiddenError: If `principal` may not read `workspace`.
        InvalidArgumentsError: If `as_of` is not a moment.
    """
    principal.check(workspace, "read", tool="explorer overview")
    with memory.lock, memory.timeline.at("explorer", msgspec.UNSET if as_of is None else as_of) as moment:
        graph, log = moment.graph, moment.log
        head = log.head()
        first = log.get(1) if head else None
        totals = graph.workspace(workspace)
        return {
            "workspace": workspace,
            "position": head if moment.position is None else moment.position,
            "workspaces": [{"name": w.name, "entities": w.entities, "relations": w.relations}
                           for w in graph.workspaces() if principal.may(w.name, "read")],
            "entities": 0 if totals is None else totals.entities,
            "relations": 0 if totals is None else totals.relations,
            "entityTypes": graph.type_counts(workspace, ENTITY),
            "relationTypes": graph.type_counts(workspace, RELATION),
            "head": head,
            "firstRecordedAt": clock.isoformat(first.recorded_at) if first else None,
            "lastRecordedAt": clock.isoformat(log.last_recorded_at()) if head else None,
            "store": memory.log.location,
        }


def graph(
    memory: Memory,
    workspace: str,
    *,
    query: str | None = None,
    names: list[str] | None = None,
    around: str | None = None,
    as_of: int | str | None = None,
    valid_at: str | None = None,
    limit: int = LIMIT,
    principal: Principal = LOCAL_PRINCIPAL,
) -> dict[str, Any]:
    """A neighbourhood of the graph as of `as_of` (None: now): the entities called `names`, or
    `around` one entity and its neighbours, or those a search for `query` finds, or else the
    most connected; with every relation among them, and each entity's degree.

    Raises:
        ForbiddenError: If `principal` may not read `workspace`.
        InvalidArgumentsError: If `as_of` or `valid_at` is not a moment.
    """
    principal.check(workspace, "read", tool="explorer graph")
    if names is not None and as_of is not None:
        return _past_neighbourhood(memory, workspace, names, as_of, valid_at, limit)
    with memory.lock, memory.timeline.at("explorer", as_of if as_of is not None else msgspec.UNSET) as moment:
        view = moment.graph
        hits: set[str] | None = None
        if names is not None:
            chosen = [e for n in dict.fromkeys(names) if (e := view.entity(workspace, n)) is not None]
        elif around is not None:
            centre = view.entity(workspace, around)
            if centre is None:
                raise NotFoundError(f"Entity with name {around} not found")
            near = [r.target if r.source == around else r.source for r in view.relations_of(workspace, around)]
            chosen = [centre, *(e for n in dict.fromkeys(near) if (e := view.entity(workspace, n)) is not None)]
        elif query:
            found = memory.read("search_nodes", {"query": query, "workspace": workspace, "limit": limit,
                                                 **({"asOf": as_of} if as_of is not None else {})},
                                principal=principal)
            assert isinstance(found, SearchOut)
            chosen = [e for h in found.entities if (e := view.entity(workspace, h.name)) is not None]
            hits = {e.name for e in chosen}
            chosen += _bridges(view, workspace, chosen, limit - len(chosen))
        else:
            chosen = _most_connected(view, workspace, limit)
        chosen = chosen[:limit] if names is None else chosen
        shown = {e.name for e in chosen}
        relations: dict[str, RelationRecord] = {}
        degree: Counter[str] = Counter()
        for entity in chosen:
            for relation in view.relations_of(workspace, entity.name):
                degree[entity.name] += 1
                if relation.source in shown and relation.target in shown:
                    relations[relation.stream] = relation
        at_us = clock.parse_iso(valid_at) if valid_at else None
        return {
            "position": moment.position if moment.position is not None else moment.log.head(),
            "head": moment.log.head(),
            "entities": [{**_plain(entity_out(e, metadata=True)), "degree": degree[e.name], "valid": _valid(e, at_us),
                          **({"bridge": True} if hits is not None and e.name not in hits else {})}
                         for e in chosen],
            "relations": [{**_plain(relation_out(r, metadata=True)), "valid": _valid_relation(r, at_us)}
                          for r in relations.values()],
        }


def _bridges(view: Graph, workspace: str, hits: list[EntityRecord], room: int) -> list[EntityRecord]:
    """The entities a search did not find that relate two or more of its hits (most first, up to
    `room`): what shows how the hits hang together, where few of them relate directly."""
    found = {e.name for e in hits}
    touching: Counter[str] = Counter()
    for hit in hits:
        near = {r.target if r.source == hit.name else r.source for r in view.relations_of(workspace, hit.name)}
        touching.update(n for n in near if n not in found)
    ranked = [name for name, count in touching.most_common() if count >= 2][:max(room, 0)]
    return [e for name in ranked if (e := view.entity(workspace, name)) is not None]


class RelationIndex:
    """Every relation stream that ever named an entity, by (workspace, name): what a past
    neighbourhood needs, since the live views know only the relations alive now. Kept in
    memory per store, caught up from the log (a scan of the events not seen yet)."""

    def __init__(self) -> None:
        self.position = 0
        self.erasures = 0
        self.streams: dict[tuple[str, str], set[str]] = {}

    def current(self, log: LogReader) -> RelationIndex:
        """Brought up to the head of `log` (from scratch after an erasure)."""
        if log.erasures() != self.erasures:
            self.position, self.erasures, self.streams = 0, log.erasures(), {}
        head = log.head()
        for batch in log.batches(self.position + 1, head, batch_size=4096, slim=True):
            for envelope in batch:
                event = envelope.event
                if isinstance(event, RelationCreated):
                    for end in (event.source, event.target):
                        self.streams.setdefault((event.workspace, end), set()).add(envelope.stream)
        self.position = head
        return self


_indexes: WeakKeyDictionary[Memory, RelationIndex] = WeakKeyDictionary()


def _past_neighbourhood(
    memory: Memory, workspace: str, names: list[str], as_of: int | str, valid_at: str | None, limit: int
) -> dict[str, Any]:
    """The entities called `names` as they stood at `as_of`, the relations alive then among them
    and to their neighbours then (who join the view, up to `limit`): each folded from its own
    streams, so the cost is the neighbourhood's, not the graph's."""
    with memory.lock, memory.timeline.at("explorer") as moment:
        log, live = moment.log, moment.live
        try:
            position = position_of(log, as_of)
        except ValueError as error:
            raise InvalidArgumentsError("explorer", f"asOf: {error}") from None
        index = _indexes.setdefault(memory, RelationIndex()).current(log)
        entities: dict[str, EntityRecord] = {}

        def entity(name: str) -> EntityRecord | None:
            if name not in entities:
                found = entity_as_of(log, live, workspace, name, position)
                if found is None:
                    return None
                entities[name] = found
            return entities[name]

        for name in dict.fromkeys(names):
            entity(name)
        relations: dict[str, RelationRecord] = {}
        degree: Counter[str] = Counter()
        for name in list(entities):
            for stream in sorted(index.streams.get((workspace, name), ())):
                relation = relations.get(stream) or relation_as_of(log, stream, position)
                if relation is None:
                    continue
                other = relation.target if relation.source == name else relation.source
                if other not in entities and (len(entities) >= limit or entity(other) is None):
                    degree[name] += stream not in relations
                    continue
                if stream not in relations:
                    degree[relation.source] += 1
                    degree[relation.target] += 1 if relation.target != relation.source else 0
                relations[stream] = relation
        at_us = clock.parse_iso(valid_at) if valid_at else None
        return {
            "position": position,
            "head": log.head(),
            "entities": [{**_plain(entity_out(e, metadata=True)), "degree": degree[e.name], "valid": _valid(e, at_us)}
                         for e in entities.values()],
            "relations": [{**_plain(relation_out(r, metadata=True)), "valid": _valid_relation(r, at_us)}
                          for r in relations.values()],
        }


def _most_connected(view: Graph, workspace: str, limit: int) -> list[EntityRecord]:
    chosen = [e for n, _ in view.most_connected(workspace, limit) if (e := view.entity(workspace, n)) is not None]
    if len(chosen) < limit:  # a graph with few relations: its oldest entities fill the view
        seen = {e.name for e in chosen}
        chosen += [e for e in view.entities(workspace, 0, limit) if e.name not in seen][: limit - len(chosen)]
    return chosen


def _valid(entity: EntityRecord, at_us: int | None) -> dict[str, bool]:
    """Per observation with a valid time: whether it holds at `at_us` (now when None)."""
    moment = clock.now_us() if at_us is None else at_us
    return {o: (start is None or start <= moment) and (end is None or moment < end)
            for o, (start, end) in entity.validity.items()}


def _valid_relation(relation: RelationRecord, at_us: int | None) -> bool:
    moment = clock.now_us() if at_us is None else at_us
    return (relation.valid_from is None or relation.valid_from <= moment) and (
        relation.valid_until is None or moment < relation.valid_until)


def entity_page(memory: Memory, workspace: str, name: str, limit: int = 500, *, relations_limit: int = 200,
                principal: Principal = LOCAL_PRINCIPAL) -> dict[str, Any]:
    """The newest `limit` versions of every entity ever called `name` (who, when, which call, what
    changed, the state after), oldest first, and the history of the first `relations_limit` relations
    that ever named it; `more` and `moreRelations` say when there were others.

    Raises:
        ForbiddenError: If `principal` may not read `workspace`.
        NotFoundError: If no entity was ever called `name` in the workspace.
    """
    history = memory.read("get_entity_history", {"name": name, "workspace": workspace, "limit": limit + 1,
                                                 "order": "newest"}, principal=principal)
    assert isinstance(history, HistoryOut)
    versions = _plain(history.versions)[::-1]
    more = len(versions) > limit or history.next_cursor is not msgspec.UNSET
    before: dict[str, Any] | None = None
    if len(versions) > limit:  # the one before the first shown: what that one changed is told against it
        before, versions = versions[0]["state"], versions[1:]
    for version in versions:
        version["diff"] = _change(before, version["state"])
        changes = version["changes"]
        if version["eventType"] == "entity_restored":  # back from a deletion: say so, and from where
            version["diff"] = {**version["diff"], "created": False, "restored": changes.get("revertedTo"),
                               "restores": changes.get("restores")}
        elif version["eventType"] == "entity_merged":
            version["diff"] = {"merged": changes.get("into")}
        before = version["state"] or before
    relations: list[dict[str, Any]] = []
    with memory.lock, memory.timeline.at("explorer") as moment:
        streams = moment.live.name_streams(workspace, name)
        first = min((p for s in streams for p in moment.log.positions(s)[:1]), default=1)
        found: dict[str, None] = {}
        for envelope in moment.log.mentions([msgspec.msgpack.encode(name)], first):
            event = envelope.event
            if isinstance(event, RelationCreated) and event.workspace == workspace and name in (event.source,
                                                                                                event.target):
                found.setdefault(envelope.stream)
        for stream in list(found)[:relations_limit]:
            relations.append({"versions": _plain([_version(v) for v in stream_history(moment.log, stream)])})
        live = moment.graph.entity(workspace, name)
    return {"name": name, "live": live is not None, "versions": versions, "relations": relations, "more": more,
            "moreRelations": len(found) > relations_limit}


def _version(version: Any) -> dict[str, Any]:
    state = version.state
    return {"position": version.position, "version": version.version, "eventType": version.event_type,
            "recordedAt": clock.isoformat(version.recorded_at), "actor": version.actor,
            "changes": version.changes,
            "state": None if state is None else _plain(
                relation_out(state, metadata=True) if isinstance(state, RelationRecord)
                else entity_out(state, metadata=True))}


def _change(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """What a version changed, readably: observations added and removed, the type, the name,
    the metadata keys."""
    if after is None:
        return {"deleted": True}
    if before is None:
        return {"created": True, "added": after.get("observations", [])}
    old, new = before.get("observations", []), after.get("observations", [])
    change: dict[str, Any] = {"added": [o for o in new if o not in old], "removed": [o for o in old if o not in new]}
    for field in ("name", "entityType"):
        if before.get(field) != after.get(field):
            change[field] = [before.get(field), after.get(field)]
    old_meta, new_meta = before.get("metadata") or {}, after.get("metadata") or {}
    keys = sorted(k for k in {*old_meta, *new_meta} if old_meta.get(k) != new_meta.get(k))
    if keys:
        change["metadata"] = keys
    return change


def audit(memory: Memory, workspace: str, *, actor: str | None = None, session: str | None = None,
          types: list[str] | None = None, since: str | None = None, until: str | None = None,
          after: int | None = None, limit: int = 100, by_principal: str | None = None,
          principal: Principal = LOCAL_PRINCIPAL) -> dict[str, Any]:
    """The audit feed of `workspace` as `principal` may read it, newest first, filtered (`by_principal`:
    the events of one principal); `after` gives only what came after a position, oldest first (the
    page polls with it to follow writes as they happen, from `through`: the log's end when the
    answer was read, so that a filter nothing new matches does not read the same events again at
    every poll, or its last event when there may be more).

    Raises:
        ForbiddenError: If `principal` may not read `workspace`.
        InvalidArgumentsError: If a filter is malformed.
    """
    arguments: dict[str, Any] = {"workspace": workspace, "limit": limit}
    for key, value in (("actor", actor), ("principal", by_principal), ("eventTypes", types), ("since", since),
                       ("until", until)):
        if value:
            arguments[key] = value
    if after is not None:  # following (from 0 too): oldest first, so that a burst past `limit` goes on next
        arguments["afterPosition"], arguments["order"] = after, "oldest"
    through = memory.log.head()  # what this answer looked at: the page follows from there, matches or not
    events: list[dict[str, Any]] = []
    while True:  # a session is part of an actor's text, filtered here: pages are read until `limit` match
        answer = memory.read("get_audit_log", arguments, principal=principal)
        assert isinstance(answer, AuditOut)
        events += [e for e in _plain(answer.events) if not session or session in e["actor"]]
        if len(events) >= limit or answer.next_cursor is msgspec.UNSET:
            break
        arguments["cursor"] = answer.next_cursor
    events = events[:limit]
    if after is not None and len(events) == limit:  # maybe more after the last: the next follow starts there
        return {"events": events, "through": events[-1]["position"]}
    return {"events": events, "through": max([through, *(e["position"] for e in events)])}
