"""A rebuild's segments: the views written so far with the next events folded on top, each
record the views hold read once, an entity and a relation on one stream kept apart."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from chronograph.eventstore import (
    EntityCreated,
    EntityDeleted,
    LmdbLog,
    ObservationsAdded,
    RelationCreated,
    RelationUpdated,
    StreamWrite,
)
from chronograph.projections import Views
from chronograph.projections.streams import relation_stream
from support.views import raw_tables

rebuilding = importlib.import_module("chronograph.projections.live.rebuild")
A, B = "entity-" + "1" * 30, "entity-" + "2" * 30


def test_a_segment_reads_each_record_the_written_views_hold_once(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 1)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 2)  # a and b in memory, then a segment over them
    a, b = A, B
    views = Views(store)
    for stream, event in [
        (a, EntityCreated(workspace="default", name="x", entity_type="t")),
        (b, EntityCreated(workspace="default", name="y", entity_type="t")),
        (a, ObservationsAdded(observations=("more",))),  # the segment reads a, then says what changed
        (b, EntityDeleted()),
    ]:
        views.transact(lambda tx, state, s=stream, e=event: tx.append([StreamWrite(s, [e])], actor="test"))
    inline = raw_tables(store, views.tables.generation)
    state_class = importlib.import_module("chronograph.projections.states.lmdbstate").LmdbState
    read, reads = state_class.get_entity, []

    def counted(self: Any, stream: str) -> Any:
        reads.append(stream)
        return read(self, stream)

    monkeypatch.setattr(state_class, "get_entity", counted)
    assert views.rebuild().segments == 1
    assert sorted(reads) == [a, b]  # not read again, and decoded again, to say what it changed
    assert raw_tables(store, views.tables.generation) == inline


ZED = EntityCreated(workspace="lab", name="zed", entity_type="u")
SEEN = ObservationsAdded(observations=("seen",))
REWEIGHED = RelationUpdated(confidence=0.5)


@pytest.mark.parametrize(("records", "after"), [
    (4, [ZED, SEEN, REWEIGHED]),  # the segment reads the entity, then the relation
    (4, [ZED, REWEIGHED, SEEN]),  # the relation, then the entity
    (3, [ZED, REWEIGHED]),  # the segment creates the entity, then changes the relation the views hold
], ids=["entity-read-first", "relation-read-first", "entity-created-in-the-segment"])
def test_a_segment_keeps_apart_an_entity_and_a_relation_a_log_put_on_one_stream(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch, records: int, after: list[Any]
) -> None:
    # No command writes such a log, but the log takes it and the fold is total: a rebuild replays
    # any log as the inline fold did. What a segment notes of the stream's entity (its type, its
    # workspace's counts, that the views hold none) must not be taken for its relation's, nor the
    # other way round.
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 1)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", records)  # the first `records` in memory, then a segment
    shared = relation_stream("default", "ada", "knows", "bob")
    a, b = A, B
    views = Views(store)
    for stream, event in [
        (a, EntityCreated(workspace="default", name="ada", entity_type="t")),
        (b, EntityCreated(workspace="default", name="bob", entity_type="t")),
        (shared, RelationCreated(workspace="default", source="ada", relation_type="knows", target="bob")),
        *((shared, event) for event in after),
    ]:
        views.transact(lambda tx, state, s=stream, e=event: tx.append([StreamWrite(s, [e])], actor="test"))
    inline = raw_tables(store, views.tables.generation)
    assert views.rebuild().segments == 1
    assert raw_tables(store, views.tables.generation) == inline
