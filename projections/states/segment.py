"""A segment of the log folded over views already written: how a rebuild bounds its memory.

A rebuild folds the log in memory until its state holds `FOLD_RECORDS` records, lays that
state into the idle slot, and folds the rest a segment at a time: each `Segment` reads
the records its events touch from what is written so far (an `Overlay`, so the fold is the
one every state uses) and keeps only what they changed. `changes()` turns that into the
keys each table gains, changes and loses, sorted, so they are written as a rebuild writes
(`putmulti`), not record by record. The tables end byte for byte as an inline fold leaves
them, which the tests check.

A name's record is rebuilt from the streams the written views know under it and those the
segment created, in creation order (a stream that came and went within the segment keeps
its place); an entity forgotten is purged from the name index after, so a rebuild ends a
segment with each forgetting. A workspace the written views have not met is numbered where an
inline fold would have numbered it: after the last number written, in the order the segment
first added to each (`LmdbState._numbered`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

from chronograph.projections.fold import FIRST
from chronograph.projections.keys import (
    ENTITY,
    INCOMING,
    NO_WORKSPACE,
    OUTGOING,
    RELATION,
    adjacency_key,
    context_key,
    identity_value,
    name_key,
    order_key,
    record_key,
    relation_key,
    totals_key,
    type_count_key,
    workspace_key,
)
from chronograph.projections.records import (
    ContextRecord,
    EntityRecord,
    NameRecord,
    RelationRecord,
    TypeCount,
    WorkspaceRecord,
    decode_name,
    decode_type_count,
    encode,
    spelled,
    stored_entity,
    stored_name,
    stored_relation,
)
from chronograph.projections.states.dictstate import PresentSets
from chronograph.projections.states.lmdbstate import LmdbState, next_number, number_rows, unnumbered
from chronograph.projections.states.overlay import Overlay

__all__ = ["Changes", "Segment"]

Changes = dict[str, list[tuple[bytes, bytes | None]]]
"""table -> (key, new value or None to delete it), sorted by key, each key once."""
R = TypeVar("R")
Rec = TypeVar("Rec", EntityRecord, RelationRecord)
Fields = tuple[str, str, int, str, str]
"""What `Segment.changes` needs of a record the written views hold: workspace, type, seq, and a
relation's ends ("" for an entity)."""
TICK = 4096
"""Records between two calls of `changes`'s `between`."""


