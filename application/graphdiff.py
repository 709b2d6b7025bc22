"""What changed between two moments of a workspace's graph, as the explorer's diff and
`replay --diff` say it: created, changed (how) and deleted entities and relations, compared on
what the memory knew at each moment, every fact whatever its valid time."""

from __future__ import annotations

import json
from typing import Any

from chronograph.application.engine.jsonvalues import same_json
from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Principal
from chronograph.application.engine.service import Memory
from chronograph.application.errors import ReplyTooLargeError

__all__ = ["ROOM", "diff", "graph_diff"]


def diff(memory: Memory, workspace: str, before: int | str, after: int | str, *,
         principal: Principal = LOCAL_PRINCIPAL) -> list[dict[str, Any]]:
    """What was created, changed and deleted between two moments of the graph.

    Raises:
        ForbiddenError: If `principal` may not read `workspace`.
        InvalidArgumentsError: If a moment is not a position or an ISO-8601 time.
    """
    old, new = (_known(memory, workspace, moment, principal) for moment in (before, after))
    return graph_diff(old, new)


ROOM = 6
"""How much more than one reply a diff may read of each moment's graph (see `_known`): the export's
text runs to 2.1-2.3 times read_graph's bytes, and a reply would carry it twice."""


def _known(memory: Memory, workspace: str, moment: int | str, principal: Principal) -> dict[str, Any]:
    """The graph the memory knew at `moment`, every fact whatever its valid time (read_graph shows
    what is true now: an invalidation would read as a deletion, a fact true later as none), each
    with its version, createdAt (which tells a re-created entity from a changed one) and spans."""
    limit = memory.reply_limit
    try:  # the graph gets the room read_graph had (see ROOM)
        out = memory.read("export_graph", {"format": "json", "asOf": moment, "workspace": workspace},
                          principal=principal, reply_limit=None if limit is None else ROOM * limit)
    except ReplyTooLargeError as error:
        raise ReplyTooLargeError("the diff", error.size // ROOM, error.limit // ROOM, (
            f"It reads the whole graph of workspace {workspace!r} at both moments: compare them with the "
            "command line, which has no reply to fit: chronograph replay --diff A B --store ..."),
            at_least=True) from None
    known: dict[str, Any] = json.loads(out.content)  # type: ignore[attr-defined]
    with memory.lock, memory.timeline.at("export_graph", moment) as then:  # (read as the export was)
        streams = {record.name: record.stream for record in then.graph.entities(workspace)}
        links = {(r.source, r.relation_type, r.target): r.stream for r in then.graph.relations(workspace)}
    for entity in known["entities"]:
        entity[STREAM] = streams.get(entity["name"])
    for relation in known["relations"]:
        relation[STREAM] = links.get((relation["from"], relation["relationType"], relation["to"]))
    return known


STREAM = "\x00stream"
"""The key `_known` gives each entity and relation its stream under: what tells one made again from the
one it replaced, where its version and createdAt are the same (deleted and made again at the time
the clock held, or under a clock set back)."""


def graph_diff(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """What was created, changed and deleted between two read_graph answers (with the stream of each
    entity and relation under `STREAM` where known)."""
    changes: list[dict[str, Any]] = []
    old = {e["name"]: e for e in before["entities"]}
    new = {e["name"]: e for e in after["entities"]}
    for name in [*old, *(n for n in new if n not in old)]:
        a, b = old.get(name), new.get(name)
        if a is None:
            changes.append({"change": "created", "kind": "entity", "what": name, "detail": b["entityType"]})  # type: ignore[index]
        elif b is None:
            changes.append({"change": "deleted", "kind": "entity", "what": name})
        elif (a["version"], a["createdAt"], a.get(STREAM)) != (b["version"], b["createdAt"], b.get(STREAM)):
            changes.append({"change": "changed", "kind": "entity", "what": name, "detail": _entity_change(a, b)})
    key = lambda r: (r["from"], r["relationType"], r["to"])  # noqa: E731
    old_r = {key(r): r for r in before["relations"]}
    new_r = {key(r): r for r in after["relations"]}
    for triple in [*old_r, *(t for t in new_r if t not in old_r)]:
        a, b = old_r.get(triple), new_r.get(triple)
        what = f"{triple[0]} -[{triple[1]}]-> {triple[2]}"
        if a is None:
            changes.append({"change": "created", "kind": "relation", "what": what})
        elif b is None:
            changes.append({"change": "deleted", "kind": "relation", "what": what})
        elif _made_again(a, b):
            changes.append({"change": "changed", "kind": "relation", "what": what, "detail": "re-created"})
        elif a["version"] != b["version"]:
            spans = [(r.get("validFrom"), r.get("validUntil")) for r in (a, b)]
            changes.append({"change": "changed", "kind": "relation", "what": what,
                            "detail": "valid time" if spans[0] != spans[1] else f"version {a['version']} -> "
                            f"{b['version']}"})
    return changes


def _entity_change(a: dict[str, Any], b: dict[str, Any]) -> str:
    parts = []
    if a["entityType"] != b["entityType"]:
        parts.append(f"type {a['entityType']} -> {b['entityType']}")
    added = [o for o in b["observations"] if o not in a["observations"]]
    removed = [o for o in a["observations"] if o not in b["observations"]]
    if added:
        parts.append(f"+{len(added)} observation{'s' * (len(added) != 1)}")
    if removed:
        parts.append(f"-{len(removed)} observation{'s' * (len(removed) != 1)}")
    if not same_json(a.get("metadata"), b.get("metadata")):
        parts.append("metadata")
    if a.get("validity") != b.get("validity"):
        parts.append("valid time")
    if _made_again(a, b):
        parts.append("re-created")
    return ", ".join(parts) or f"version {a['version']} -> {b['version']}"



def _made_again(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether `b` is another entity or relation than `a`, made after it under the same name or ends."""
    return a["createdAt"] != b["createdAt"] or a.get(STREAM) != b.get(STREAM)
