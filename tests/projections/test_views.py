"""The live views: read-your-write, catch-up at open, rebuilds that swap under readers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eventstore import NO_STREAM, EntityCreated, EventStore, ObservationsAdded, StreamWrite
from eventstore.keys import pack_u32
from projections import Views, ViewsUnavailableError, new_entity_stream, rebuild
from projections.tables import generations_on_disk

ROOT = Path(__file__).resolve().parents[2]


def create(views: Views, name: str, workspace: str = "default") -> str:
    stream = new_entity_stream()
    event = EntityCreated(workspace=workspace, name=name, entity_type="thing")
    views.transact(lambda tx, state: tx.append([StreamWrite(stream, [event], NO_STREAM)], actor="t"))
    return stream


def names(views: Views, workspace: str = "default") -> list[str]:
    with views.read() as graph:
        return [e.name for e in graph.entities(workspace)]


def test_a_write_is_readable_as_soon_as_it_returns(store: EventStore) -> None:
    views = Views(store)
    create(views, "ada")
    with views.read() as graph:
        assert graph.entity("default", "ada") is not None
        assert graph.position == store.head() == 1


def test_work_in_a_transaction_reads_the_views_of_that_transaction(store: EventStore) -> None:
    views = Views(store)
    create(views, "ada")

    def work(tx, state):  # type: ignore[no-untyped-def]
        assert state.entity("default", "ada") is not None
        stream = new_entity_stream()
        tx.append([StreamWrite(stream, [EntityCreated(workspace="default", name="bob", entity_type="x")])], actor="t")
        return state.entity("default", "bob")  # the inline hook already folded it

    assert views.transact(work) is not None


def test_a_store_without_views_builds_them_from_the_log_at_open(store_path: Path) -> None:
    with EventStore(store_path) as store:
        store.append([StreamWrite(f"e{i}", [EntityCreated(workspace="default", name=f"n{i}", entity_type="x")])
                      for i in range(5)], actor="t")
    with EventStore(store_path) as store:
        assert names(Views(store)) == [f"n{i}" for i in range(5)]


def test_views_behind_the_log_catch_up_at_open_and_report_progress(store_path: Path) -> None:
    with EventStore(store_path) as store:
        views = Views(store)
        stream = create(views, "ada")
    with EventStore(store_path) as store:  # a writer that bypassed the views
        store.append([StreamWrite(stream, [ObservationsAdded(observations=(f"o{i}",))]) for i in range(3)],
                     actor="t")
    seen: list[tuple[str, int, int]] = []
    with EventStore(store_path) as store:
        views = Views(store, progress=lambda stage, done, total: seen.append((stage, done, total)))
        assert views.behind() == 0
        with views.read() as graph:
            assert graph.entity("default", "ada").observations == ("o0", "o1", "o2")  # type: ignore[union-attr]
    assert seen[-1] == ("catch-up", 4, 4)


def test_a_plain_store_append_is_folded_by_the_inline_hook(store: EventStore) -> None:
    views = Views(store)
    stream = create(views, "ada")
    store.append([StreamWrite(stream, [ObservationsAdded(observations=("x",))])], actor="raw")
    with views.read() as graph:
        assert graph.entity("default", "ada").observations == ("x",)  # type: ignore[union-attr]


def test_a_rebuild_swaps_generations_while_a_reader_keeps_its_snapshot(store: EventStore) -> None:
    views = Views(store)
    create(views, "ada")
    with views.read() as before:
        old_generation = before.tables.generation
        report = rebuild(views)
        assert [e.name for e in before.entities("default")] == ["ada"]
    assert report.generation == old_generation + 1 and report.events == 1
    create(views, "bob")
    assert names(views) == ["ada", "bob"]


def test_the_old_generation_is_deleted_when_the_views_are_next_opened(store_path: Path) -> None:
    with EventStore(store_path) as store:
        views = Views(store)
        create(views, "ada")
        rebuild(views)
        assert generations_on_disk(store) == {1, 2}
    with EventStore(store_path) as store:
        assert names(Views(store)) == ["ada"]
        assert generations_on_disk(store) == {2}


def test_a_rebuild_reports_its_progress(store: EventStore) -> None:
    views = Views(store)
    for i in range(3):
        create(views, f"n{i}")
    stages: list[str] = []
    rebuild(views, progress=lambda stage, done, total: stages.append(f"{stage}:{done}/{total}"))
    assert stages == ["fold:3/3", "write:0/1", "write:1/1"]


def test_views_of_another_format_are_rebuilt_at_open(store_path: Path) -> None:
    with EventStore(store_path) as store:
        views = Views(store)
        create(views, "ada")
        with store.env.begin(write=True) as txn:
            txn.put(b"format", pack_u32(0), db=views.pointer.db)
    with EventStore(store_path) as store:
        views = Views(store)
        assert views.tables.generation == 2 and names(views) == ["ada"]


def test_a_read_only_store_without_views_says_how_to_build_them(store_path: Path) -> None:
    EventStore(store_path).close()
    with EventStore(store_path, readonly=True) as store:
        with pytest.raises(ViewsUnavailableError, match="no views"):
            Views(store)


def test_a_read_only_store_reads_the_views_a_writer_built(store_path: Path) -> None:
    with EventStore(store_path) as store:
        create(Views(store), "ada")
    with EventStore(store_path, readonly=True) as store:
        assert names(Views(store)) == ["ada"]


def test_a_writer_follows_a_rebuild_done_by_another_process(store: EventStore) -> None:
    views = Views(store)
    create(views, "ada")
    script = textwrap.dedent(f"""
        from eventstore import EventStore
        from projections import Views, rebuild
        with EventStore({str(store.path)!r}) as store:
            rebuild(Views(store))
    """)
    subprocess.run([sys.executable, "-c", script], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    create(views, "bob")
    assert views.tables.generation == 2
    assert names(views) == ["ada", "bob"]
