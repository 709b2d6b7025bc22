"""Guarded writes: an `expectedVersion` checked against what the name it came with means now.

A caller reads an entity or a relation, then writes with the version it read. If the entity was
renamed meanwhile, its old name means nothing now; the caller's version no longer matches, which
is a conflict, not an entity not found. So a guard is checked before a write refuses a name that
names nothing, and when no live entity bears a name that one bore, the conflict says what became
of it: renamed
(and what it is called now, with its version and state: the name is in the caller's workspace,
which a writer may read), deleted, or merged into another. Names a forgetting erased are never
told: the log no longer holds them.
"""

from __future__ import annotations

from typing import Any

from chronograph.application.core.tenures import OPEN, last_bearer, tenures
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import entity_out, relation_out
from chronograph.application.errors import ConflictError
from chronograph.eventstore import EntityDeleted, EntityMerged
from chronograph.projections import EntityRecord, RelationRecord
from msgspec import UNSET

__all__ = ["check_entity", "check_relation"]


def check_entity(batch: Batch, name: str, expected: int | Any, entity: EntityRecord | None) -> None:
    """`Batch.check` of `entity`, which the caller named `name` (an entity found under another name,
    by the revert of an old one, or none), saying what became of the one `name` meant.

    Raises:
        ConflictError: If `entity` is not at `expected` (UNSET: no check; 0: absent).
    """
    what = f"entity {name!r}"
    if expected is UNSET or (0 if entity is None else entity.version) == expected:
        return
    if entity is not None:
        since = "" if entity.name == name else f"it was renamed since: it is {entity.name!r} now, {_at(entity)}"
        raise ConflictError(what, expected, entity.version, entity_out(entity), since=since)
    told, now = _became(batch, name) or ("", None)  # none: no entity bore the name (that the log tells)
    if now is None:
        raise ConflictError(what, expected, 0, None, since=told and f"it {told}")
    raise ConflictError(what, expected, now.version, entity_out(now),
                        since=f"it {told}: it is {now.name!r} now, {_at(now)}")


def check_relation(batch: Batch, source: str, relation_type: str, target: str, expected: int | Any,
                   relation: RelationRecord | None) -> None:
    """`Batch.check` of `relation`, the caller's `source -[relation_type]-> target`, saying, when it
    is none because an end was renamed, deleted or merged, what became of the end, and, if both
    ends are live under other names, the relation as it is called now.

    Raises:
        ConflictError: If `relation` is not at `expected` (UNSET: no check; 0: absent).
    """
    what = f"relation {source!r} -[{relation_type}]-> {target!r}"
    if relation is not None or expected is UNSET or expected == 0:
        batch.check(what, expected, relation)
        return
    told, names = [], {}
    for name in dict.fromkeys((source, target)):
        fate = None if batch.exists(name) else _became(batch, name)
        if fate is not None:
            told.append(f"its end {name!r} {fate[0]}")
            if fate[1] is not None:
                names[name] = fate[1].name
    if not told:
        raise ConflictError(what, expected, 0, None)
    ends = names.get(source, source), names.get(target, target)
    now = batch.relation(ends[0], relation_type, ends[1]) if all(batch.exists(end) for end in ends) else None
    if now is None:
        told += [f"{name!r} is {new!r} now" for name, new in names.items()]
        raise ConflictError(what, expected, 0, None, since="; ".join(told))
    told.append(f"it is {now.source!r} -[{relation_type}]-> {now.target!r} now, {_at(now)}")
    raise ConflictError(what, expected, now.version, relation_out(now), since="; ".join(told))


def _became(batch: Batch, name: str) -> tuple[str, EntityRecord | None] | None:
    """What became of the entity `name` meant last, which no live entity bears now (a clause, and
    the entity if it is live under another name), or None: no entity bore it that the log tells."""
    found = last_bearer(batch.tx, batch.state.name_streams(batch.workspace, name), batch.workspace, name)
    if found is None or found[1].end == OPEN:
        return None
    stream = found[0]
    now = batch.state.get_entity(stream)
    if now is not None:
        return "was renamed since", now
    events = list(batch.tx.stream(stream))
    last, called = events[-1], [held.name for held in tenures(events)][-1]  # what it was called at its end
    first = f"renamed {called!r}, then " if called != name else ""
    if isinstance(last.event, EntityMerged):
        return f"was {first}merged into {last.event.into!r} since", None
    if isinstance(last.event, EntityDeleted):
        return f"was {first}deleted since", None
    return None


def _at(record: EntityRecord | RelationRecord) -> str:
    return f"at version {record.version}"
