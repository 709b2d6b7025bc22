"""Rebuilds: in segments and chunks, byte for byte the inline views, without growing the store."""

from __future__ import annotations

import contextlib
import importlib
import shutil
import signal
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from chronograph.eventstore import (
    NO_STREAM,
    ContentErased,
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityForgotten,
    EntityMerged,
    EntityRenamed,
    LmdbLog,
    ObservationsAdded,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    StreamWrite,
    clock,
)
from chronograph.eventstore.lmdb import LmdbEnv
from chronograph.eventstore.postgres.log import PgLog
from chronograph.projections import Views, new_entity_stream, verify
from chronograph.projections.streams import relation_stream
from freezegun import freeze_time
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.histories import Simulator, draw_history
from support.postgres import database
from support.views import raw_tables

rebuilding = importlib.import_module("chronograph.projections.live.rebuild")
snapshotting = importlib.import_module("chronograph.projections.past.snapshots")
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def play(views: Views, history: list[tuple[Any, ...]]) -> None:
    """Apply `history` one command per operation, a second apart."""
    simulator = Simulator()
    with freeze_time(START, real_asyncio=True) as frozen:
        for step, operation in enumerate(history):
            frozen.move_to(START + timedelta(seconds=step))
            writes = simulator.decide(operation, clock.now_us())
            if writes:
                views.transact(lambda tx, state, writes=writes: tx.append(writes, actor="test"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), steps=st.integers(min_value=1, max_value=30),
       fold_batch=st.integers(min_value=1, max_value=4), chunk=st.integers(min_value=1, max_value=5),
       records=st.sampled_from([1, 2, 3, 5, 1_000_000]))
def test_a_rebuild_in_small_batches_chunks_and_segments_writes_the_inline_views_byte_for_byte(
    data: st.DataObject, steps: int, fold_batch: int, chunk: int, records: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", fold_batch)
    monkeypatch.setattr(rebuilding, "WRITE_CHUNK", chunk)  # every table spans several transactions
    monkeypatch.setattr(rebuilding, "CHANGE_CHUNK", chunk)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", records)  # and, but for the last, the rest folds onto it
    history = draw_history(data, Simulator(), steps)
    directory = tempfile.mkdtemp()
    try:
        with LmdbLog(directory + "/store", sync=False) as store:
            views = Views(store)
            views.snapshots.spacing = 3  # segments end inside batches and between them
            play(views, history)
            inline = raw_tables(store, views.tables.generation)
            for _ in range(2):  # the second one fills the slot the first retired
                views.rebuild()
                assert raw_tables(store, views.tables.generation) == inline
    finally:
        shutil.rmtree(directory)


STREAMS = [f"entity-{i:030x}" for i in range(1, 9)]
NAMED = ["ada", "bob", "cy"]


def raw_events(sim: st.DataObject, count: int) -> list[StreamWrite]:
    """`count` events of every kind the fold knows, on a few entities and the relations between
    their names, in any order: the fold is total, so any log is one a rebuild must replay (an
    entity's events on a relation's stream and a relation's on an entity's too, which no command
    writes)."""
    ws = st.sampled_from(["default", "lab"])
    relation = st.tuples(ws, st.sampled_from(NAMED), st.sampled_from(["knows", "uses"]), st.sampled_from(NAMED))
    name = st.sampled_from(NAMED)
    stream = st.one_of(st.sampled_from(STREAMS), relation.map(lambda r: relation_stream(*r)))
    placed = st.tuples(st.sampled_from([*STREAMS[:2], None]), relation).map(  # a relation, mostly on its own stream
        lambda p: (p[0] or relation_stream(*p[1]), p[1]))
    event = st.one_of(
        st.tuples(stream, st.builds(EntityCreated, workspace=ws, name=name, entity_type=st.sampled_from("xy"),
                                    observations=st.lists(st.sampled_from("abc"), max_size=2).map(tuple))),
        st.tuples(stream, st.builds(ObservationsAdded, observations=st.lists(st.sampled_from("abcd"),
                                                                            min_size=1, max_size=2).map(tuple))),
        st.tuples(stream, st.builds(EntityRenamed, name=name, previous=st.just(""))),
        st.tuples(stream, st.builds(EntityMerged, into=name)),
        st.tuples(stream, st.just(EntityDeleted())),
        st.tuples(stream, st.builds(EntityForgotten, workspace=ws, reason=st.just("asked"), events=st.just(1))),
        placed.map(lambda p: (p[0], RelationCreated(workspace=p[1][0], source=p[1][1], relation_type=p[1][2],
                                                    target=p[1][3]))),
        placed.map(lambda p: (p[0], RelationUpdated(confidence=0.5))),
        placed.map(lambda p: (p[0], RelationDeleted())),
        ws.map(lambda w: ("context-" + w, ContextUpdated(workspace=w, active_task="ship"))),
        st.sampled_from(["default", "gone"]).map(  # "gone": a workspace only an erasure names
            lambda w: ("erased-" + w, ContentErased(erased="entity_created", workspace=w))),
    )
    return [StreamWrite(s, [e]) for s, e in sim.draw(st.lists(event, min_size=count, max_size=count))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), count=st.integers(min_value=1, max_value=50), records=st.integers(min_value=1, max_value=5))
