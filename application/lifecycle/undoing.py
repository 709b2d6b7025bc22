"""What a deletion or a merge took from an entity's relations, and giving it back when
`revert_entity` restores the entity.

A deletion removes every relation touching the entity; a merge moves them onto the target
(each deleted under the source's name and made again under the target's, a loop dropped).
Both are read from the log: the call that ended the entity wrote its events together, under
one correlation id. Relations are keyed by names, but what one joins is entities, so each end
is read as the entity its name meant when the call ran (`tenures.holder_at`), and a relation
given back joins those entities under the names they bear now: never an entity that took an
old name since; none that is gone (the answer says which could not come back, and why).

Giving back what a merge took also takes from the target the copies the merge made, where they
are still as the merge made them (one changed since is the target's now, and stays). A copy of
a copy, made when an entity that had absorbed another was merged in turn, is not given back to
the one that absorbed it if the entity it came from is back already: that one's revert gave it
back to it (so merges A->B, B->C reverted in either order end as before them).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from chronograph.application.core.tenures import holder_at
from chronograph.application.engine.batch import Batch
from chronograph.application.lifecycle.identity import created_again
from chronograph.eventstore import EntityDeleted, EntityMerged, Envelope, RelationCreated, RelationDeleted
from chronograph.projections import EntityRecord, RelationRecord, relation_stream, versions_of

__all__ = ["Copy", "Given", "Taken", "Taking", "give_back", "taken_from"]


class Taken(NamedTuple):
    """A relation a call took from the entity, as it was before."""

    record: RelationRecord
    ends: tuple[str | None, str | None]
    """The entities (streams) its source and target meant then; None: the name meant none."""


class Copy(NamedTuple):
    """A relation a merge made on the target from one it took."""

    origin: Taken
    ends: tuple[str | None, str | None]


class Taking(NamedTuple):
    """What the call that ended an entity took from its relations."""

    taken: list[Taken]
    copies: list[Copy]
    into: str | None
    """The entity it was merged into, by its name then (None: it was deleted)."""


class Given(NamedTuple):
    """What a revert gave back."""

    restored: int
    not_restored: list[str]
    """Each relation that could not come back, and why"""
    removed: int
    """Copies the merge made on the target, taken back"""
    kept: list[str]
    """Copies changed since the merge, left on the target, and how"""


def taken_from(batch: Batch, stream: str) -> Taking | None:
    """What the deletion or the merge that ended the entity of `stream` took from its relations
    (None: it was not ended by one)."""
    last = next(iter(batch.tx.stream_backward(stream)), None)
    if last is None or not isinstance(last.event, EntityDeleted | EntityMerged):
        return None
    call: list[Envelope] = []
    position = last.position - 1
    while position > 0:
        envelope = batch.tx.get(position)
        if envelope is None or envelope.correlation_id != last.correlation_id:
            break
        call.append(envelope)
        position -= 1
    holders: dict[str, str | None] = {}

    def ends(source: str, target: str, at: int) -> tuple[str | None, str | None]:
        # within one deletion or merge no name passes to another entity: one look each
        for name in (source, target):
            if name not in holders:
                holders[name] = holder_at(batch.tx, batch.state.name_streams(batch.workspace, name),
                                          batch.workspace, name, at)
        return holders[source], holders[target]

    [before] = versions_of(batch.tx, stream, [last.version - 1])
    own = before.state.name if isinstance(before.state, EntityRecord) else None
    taken: dict[tuple[str, int], Taken] = {}
    copies: dict[str, Copy] = {}  # the copies this call left, by their streams
    made: dict[str, Taken] = {}  # relation streams this call made from the entity's -> what each copies
    moving: Taken | None = None  # the entity's, taken by the event just before: a merge's copy follows at once
    for envelope in reversed(call):
        event = envelope.event
        if isinstance(event, RelationDeleted) and envelope.version > 1:
            moving = made.pop(envelope.stream, None)  # a copy made earlier in the call, gone again (a loop)
            copies.pop(envelope.stream, None)
            if moving is None:
                [prior] = versions_of(batch.tx, envelope.stream, [envelope.version - 1])
                record = prior.state
                if isinstance(record, RelationRecord) and own in (record.source, record.target):
                    moving = Taken(record, ends(record.source, record.target, envelope.position))
            if moving is not None and stream in moving.ends:
                taken.setdefault((moving.record.stream, moving.record.seq), moving)
            else:
                moving = None
        elif isinstance(event, RelationCreated) and moving is not None:
            made[envelope.stream] = moving
            copies[envelope.stream] = Copy(moving, ends(event.source, event.target, envelope.position))
            moving = None
        else:
            moving = None
    into = last.event.into if isinstance(last.event, EntityMerged) else None
    return Taking(list(taken.values()), list(copies.values()), into)


def give_back(batch: Batch, taking: Taking, stream: str) -> Given:
    """Make again the relations `taking` took from the entity of `stream` (restored, in this
    batch) between the entities they joined, and take from the target the copies a merge made
    that are as it made them."""
    restored, not_restored = 0, []
    merges = _Merges(batch)
    for item in taking.taken:
        relation = item.record
        why = _missing(batch, item.ends, relation) or _absorbed(batch, merges, relation, stream)
        if why is not None:
            not_restored.append(f"{_label(relation)}: {why}")
            continue
        source, target = (_name_now(batch, end) for end in item.ends)
        assert source is not None and target is not None
        if batch.relation(source, relation.relation_type, target) is not None:
            continue
        batch.emit(relation_stream(batch.workspace, source, relation.relation_type, target),
                   created_again(batch.workspace, relation, source, target))
        restored += 1
    removed, kept = 0, []
    # after the relations given back: a deletion followed at once by a creation reads as a move
    for copy in taking.copies:
        source, target = (_name_now(batch, end) for end in copy.ends)
        if source is None or target is None:
            continue  # the target or the other end is gone since, and the copy with it
        now = batch.relation(source, copy.origin.record.relation_type, target)
        if now is None:
            continue
        if _content(now) != _content(copy.origin.record):
            kept.append(f"{_label(now)}: changed since the merge, so it stays")
            continue
        batch.emit(now.stream, RelationDeleted())
        removed += 1
    return Given(restored, not_restored, removed, kept)


def _name_now(batch: Batch, stream: str | None) -> str | None:
    entity = None if stream is None else batch.state.get_entity(stream)
    return None if entity is None else entity.name


def _missing(batch: Batch, ends: tuple[str | None, str | None], relation: RelationRecord) -> str | None:
    """Why an end of `relation` cannot be joined now (None: both can)."""
    for end, name in zip(ends, (relation.source, relation.target), strict=True):
        if end is None:
            return f"{name!r} named no entity then"
        if batch.state.get_entity(end) is None:
            last = next(iter(batch.tx.stream_backward(end)), None)
            event = None if last is None else last.event
            if isinstance(event, EntityMerged):
                return f"the entity then called {name!r} was merged into {event.into!r} since"
            return f"the entity then called {name!r} is deleted"
    return None


def _absorbed(batch: Batch, merges: _Merges, relation: RelationRecord, stream: str) -> str | None:
    """Why `relation` is not the entity's to get back (None: it is): it is a copy an earlier merge
    made of another entity's relation (moved on by renames since, maybe), unchanged since, and that
    entity is back (with its own)."""
    record = relation
    while True:
        created, before = batch.tx.get(record.seq), batch.tx.get(record.seq - 1)
        if created is None or created.version != record.version:
            return None  # changed since it was made: the entity's own now
        if before is None or not isinstance(before.event, RelationDeleted) or before.correlation_id != (
                created.correlation_id):
            return None  # not made as a move (a move's copy follows the deletion it copies)
        merged = merges.source_of(created)
        if merged is None:  # a rename's move: what it moved may be a merge's copy
            [prior] = versions_of(batch.tx, before.stream, [before.version - 1])
            if not isinstance(prior.state, RelationRecord):
                return None
            record = prior.state
            continue
        back = None if merged == stream else batch.state.get_entity(merged)
        if back is None:
            return None
        return f"a copy the merge of {back.name!r} made, and {back.name!r} is back with its own"


class _Merges:
    """Which source's merge made a relation: each call read once (a call may move thousands)."""

    def __init__(self, batch: Batch) -> None:
        self.batch = batch
        self.calls: dict[str, list[tuple[int, str]]] = {}
        """correlation id -> the (position, source stream) of each merge the call made, in order"""

    def source_of(self, created: Envelope) -> str | None:
        """The source whose merge made the relation `created` (None: no merge made it). A merge's
        call moves each source's relations, then retires it."""
        merges = self.calls.get(created.correlation_id)
        if merges is None:
            merges = self.calls[created.correlation_id] = self._read(created)
        later = bisect_right(merges, created.position, key=lambda merge: merge[0])
        return merges[later][1] if later < len(merges) else None

    def _read(self, inside: Envelope) -> list[tuple[int, str]]:
        tx, call = self.batch.tx, inside.correlation_id
        first = inside.position
        while first > 1 and (envelope := tx.get(first - 1)) is not None and envelope.correlation_id == call:
            first -= 1
        merges = []
        position = first
        while (envelope := tx.get(position)) is not None and envelope.correlation_id == call:
            if isinstance(envelope.event, EntityMerged):
                merges.append((position, envelope.stream))
            position += 1
        return merges


def _content(relation: RelationRecord) -> tuple[object, ...]:
    return relation.confidence, relation.metadata, relation.valid_from, relation.valid_until


def _label(relation: RelationRecord) -> str:
    return f"{relation.source!r} -[{relation.relation_type}]-> {relation.target!r}"