class Segment(Overlay):
    """The views written so far (read through `base`) with the next events folded on top."""

    from_start = True  # the views a rebuild has written, from the log's start

    def __init__(self, base: LmdbState) -> None:
        super().__init__(base)
        self._seen: dict[str, None] = {}
        self._forgotten: list[tuple[str, str]] = []
        self._present = PresentSets()
        self._absent: dict[bytes, set[str]] = {ENTITY: set(), RELATION: set()}
        """Streams the written views hold no entity, and no relation, of: `changes` need not read
        them again (a kind each: a log may put both on one stream, and the fold is total)"""
        self._was: dict[bytes, dict[str, Fields]] = {ENTITY: {}, RELATION: {}}
        """stream -> what `changes` needs of the entity, and of the relation, the written views
        hold (workspace, type, seq, and a relation's ends), noted when the fold first read it: not
        read and decoded again"""

    @property
    def size(self) -> int:
        """How many records the segment holds (touched entities and relations, gone ones too)."""
        return len(self._entities) + len(self._relations)

    def get_entity(self, stream: str) -> EntityRecord | None:
        held = self._entities
        return held[stream] if stream in held else self._first_read(stream, held, self.base.get_entity, ENTITY)

    def add_entity(self, entity: EntityRecord) -> None:
        self._created(entity, self._entities, ENTITY)
        super().add_entity(entity)
        self._seen[entity.workspace] = None  # its totals exist from now on, whatever comes after

    def get_relation(self, stream: str) -> RelationRecord | None:
        held = self._relations
        return held[stream] if stream in held else self._first_read(stream, held, self.base.get_relation, RELATION)

    def add_relation(self, relation: RelationRecord) -> None:
        self._created(relation, self._relations, RELATION)
        super().add_relation(relation)
        self._seen[relation.workspace] = None

    def _first_read(self, stream: str, held: dict[str, Rec | None], read: Callable[[str], Rec | None],
                    kind: bytes) -> Rec | None:
        """`stream`'s record of `kind` the written views hold, read for the fold and kept in `held`
        (decoded for this segment alone: not copied), and what `changes` needs of it noted (`_was`)."""
        found = held[stream] = read(stream)
        if found is None:
            self._absent[kind].add(stream)
        else:
            self._was[kind][stream] = _fields(found)
        return found

    def _written(self, stream: str, kind: bytes, read: Callable[[str], EntityRecord | RelationRecord | None],
                 ) -> Fields | None:
        """What the written views hold of `stream`'s record of `kind` (see `_was`), read only if the
        fold never did (a record reached by name, or by a relation's ends)."""
        found = self._was[kind].pop(stream, None)
        if found is not None or stream in self._absent[kind]:
            return found
        record = read(stream)
        return None if record is None else _fields(record)

    def _created(self, record: EntityRecord | RelationRecord, held: Mapping[str, object], kind: bytes) -> None:
        """Note a record created by its stream's first event (the fold asked nothing, see `FIRST`)."""
        if record.version == FIRST and record.stream not in held:
            self._absent[kind].add(record.stream)

    def present(self, entity: EntityRecord) -> set[str]:
        return self._present(entity)  # kept between events, as in memory: a long history adds in steps

    def save_context(self, context: ContextRecord) -> None:
        super().save_context(context)
        self._seen[context.workspace] = None

    def saw_workspace(self, workspace: str) -> None:
        self._seen[workspace] = None

    def forget_entity(self, stream: str, workspace: str) -> None:
        super().forget_entity(stream, workspace)
        self._forgotten.append((stream, workspace))

    def changes(self, between: Callable[[], object] = lambda: None) -> tuple[Changes, list[tuple[str, str]]]:
        """What the segment changes in each table of the views it was folded over (`base`, whose
        transaction must still be open), and the (stream, workspace) of the entities it forgot,
        which are purged from the name index after (`LmdbState.forget_entity`).

        The segment is emptied as its rows are made (they take the memory its records gave
        back); `between()` is called every `TICK` records (a rebuild gives back store pages).
        """
        base = self.base
        rows: Changes = {table: [] for table in ("entities", "relations", "identities", "names", "order", "adjacency")}
        written = base._ws  # noqa: SLF001 (the one cache of workspace keys)
        numbered: dict[str, bytes] = {}
        last = base.last_number()
        for workspace in self._seen:  # in the order the segment first added to them
            if written(workspace) == NO_WORKSPACE:
                last = next_number(last)
                numbered[workspace] = workspace_key(last)

        spaces_of = dict(numbered)

        def ws(workspace: str) -> bytes:  # asked only of workspaces the views or the segment added to
            key = spaces_of.get(workspace)
            if key is None:
                key = spaces_of[workspace] = written(workspace)
                if key == NO_WORKSPACE:
                    raise unnumbered(workspace)
            return key

        counts: dict[tuple[str, bytes, str], int] = {}
        totals: dict[str, list[int]] = {workspace: [0, 0] for workspace in self._seen}

        def count(workspace: str, kind: bytes, type_name: str, delta: int) -> None:
            counts[(workspace, kind, type_name)] = counts.get((workspace, kind, type_name), 0) + delta
            totals.setdefault(workspace, [0, 0])[kind == RELATION] += delta

        entities, order = rows["entities"], rows["order"]
        for stream, new in _drained(self._entities, between):
            old = self._written(stream, ENTITY, base.get_entity)
            if old is None and new is None:
                continue
            key = record_key(stream)
            entities.append((key, None if new is None else encode(stored_entity(new, key))))
            if old is not None:
                old_workspace, old_type, old_seq, _, _ = old
                count(old_workspace, ENTITY, old_type, -1)
                if new is None or new.seq != old_seq:
                    order.append((order_key(ws(old_workspace), ENTITY, old_seq), None))
            if new is not None:
                count(new.workspace, ENTITY, new.entity_type, +1)
                if old is None or new.seq != old_seq:
                    order.append((order_key(ws(new.workspace), ENTITY, new.seq), key))
        relations, identities, adjacency = rows["relations"], rows["identities"], rows["adjacency"]
        for stream, relation in _drained(self._relations, between):
            was = self._written(stream, RELATION, base.get_relation)
            if was is None and relation is None:
                continue
            moved = was is None or relation is None or was[2] != relation.seq  # its keys change
            if was is not None:
                was_workspace, was_type, was_seq, was_source, was_target = was
                count(was_workspace, RELATION, was_type, -1)
                if moved:
                    space = ws(was_workspace)
                    relations.append((relation_key(space, was_seq), None))
                    adjacency.append((adjacency_key(space, was_source, OUTGOING, was_seq), None))
                    adjacency.append((adjacency_key(space, was_target, INCOMING, was_seq), None))
            if relation is None:
                identities.append((record_key(stream), None))
                continue
            count(relation.workspace, RELATION, relation.relation_type, +1)
            space = ws(relation.workspace)
            key = relation_key(space, relation.seq)
            relations.append((key, encode(stored_relation(relation))))
            if moved:
                identities.append((record_key(stream), identity_value(spelled(relation), key)))
                adjacency.append((adjacency_key(space, relation.source, OUTGOING, relation.seq), b""))
                adjacency.append((adjacency_key(space, relation.target, INCOMING, relation.seq), b""))
        names, txn, tables = rows["names"], base.txn, base.tables
        while self._names:
            (workspace, name), live = self._names.popitem()
            key = name_key(ws(workspace), name)
            found = txn.get(key, db=tables.names)
            known = () if found is None else decode_name(found).streams
            added = tuple(s for s in dict.fromkeys(self._new_streams.pop((workspace, name), ())) if s not in known)
            names.append((key, encode(stored_name(NameRecord(live, (*known, *added))))))
        spaces: list[tuple[bytes, bytes | None]] = []
        for (workspace, kind, type_name), delta in counts.items():
            if delta:
                key = type_count_key(ws(workspace), kind, type_name)
                found = txn.get(key, db=tables.workspaces)
                now = (0 if found is None else decode_type_count(found).count) + delta
                spaces.append((key, encode(TypeCount(type_name, now)) if now else None))
        for context in self._contexts.values():
            spaces.append((context_key(ws(context.workspace)), encode(context)))
            totals.setdefault(context.workspace, [0, 0])
        for workspace, (entity_delta, relation_delta) in totals.items():
            had = base.workspace(workspace) or WorkspaceRecord(workspace)
            spaces.append((totals_key(ws(workspace)), encode(WorkspaceRecord(
                workspace, had.entities + entity_delta, had.relations + relation_delta))))
        spaces += number_rows(numbered, last)
        rows["workspaces"] = spaces
        for table in rows.values():
            table.sort(key=_first)
        return rows, list(self._forgotten)


def _fields(record: EntityRecord | RelationRecord) -> Fields:
    """What `Segment.changes` needs of a record the written views hold (see `Segment._was`)."""
    if isinstance(record, EntityRecord):
        return record.workspace, record.entity_type, record.seq, "", ""
    return record.workspace, record.relation_type, record.seq, record.source, record.target


def _drained(records: dict[str, R], between: Callable[[], object]) -> Iterator[tuple[str, R]]:
    """Each item of `records`, taken out as it is given (its memory goes back with it), with
    `between()` called every `TICK` items."""
    while records:
        if len(records) % TICK == 0:
            between()
        yield records.popitem()


def _first(row: tuple[bytes, bytes | None]) -> bytes:
    return row[0]