def test_a_rebuild_in_segments_replays_renames_merges_forgetting_and_erasures_as_the_inline_fold(
    data: st.DataObject, count: int, records: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 2)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", records)
    monkeypatch.setattr(rebuilding, "CHANGE_CHUNK", 3)
    writes = raw_events(data, count)
    directory = tempfile.mkdtemp()
    try:
        with LmdbLog(directory + "/store", sync=False) as store:
            views = Views(store)
            for write in writes:  # one event a transaction, each folded inline
                views.transact(lambda tx, state, write=write: tx.append([write], actor="test"))
            inline = raw_tables(store, views.tables.generation)
            views.rebuild()
            assert raw_tables(store, views.tables.generation) == inline
    finally:
        shutil.rmtree(directory)


def test_a_rebuild_in_segments_of_a_postgresql_logs_cache_writes_the_inline_views_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 3)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 4)
    monkeypatch.setattr(rebuilding, "CHANGE_CHUNK", 5)
    a, b, c = STREAMS[:3]
    writes = [(s, EntityCreated(workspace="default", name=f"n{i}", entity_type="t", observations=(f"o{i}",)))
              for i, s in enumerate(STREAMS)]
    writes += [(relation_stream("default", f"n{i}", "knows", f"n{i + 1}"),
                RelationCreated(workspace="default", source=f"n{i}", relation_type="knows", target=f"n{i + 1}"))
               for i in range(len(STREAMS) - 1)]
    writes += [(a, EntityRenamed(name="n9", previous="n0")), (b, EntityDeleted()),
               (c, ObservationsAdded(observations=("more",))),
               (relation_stream("default", "n3", "knows", "n4"), RelationDeleted())]
    cache = LmdbEnv(tmp_path / "cache", sync=False)
    try:
        with PgLog(database().log_url()) as log:
            views = Views(log, cache=cache)
            for stream, event in writes:
                views.transact(lambda tx, state, s=stream, e=event: tx.append([StreamWrite(s, [e])], actor="test"))
            inline = raw_tables(cache, views.tables.generation)
            views.rebuild()
            assert raw_tables(cache, views.tables.generation) == inline
            assert verify(views) == []
    finally:
        cache.close()


def test_a_name_keeps_its_streams_in_creation_order_when_one_came_and_went_within_a_segment(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 1)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 2)  # two in memory, then segments of two
    a, b, c, d = STREAMS[:4]
    views = Views(store)
    for stream, event in [
        (a, EntityCreated(workspace="default", name="x", entity_type="t")),
        (d, EntityCreated(workspace="default", name="w", entity_type="t")),
        (b, EntityCreated(workspace="default", name="y", entity_type="t")),  # a segment: b comes and goes,
        (b, EntityDeleted()),
        (c, EntityCreated(workspace="default", name="y", entity_type="t")),  # and c takes its name
        (c, EntityRenamed(name="x", previous="y")),  # the next: c takes a's name, a leaves
    ]:
        views.transact(lambda tx, state, s=stream, e=event: tx.append([StreamWrite(s, [e])], actor="test"))
    inline = raw_tables(store, views.tables.generation)
    views.rebuild()
    assert raw_tables(store, views.tables.generation) == inline
    with views.read() as graph:
        assert graph.name_streams("default", "y") == (b, c)
        assert graph.name_streams("default", "x") == (a, c)
        assert graph.entity("default", "x").stream == c and graph.entity("default", "y") is None


