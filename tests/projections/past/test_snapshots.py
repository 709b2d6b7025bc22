"""Snapshots: time travel from a saved fold equals time travel from the start of the log."""

from __future__ import annotations

from datetime import timedelta

from chronograph.eventstore import LmdbLog, clock
from chronograph.projections import Views, graph_as_of
from chronograph.projections.past.snapshots import Snapshots, fold_to
from freezegun import freeze_time
from hypothesis import given, settings
from hypothesis import strategies as st
from support.histories import Simulator, draw_history, graph_view


def fill(views: Views, history: list) -> int:  # type: ignore[type-arg]
    simulator = Simulator()
    with freeze_time("2026-01-01T00:00:00Z") as frozen:
        for operation in history:
            frozen.tick(timedelta(seconds=1))
            writes = simulator.decide(operation, clock.now_us())
            if writes:
                views.transact(lambda tx, state, writes=writes: tx.append(writes, actor="t"))
    return simulator.position


@settings(max_examples=25, deadline=None)
@given(data=st.data(), steps=st.integers(min_value=5, max_value=40))
def test_as_of_from_snapshots_equals_as_of_from_the_start(tmp_path_factory, data, steps) -> None:  # type: ignore[no-untyped-def]
    directory = tmp_path_factory.mktemp("snap")
    with LmdbLog(directory / "store", sync=False) as store:
        views = Views(store)
        head = fill(views, draw_history(data, Simulator(), steps))
        snapshots = Snapshots(store.environment, spacing=3, keep=4)
        positions = data.draw(st.lists(st.integers(0, head), min_size=1, max_size=6), label="asked")
        for position in positions:  # each fold may save snapshots the next ones start from
            expected = graph_view(graph_as_of(store, position))
            assert graph_view(graph_as_of(store, position, snapshots)) == expected
        assert len(snapshots.positions()) <= 4


def test_a_rebuild_leaves_snapshots_that_time_travel_starts_from(store: LmdbLog) -> None:
    views = Views(store)
    views.snapshots.spacing = 10
    from chronograph.eventstore import EntityCreated, StreamWrite

    for i in range(35):
        views.transact(lambda tx, s, i=i: tx.append(
            [StreamWrite(f"e{i}", [EntityCreated(workspace="w", name=f"n{i}", entity_type="t")])], actor="t"))
    views.rebuild()
    assert views.snapshots.positions() == [10, 20, 30]  # round positions, below the head
    state = fold_to(store, views.snapshots, 25)
    assert state.position == 25 and len(state.entities) == 25
    assert graph_view(graph_as_of(store, 25, views.snapshots)) == graph_view(graph_as_of(store, 25))


def test_a_fold_answers_when_its_snapshot_cannot_be_kept(store: LmdbLog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A time-travel read on a full (or read-only) disk: keeping a snapshot is an optimisation."""
    from chronograph.eventstore import EntityCreated, StorageFullError, StreamWrite

    views = Views(store)
    for i in range(25):
        views.transact(lambda tx, s, i=i: tx.append(
            [StreamWrite(f"e{i}", [EntityCreated(workspace="w", name=f"n{i}", entity_type="t")])], actor="t"))
    snapshots = Snapshots(store.environment, spacing=10, keep=4)

    def full(*_: object) -> None:
        raise StorageFullError("the disk is full; nothing was written")

    monkeypatch.setattr(snapshots, "save_encoded", full)
    state = fold_to(store, snapshots, 25)
    assert state.position == 25 and len(state.entities) == 25 and snapshots.positions() == []
