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
back to it, or, if it could not (its other end was gone then), the relation is given back to
that entity now (`Theirs`).

A relation whose other end is gone when the entity comes back cannot come back with it; the answer
says so, and the other end's revert gives it back (`_owed`): it reads what the entities restored
while it was gone took when they ended, before it. So merges A->B, B->C reverted in any order end
as before them, a relation A -> B the first merge dropped as a loop included; and so do the
deletions of both ends of a relation, or a merge that joined the source's relation to the target's
and a deletion of their other end.

A relation the target held already was not copied: the merge made it again in place (deleted
and created on the target's own stream) or updated it with what the source's said
(`identity._joined`). Giving back what the merge took puts that relation back as it was before
the merge, where it is still as the merge left it; likewise a relation an entity gets back is
given as it was before an earlier merge joined a source's into it, if that source is back. A
deletion and a creation on one stream is a relation made again, never a move (a move changes a
name, so its stream).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple

from chronograph.application.core.tenures import holder_at
from chronograph.application.engine.batch import Batch
from chronograph.application.lifecycle.identity import created_again
from chronograph.eventstore import (
    EntityDeleted,
    EntityMerged,
    Envelope,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
)
from chronograph.projections import EntityRecord, RelationRecord, relation_stream, versions_of

__all__ = ["Copy", "Given", "Joined", "Taken", "Taking", "Theirs", "give_back", "taken_from"]

Ends = tuple[str | None, str | None]
"""The entities (streams) a relation's source and target meant; None: the name meant none."""
_AFTER = "reverting that entity gives this relation back"


class Taken(NamedTuple):
    """A relation a call took from the entity, as it was before."""

    record: RelationRecord
    ends: tuple[str | None, str | None]
    """The entities (streams) its source and target meant then; None: the name meant none."""


class Copy(NamedTuple):
    """A relation a merge made on the target from one it took."""

    origin: Taken
    ends: tuple[str | None, str | None]


class Joined(NamedTuple):
    """A relation the target held already, which a merge made again or updated with what the
    source's of the same ends and type said."""

    before: RelationRecord
    after: RelationRecord
    """As the merge left it"""
    ends: tuple[str | None, str | None]


class Taking(NamedTuple):
    """What the call that ended an entity took from its relations."""

    taken: list[Taken]
    copies: list[Copy]
    into: str | None
    """The entity it was merged into, by its name then (None: it was deleted)."""
    joined: list[Joined]
    """Relations the target held, which the merge joined the entity's to"""
    ended: Envelope
    """The deletion or the merge"""


class Given(NamedTuple):
    """What a revert gave back."""

    restored: int
    not_restored: list[str]
    """Each relation that could not come back, and why"""
    removed: int
    """Copies the merge made on the target, taken back"""
    kept: list[str]
    """Copies, or relations the target held that the merge joined, changed since the merge: left
    on the target, and how"""
    undone: int = 0
    """Relations the target held that the merge joined, put back as they were before it"""
    owed: int = 0
    """Relations of entities restored while this one was gone, which their reverts could not give
    back (this one was an end), given back"""


def taken_from(batch: Batch, stream: str, last: Envelope | None = None) -> Taking | None:
    """What the deletion or the merge that ended the entity of `stream` (last, or at `last`) took
    from its relations (None: it was not ended by one)."""
    last = last or next(iter(batch.tx.stream_backward(stream)), None)
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
    joined: list[Joined] = []
    moving: Taken | None = None  # the entity's, taken by the event just before: a merge's copy follows at once
    events = call[::-1]
    skip = False
    for at, envelope in enumerate(events):
        event = envelope.event
        if skip:
            skip = False
            continue
        again = events[at + 1] if at + 1 < len(events) else None
        if again is not None and not (isinstance(event, RelationDeleted) and isinstance(again.event, RelationCreated)
                                      and again.stream == envelope.stream):
            again = None
        if moving is not None and (again is not None or isinstance(event, RelationUpdated)):
            # the target held the triple: the merge made its own relation again in place, or updated it
            states = versions_of(batch.tx, envelope.stream, [envelope.version - 1, (again or envelope).version])
            held, left = (version.state for version in states)
            assert isinstance(held, RelationRecord) and isinstance(left, RelationRecord)
            joined.append(Joined(held, left, ends(held.source, held.target, envelope.position)))
            moving, skip = None, again is not None
        elif isinstance(event, RelationDeleted) and envelope.version > 1:
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
    return Taking(list(taken.values()), list(copies.values()), into, joined, last)


def give_back(batch: Batch, taking: Taking, stream: str) -> Given:
    """Make again the relations `taking` took from the entity of `stream` (restored, in this
    batch) between the entities they joined, take from the target the copies a merge made that
    are as it made them, and put back as they were the relations it held that the merge joined."""
    restored, not_restored = 0, []
    merges = _Merges(batch)
    for item in taking.taken:
        given = _given(batch, merges, item, stream)
        if isinstance(given, str):
            not_restored.append(given)
        else:
            restored += _make(batch, *given)
    owed = _owed(batch, merges, stream, taking.ended)
    removed, kept = 0, []
    # after the relations given back: a deletion followed at once by a creation reads as a move
    for copy in taking.copies:
        now = _now(batch, copy.ends, copy.origin.record)
        if now is None:
            continue  # the target or the other end is gone since, and the copy with it
        if _content(now) != _content(copy.origin.record):
            kept.append(f"{_label(now)}: changed since the merge, so it stays")
            continue
        batch.emit(now.stream, RelationDeleted())
        removed += 1
    undone = 0
    for joined in taking.joined:
        now = _now(batch, joined.ends, joined.before)
        if now is None:
            continue  # gone since (the target merged on, maybe: its revert puts it back as it was)
        if _content(now) != _content(joined.after):
            kept.append(f"{_label(now)}: the target held it, the merge joined the source's to it, and it was "
                        "changed since, so it stays as it is")
            continue
        was = _own(batch, merges, joined.before, stream)
        if isinstance(was, str | Theirs):  # a copy of another source's, which is back
            batch.emit(now.stream, RelationDeleted())
        elif _content(was) == _content(now):
            continue
        elif (was.valid_from, was.valid_until) == (now.valid_from, now.valid_until):
            batch.emit(now.stream, RelationUpdated(confidence=was.confidence, metadata=was.metadata))
        else:  # made again in place, as the merge did: not a move
            batch.emit(now.stream, RelationDeleted())
            batch.emit(now.stream, created_again(batch.workspace, was, now.source, now.target))
        undone += 1
    return Given(restored, not_restored, removed, kept, undone, owed)


def _given(batch: Batch, merges: _Merges, item: Taken, stream: str) -> tuple[RelationRecord, Ends] | str:
    """What of `item`, taken from the entity of `stream`, to make again, and the entities its ends
    join; or which relation cannot come back, and why."""
    relation, ends = item.record, item.ends
    own = _missing(batch, ends, relation) or _own(batch, merges, relation, stream)
    if isinstance(own, Theirs):  # the back entity's revert could not give it back then: give it now
        relation, ends = own.record, own.ends
        own = _missing(batch, ends, relation) or relation
    return f"{_label(relation)}: {own}" if isinstance(own, str) else (own, ends)


def _make(batch: Batch, relation: RelationRecord, ends: Ends) -> bool:
    """Make `relation` again between the live entities `ends`, under their names now, unless it is live."""
    source, target = (_name_now(batch, end) for end in ends)
    assert source is not None and target is not None
    if batch.relation(source, relation.relation_type, target) is not None:
        return False
    batch.emit(relation_stream(batch.workspace, source, relation.relation_type, target),
               created_again(batch.workspace, relation, source, target))
    return True


def _owed(batch: Batch, merges: _Merges, stream: str, ended: Envelope) -> int:
    """Give back, for the entity of `stream` (restored, in this batch), the relations with it that
    the reverts of entities restored while it was gone could not give back: each of those took its
    relations when it ended, before this one did (deleted, or merged: into this one, maybe, the
    relation dropped as a loop), and came back after. Those are the live entities whose place in
    creation order is after this one's end, created before it."""
    made = 0
    for other in batch.state.restored_since(batch.workspace, ended.position, ended.recorded_at):
        if other == stream:
            continue
        # its ending before this one's (made since in the same microsecond, it has none: no restore)
        before = next((e for e in batch.tx.stream_backward(other) if e.position < ended.position), None)
        taking = None if before is None else taken_from(batch, other, before)
        for item in () if taking is None else taking.taken:
            given = None if stream not in item.ends else _given(batch, merges, item, other)
            if isinstance(given, tuple) and stream in given[1]:
                made += _make(batch, *given)
    return made


def _now(batch: Batch, ends: tuple[str | None, str | None], relation: RelationRecord) -> RelationRecord | None:
    """The live relation of `relation`'s type between the entities `ends` (None: one is gone, or it is)."""
    source, target = (_name_now(batch, end) for end in ends)
    return None if source is None or target is None else batch.relation(source, relation.relation_type, target)


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
                return f"the entity then called {name!r} was merged into {event.into!r} since ({_AFTER})"
            if isinstance(event, EntityDeleted):
                return f"the entity then called {name!r} is deleted ({_AFTER})"
            return f"the entity then called {name!r} is gone"
    return None


class Theirs(NamedTuple):
    """A copy an earlier merge made of the relation of an entity that is back since: the relation
    as that entity held it, between the entities its ends meant then. Its revert gave it back if it
    could; one whose other end was gone then (deleted, merged on) is given back to it now."""

    record: RelationRecord
    ends: tuple[str | None, str | None]


def _own(batch: Batch, merges: _Merges, relation: RelationRecord, stream: str) -> RelationRecord | str | Theirs:
    """What of `relation` is the entity's to get back, or why none is. Not a copy an earlier merge
    made of another entity's relation (moved on by renames since, maybe), unchanged since, when
    that entity is back (with its own); and, where an earlier merge joined a source's relation to
    it and that source is back, the relation as it was before that merge."""
    record = own = relation
    while True:
        created = batch.tx.get(record.seq)
        if created is None:
            return own
        if created.version != record.version:  # changed since it was made: by a merge's join?
            [last] = versions_of(batch.tx, created.stream, [record.version])
            if not isinstance(last.envelope.event, RelationUpdated) or not _back(batch, merges, last.envelope, stream):
                return own
            [prior] = versions_of(batch.tx, created.stream, [record.version - 1])
            if not isinstance(prior.state, RelationRecord):
                return own
            record = own = prior.state
            continue
        before = batch.tx.get(record.seq - 1)
        if before is None or not isinstance(before.event, RelationDeleted) or before.correlation_id != (
                created.correlation_id):
            return own  # not made as a move (a move's copy follows the deletion it copies)
        [prior] = versions_of(batch.tx, before.stream, [before.version - 1])
        if not isinstance(prior.state, RelationRecord):
            return own
        if before.stream == created.stream:  # made again in place: by a merge's join, or a revert
            if not _back(batch, merges, created, stream):
                return own
            record = own = prior.state
            continue
        merged = merges.source_of(created)
        if merged is None:  # a rename's move: what it moved may be a merge's copy
            record = prior.state
            continue
        back = None if merged == stream else batch.state.get_entity(merged)
        if back is None:
            return own
        origin, at = prior.state, before.position
        source, target = (holder_at(batch.tx, batch.state.name_streams(batch.workspace, name), batch.workspace,
                                    name, at) for name in (origin.source, origin.target))
        return Theirs(origin, (source, target))


def _back(batch: Batch, merges: _Merges, envelope: Envelope, stream: str) -> bool:
    """Whether `envelope` was written by the merge of an entity (not that of `stream`) that is back."""
    merged = merges.source_of(envelope)
    return merged is not None and merged != stream and batch.state.get_entity(merged) is not None


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