def test_a_segment_numbers_the_workspaces_it_meets_first_as_the_inline_fold_does(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 1)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 1)  # one record in memory, then segments
    views = Views(store)
    for stream, event in [
        (STREAMS[0], EntityCreated(workspace="default", name="x", entity_type="t")),
        ("context-lab", ContextUpdated(workspace="lab", active_task="ship")),  # met by its context alone
        ("erased-gone", ContentErased(erased="entity_created", workspace="gone")),  # by an erasure alone
        (STREAMS[1], EntityCreated(workspace="zoo", name="x", entity_type="t")),
        (relation_stream("lab", "x", "k", "x"),
         RelationCreated(workspace="lab", source="x", relation_type="k", target="x")),
    ]:
        views.transact(lambda tx, state, s=stream, e=event: tx.append([StreamWrite(s, [e])], actor="test"))
    inline = raw_tables(store, views.tables.generation)
    assert views.rebuild().segments == 2  # "default" in memory; the rest met in segments
    assert raw_tables(store, views.tables.generation) == inline
    with views.read() as graph:
        assert [graph._ws(w) for w in ("default", "lab", "gone", "zoo", "nowhere")] == [  # noqa: SLF001
            bytes([0, 0, 0, n]) for n in (1, 2, 3, 4, 0)]
        assert graph.context("lab").active_task == "ship" and [r.source for r in graph.relations("lab")] == ["x"]
        assert graph.entity("zoo", "x").stream == STREAMS[1] and graph.entity("nowhere", "x") is None


def test_a_forgetting_ends_its_segment_so_what_follows_is_folded_after_the_purge(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 2)  # the forgetting ends a batch
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 2)
    a, b, c = STREAMS[:3]
    views = Views(store)
    for stream, event in [
        (b, EntityCreated(workspace="default", name="bob", entity_type="t")),
        (c, EntityCreated(workspace="default", name="cy", entity_type="t")),
        (a, EntityCreated(workspace="default", name="ada", entity_type="t")),
        (a, EntityForgotten(workspace="default", reason="asked", events=1)),
        (a, EntityCreated(workspace="default", name="ada", entity_type="t")),  # a log any writer may leave
    ]:
        views.transact(lambda tx, state, s=stream, e=event: tx.append([StreamWrite(s, [e])], actor="test"))
    inline = raw_tables(store, views.tables.generation)
    views.rebuild()
    assert raw_tables(store, views.tables.generation) == inline
    with views.read() as graph:
        assert graph.entity("default", "ada").stream == a and graph.name_streams("default", "ada") == (a,)


@pytest.mark.parametrize("records", [1, 2, 3])
def test_a_forgetting_in_a_segment_leaves_a_relation_its_stream_moved_to_another_workspace(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch, records: int
) -> None:
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 1)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", records)
    a = STREAMS[0]
    moved = "relation-by-hand"  # a stream its fields do not spell, so it may name another workspace later
    views = Views(store)
    for stream, event in [
        (a, EntityCreated(workspace="default", name="ada", entity_type="t")),
        (moved, RelationCreated(workspace="default", source="ada", target="ada", relation_type="k")),
        (moved, RelationCreated(workspace="lab", source="ada", target="ada", relation_type="k")),
        (a, EntityForgotten(workspace="default", reason="asked", events=1)),
    ]:
        views.transact(lambda tx, state, s=stream, e=event: tx.append([StreamWrite(s, [e])], actor="test"))
    inline = raw_tables(store, views.tables.generation)
    views.rebuild()  # before: the segment's forgetting took the relation now in "lab" for one of "default"
    assert raw_tables(store, views.tables.generation) == inline and verify(views) == []
    with views.read() as graph:
        assert [r.workspace for r in graph.relations("lab")] == ["lab"]


def _fill(views: Views, entities: int) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    for start in range(0, entities, 50):
        writes = [StreamWrite(new_entity_stream(), [EntityCreated(
            workspace="default", name=f"entity {i}", entity_type="thing",
            observations=(f"{words} {i} a", f"{words} {i} b", f"{words} {i} c"))], NO_STREAM)
            for i in range(start, start + 50)]
        views.transact(lambda tx, state, writes=writes: tx.append(writes, actor="t"))


def _pages(store: LmdbLog) -> tuple[int, int]:
    """(pages in use by every database, the file's high-water mark in pages)."""
    env = store.environment.env
    used = 0
    with env.begin() as txn:
        for name in store.environment.database_names():
            stat = txn.stat(env.open_db(name.encode(), txn=txn, create=False))
            used += stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]
    return used, env.info()["last_pgno"] + 1


def test_rebuilds_in_a_row_do_not_grow_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshotting, "SMALL", 0, raising=False)  # as if the graph were large
    directory = tempfile.mkdtemp()
    try:
        with LmdbLog(directory + "/store") as store:
            views = Views(store)
            views.snapshots.spacing = 100  # eight snapshots of the whole graph, before
            _fill(views, 1000)
            used, _ = _pages(store)
            views.rebuild()
            after_one, mark = _pages(store)
            assert after_one <= used * 1.10  # the retired slot's pages are free again
            for _ in range(4):
                views.rebuild()
                now_used, now_mark = _pages(store)
                assert now_used <= used * 1.10
                assert now_mark <= mark * 1.10  # the next rebuilds fill the pages the last one freed
    finally:
        shutil.rmtree(directory)


