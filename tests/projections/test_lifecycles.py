"""One fold, three lifecycles: inline views == rebuilt views == time travel == a plain model."""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from typing import Any

from chronograph.eventstore import LmdbLog, clock
from chronograph.projections import Views, graph_as_of
from freezegun import freeze_time
from hypothesis import given, settings
from hypothesis import strategies as st
from support.histories import Simulator, draw_history, graph_view
from support.views import raw_tables

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def play(views: Views, history: list[tuple[Any, ...]]) -> tuple[Simulator, list[tuple[int, int, dict]]]:
    """Apply `history` one command per operation, a second apart; return the model's
    snapshots as (position, recorded_at, snapshot) after each command that wrote."""
    simulator = Simulator()
    snapshots = []
    with freeze_time(START, real_asyncio=True) as frozen:
        for step, operation in enumerate(history):
            frozen.move_to(START + timedelta(seconds=step))
            now = clock.now_us()
            writes = simulator.decide(operation, now)
            if writes:
                views.transact(lambda tx, state, writes=writes: tx.append(writes, actor="test"))
                snapshots.append((simulator.position, now, simulator.snapshot()))
    return simulator, snapshots


@settings(max_examples=40, deadline=None)
@given(data=st.data(), steps=st.integers(min_value=1, max_value=40))
def test_inline_rebuilt_and_time_travel_views_agree_with_the_model(
    data: st.DataObject, steps: int
) -> None:
    history = draw_history(data, Simulator(), steps)
    directory = tempfile.mkdtemp()
    try:
        with LmdbLog(directory + "/store", sync=False) as store:
            views = Views(store)
            simulator, snapshots = play(views, history)

            with views.read() as graph:
                inline = graph_view(graph)
                assert graph.position == simulator.position
            assert inline == simulator.snapshot()

            inline_bytes = raw_tables(store, views.tables.generation)
            views.rebuild()
            assert raw_tables(store, views.tables.generation) == inline_bytes

            assert graph_view(graph_as_of(store, simulator.position)) == inline

            if snapshots:
                position, recorded_at, expected = data.draw(st.sampled_from(snapshots))
                assert graph_view(graph_as_of(store, position)) == expected
                with store.read() as reader:
                    at_time = reader.position_at(recorded_at)
                assert at_time == position
                assert graph_view(graph_as_of(store, at_time)) == expected
    finally:
        shutil.rmtree(directory)