def test_a_snapshot_larger_than_the_log_it_saves_folding_is_not_kept(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    views = Views(store)
    _fill(views, 300)
    views.snapshots.spacing = 100
    report = views.rebuild()  # a small graph keeps its snapshots
    assert report.snapshots == 3 and views.snapshots.positions() == [100, 200, 300]
    views.snapshots.env.write(lambda txn: txn.drop(views.snapshots.db, delete=False))
    monkeypatch.setattr(snapshotting, "SMALL", 0)  # as if the graph were large
    report = views.rebuild()
    assert report.snapshots == 0 and views.snapshots.positions() == []


def test_a_rebuild_reports_where_its_time_went(store: LmdbLog) -> None:
    views = Views(store)
    _fill(views, 50)
    report = views.rebuild()
    assert set(report.phases) == {"decode", "fold", "snapshots", "sort", "write", "swap"}
    assert report.keys == 50 * 3 + 1 + 1 + 2  # records, names, order; the totals, one type count, its number, the last
    assert report.segments == 0


def test_a_rebuild_past_its_memory_bound_reports_its_segments_and_the_keys_they_wrote(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 10)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 20)
    views = Views(store)
    _fill(views, 50)
    report = views.rebuild()
    assert report.segments == 2  # 20 entities in memory, then 20 and 10 onto what was written
    assert report.keys == 50 * 3 + 3 * 2 + 2  # each part rewrites the totals and the type count; the first numbers


def test_a_rebuild_of_a_store_no_other_process_has_open_does_not_grow_its_file() -> None:
    directory = tempfile.mkdtemp()
    try:
        with LmdbLog(directory + "/store") as store:
            views = Views(store)
            _fill(views, 1000)
            _, mark = _pages(store)
            for _ in range(3):
                views.rebuild()  # the live views' pages take the new ones: no second copy
                assert _pages(store)[1] <= mark * 1.10
            assert len(names_of(views)) == 1000
    finally:
        shutil.rmtree(directory)


def names_of(views: Views) -> list[str]:
    with views.read() as graph:
        return [entity.name for entity in graph.entities("default")]


_KILLED_REBUILD = """
import importlib, os, signal, sys
from chronograph.eventstore import LmdbLog
from chronograph.projections import Views
importlib.import_module("chronograph.projections.live.rebuild").WRITE_CHUNK = 7
stage, count = sys.argv[2], int(sys.argv[3])
seen = []
def progress(name, done, total):
    seen.append(name)
    if name == stage and seen.count(name) == count:
        os.kill(os.getpid(), signal.SIGKILL)
with LmdbLog(sys.argv[1]) as store:
    views = Views(store)
    views.snapshots.spacing = 40
    views.rebuild(progress)
    os.kill(os.getpid(), signal.SIGKILL)  # after the swap, before closing
"""


@pytest.mark.parametrize("shared", [False, True], ids=["alone", "beside-another-process"])
@pytest.mark.parametrize(("stage", "count"), [("fold", 1), ("write", 1), ("write", 3), ("write", 9), ("end", 1)])
def test_a_rebuild_killed_at_any_point_leaves_a_store_that_opens_with_correct_views(
    tmp_path: Path, stage: str, count: int, shared: bool
) -> None:
    path = tmp_path / "store"
    with LmdbLog(path) as store:
        views = Views(store)
        _fill(views, 100)
        views.rebuild()
    with contextlib.ExitStack() as stack:
        if shared:  # another process has the store open: the live views stay in place meanwhile
            stack.enter_context(LmdbLog(path))
        child = subprocess.run([sys.executable, "-c", _KILLED_REBUILD, str(path), stage, str(count)], check=False)
        assert child.returncode == -signal.SIGKILL
    with LmdbLog(path) as store:
        views = Views(store)  # builds them if the rebuild had dropped them
        assert verify(views) == []
        assert len(names_of(views)) == 100
        views.rebuild()
        assert verify(views) == [] and len(names_of(views)) == 100


def test_a_rebuild_gives_back_the_store_pages_it_read_once_past_its_limit(
    store: LmdbLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    views = Views(store)
    _fill(views, 100)
    asked: list[int] = []
    monkeypatch.setattr(rebuilding.resident, "release", lambda above=0: asked.append(above) or 0)
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 10)
    monkeypatch.setattr(rebuilding, "WRITE_CHUNK", 10)
    views.rebuild()
    assert len(asked) > 20 and set(asked) == {rebuilding.MAPPED}  # after every batch folded, every chunk written
