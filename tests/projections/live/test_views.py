"""The live views: read-your-write, catch-up at open, rebuilds that swap under readers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from chronograph.eventstore import NO_STREAM, EntityCreated, LmdbLog, ObservationsAdded, StreamWrite
from chronograph.eventstore.keys import pack_u32
from chronograph.projections import Views, ViewsUnavailableError, new_entity_stream, tables
from chronograph.projections.tables import table_names

ROOT = Path(__file__).resolve().parents[3]


def create(views: Views, name: str, workspace: str = "default") -> str:
    stream = new_entity_stream()
    event = EntityCreated(workspace=workspace, name=name, entity_type="thing")
    views.transact(lambda tx, state: tx.append([StreamWrite(stream, [event], NO_STREAM)], actor="t"))
    return stream


def names(views: Views, workspace: str = "default") -> list[str]:
    with views.read() as graph:
        return [e.name for e in graph.entities(workspace)]


def test_a_write_is_readable_as_soon_as_it_returns(store: LmdbLog) -> None:
    views = Views(store)
    create(views, "ada")
    with views.read() as graph:
        assert graph.entity("default", "ada") is not None
        assert graph.position == store.head() == 1


def test_work_in_a_transaction_reads_the_views_of_that_transaction(store: LmdbLog) -> None:
    views = Views(store)
    create(views, "ada")

    def work(tx, state):  # type: ignore[no-untyped-def]
        assert state.entity("default", "ada") is not None
        stream = new_entity_stream()
        tx.append([StreamWrite(stream, [EntityCreated(workspace="default", name="bob", entity_type="x")])], actor="t")
        return state.entity("default", "bob")  # the inline hook already folded it

    assert views.transact(work) is not None


def test_a_store_without_views_builds_them_from_the_log_at_open(store_path: Path) -> None:
    with LmdbLog(store_path) as store:
        store.append([StreamWrite(f"e{i}", [EntityCreated(workspace="default", name=f"n{i}", entity_type="x")])
                      for i in range(5)], actor="t")
    with LmdbLog(store_path) as store:
        assert names(Views(store)) == [f"n{i}" for i in range(5)]


def test_views_behind_the_log_catch_up_at_open_and_report_progress(store_path: Path) -> None:
    with LmdbLog(store_path) as store:
        views = Views(store)
        stream = create(views, "ada")
    with LmdbLog(store_path) as store:  # a writer that bypassed the views
        store.append([StreamWrite(stream, [ObservationsAdded(observations=(f"o{i}",))]) for i in range(3)],
                     actor="t")
    seen: list[tuple[str, int, int]] = []
    with LmdbLog(store_path) as store:
        views = Views(store, progress=lambda stage, done, total: seen.append((stage, done, total)))
        assert views.behind() == 0
        with views.read() as graph:
            assert list(graph.entity("default", "ada").observations) == ["o0", "o1", "o2"]  # type: ignore[union-attr]
    assert seen[-1] == ("catch-up", 4, 4)


def test_a_plain_store_append_is_folded_by_the_inline_hook(store: LmdbLog) -> None:
    views = Views(store)
    stream = create(views, "ada")
    store.append([StreamWrite(stream, [ObservationsAdded(observations=("x",))])], actor="raw")
    with views.read() as graph:
        assert list(graph.entity("default", "ada").observations) == ["x"]  # type: ignore[union-attr]


def test_a_rebuild_swaps_generations_while_a_reader_keeps_its_snapshot(store: LmdbLog) -> None:
    views = Views(store)
    create(views, "ada")
    with views.read() as before:
        old_generation = before.tables.generation
        report = views.rebuild()
        assert [e.name for e in before.entities("default")] == ["ada"]
    assert report.generation == old_generation + 1 and report.events == 1
    create(views, "bob")
    assert names(views) == ["ada", "bob"]


def test_rebuilds_take_turns_in_two_slots_and_empty_the_one_they_retire(store_path: Path) -> None:
    with LmdbLog(store_path) as store:
        views = Views(store)
        create(views, "ada")
        for _ in range(5):
            views.rebuild()
        assert views.tables.generation == 6
        view_databases = {name for name in store.environment.database_names() if name.startswith("views.")}
        assert view_databases == set(table_names(1)) | set(table_names(2))
        retired = store.environment.open_db(table_names(5)[0], create=False)
        with store.environment.read() as txn:
            assert list(txn.cursor(retired)) == []
    with LmdbLog(store_path) as store:
        assert names(Views(store)) == ["ada"]


def test_a_rebuild_reports_its_progress(store: LmdbLog) -> None:
    views = Views(store)
    for i in range(3):
        create(views, f"n{i}")
    stages: list[str] = []
    views.rebuild(progress=lambda stage, done, total: stages.append(f"{stage}:{done}/{total}"))
    assert stages == ["fold:3/3", "write:0/3", "write:3/3"]


def test_views_of_another_format_are_built_beside_it_and_left_alone(store_path: Path) -> None:
    with LmdbLog(store_path) as store:
        views = Views(store)
        create(views, "ada")
        older = store.environment.open_db("views.1.entities")  # an older version's layout
        with store.environment.env.begin(write=True) as txn:
            txn.put(b"generation", pack_u32(1), db=views.pointer.db)
            txn.put(b"format", pack_u32(1), db=views.pointer.db)
            txn.put(b"its own", b"record", db=older)
            txn.delete(views.pointer.KEY, db=views.pointer.db)  # as if this format had never run here
    with LmdbLog(store_path) as store:
        views = Views(store)
        assert views.tables.generation == 1 and names(views) == ["ada"]
        older = store.environment.open_db("views.1.entities", create=False)
        with store.environment.read() as txn:
            assert txn.get(b"format", db=views.pointer.db) == pack_u32(1)
            assert txn.get(b"its own", db=older) == b"record"


def test_a_read_only_store_without_views_says_how_to_build_them(store_path: Path) -> None:
    LmdbLog(store_path).close()
    with LmdbLog(store_path, readonly=True) as store:
        with pytest.raises(ViewsUnavailableError, match="no views"):
            Views(store)


def test_a_read_only_store_reads_the_views_a_writer_built(store_path: Path) -> None:
    with LmdbLog(store_path) as store:
        create(Views(store), "ada")
    with LmdbLog(store_path, readonly=True) as store:
        assert names(Views(store)) == ["ada"]


def test_a_writer_follows_a_rebuild_done_by_another_process(store: LmdbLog) -> None:
    views = Views(store)
    create(views, "ada")
    script = textwrap.dedent(f"""
        from chronograph.eventstore import LmdbLog
        from chronograph.projections import Views
        with LmdbLog({str(store.path)!r}) as store:
            Views(store).rebuild()
    """)
    subprocess.run([sys.executable, "-c", script], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    create(views, "bob")
    assert views.tables.generation == 2
    assert names(views) == ["ada", "bob"]


ANOTHER_FORMAT = textwrap.dedent("""
    import sys
    from chronograph.projections import tables
    tables.VIEWS_FORMAT += 1  # a version of Chronograph with another view layout
    from chronograph.application import Memory
    with Memory(sys.argv[1]) as memory:
        memory.write("create_entities", {"entities": [{"name": sys.argv[2], "entityType": "t", "observations": []}]},
                     actor="v3")
        print(memory.views.tables.generation, [e.name for e in memory.read("read_graph", {}).entities])
""")


def test_two_view_formats_on_one_store_never_rebuild_each_other(store_path: Path) -> None:
    from chronograph.application import Memory

    def other_version(name: str) -> str:
        done = subprocess.run([sys.executable, "-c", ANOTHER_FORMAT, str(store_path), name],
                              check=True, capture_output=True, text=True)
        return done.stdout.strip()

    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]},
                     actor="v2")
    assert other_version("b") == "1 ['a', 'b']"  # built its own views once, from the one log
    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [{"name": "c", "entityType": "t", "observations": []}]},
                     actor="v2")
        assert memory.views.tables.generation == 1  # caught up, not rebuilt
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["a", "b", "c"]
    assert other_version("d") == "1 ['a', 'b', 'c', 'd']"


def test_a_rebuild_alone_empties_the_views_of_another_format_which_that_version_folds_again(
    store_path: Path,
) -> None:
    from chronograph.application import Memory

    def other_version(name: str) -> str:
        done = subprocess.run([sys.executable, "-c", ANOTHER_FORMAT, str(store_path), name],
                              check=True, capture_output=True, text=True)
        return done.stdout.strip()

    def theirs(memory: Memory) -> int:
        entries = 0
        with memory.views.env.read() as txn:
            for name in memory.views.env.database_names():
                if name.startswith(f"views.v{tables.VIEWS_FORMAT + 1}."):
                    entries += txn.stat(memory.views.env.open_db(name))["entries"]
        return entries

    assert other_version("a") == "1 ['a']"
    with Memory(store_path) as memory:
        assert theirs(memory) > 0
        memory.views.rebuild()
        assert theirs(memory) > 0  # a rebuild leaves them unless told
        assert memory.views.rebuild(others=True).others > 0  # no other process has the store open
        assert theirs(memory) == 0
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["a"]
    assert other_version("b") == "1 ['a', 'b']"


def test_the_most_connected_names_agree_between_the_live_views_and_a_past_graph(store: LmdbLog) -> None:
    from chronograph.eventstore import RelationCreated
    from chronograph.projections import graph_as_of, relation_stream

    views = Views(store)
    names = [f"N{i}" for i in range(12)]
    store.append([StreamWrite(new_entity_stream(), [EntityCreated(workspace="w", name=n, entity_type="t")], NO_STREAM)
                  for n in names], actor="t")
    pairs = [(names[i], names[j]) for i in range(12) for j in range(12) if i != j and (i * j) % 5 == 1]
    store.append([StreamWrite(relation_stream("w", a, "r", b), [RelationCreated(workspace="w", source=a, target=b,
                                                                                relation_type="r")])
                  for a, b in pairs], actor="t")
    with views.read() as live:
        now = live.most_connected("w", 5)
    assert now == graph_as_of(store, store.head()).most_connected("w", 5)
    assert [count for _, count in now] == sorted((count for _, count in now), reverse=True) and now[0][1] >= 4


def test_the_live_views_count_a_relation_from_a_name_to_itself_once_as_a_past_graph_does(store: LmdbLog) -> None:
    from chronograph.eventstore import RelationCreated
    from chronograph.projections import graph_as_of, relation_stream

    views = Views(store)
    store.append([StreamWrite(new_entity_stream(), [EntityCreated(workspace="w", name=n, entity_type="t")], NO_STREAM)
                  for n in ("A", "B")], actor="t")
    store.append([StreamWrite(relation_stream("w", a, kind, b), [RelationCreated(workspace="w", source=a, target=b,
                                                                                 relation_type=kind)])
                  for a, kind, b in (("A", "self", "A"), ("A", "k", "B"), ("B", "self", "B"), ("B", "again", "B"))],
                 actor="t")
    with views.read() as live:
        now = live.most_connected("w", 5)
    assert now == graph_as_of(store, store.head()).most_connected("w", 5)
    assert dict(now) == {"A": 2, "B": 3}  # before: A 3, B 5 (each self-relation as outgoing and incoming)


def test_a_read_only_open_refuses_views_another_version_left_behind_the_log_rather_than_answer_from_them(
    store_path: Path,
) -> None:
    from chronograph.application import Memory

    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]},
                     actor="v2")
    subprocess.run([sys.executable, "-c", ANOTHER_FORMAT, str(store_path), "b"], check=True, capture_output=True)
    refused = r"1 event\(s\) this version's views have not folded.*replay --rebuild"
    with pytest.raises(ViewsUnavailableError, match=refused):
        Memory(store_path, readonly=True)  # before: an export or a session's recall without "b", silently
    with Memory(store_path) as memory:  # a writable open folds what the other version wrote
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["a", "b"]
    with Memory(store_path, readonly=True) as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["a", "b"]


REBUILD = textwrap.dedent("""
    import sys
    from chronograph.application import Memory
    with Memory(sys.argv[1]) as memory:
        memory.views.rebuild()
""")


def test_a_read_only_open_takes_a_rebuild_another_process_swaps_in_meanwhile_for_what_it_is(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronograph.application import Memory

    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]},
                     actor="t")
    adopt, rebuilt = Views.adopt, []

    def adopt_then_rebuild_elsewhere(self: Views, generation: int) -> None:
        adopt(self, generation)
        if not rebuilt:  # the slot just adopted is emptied as the other process swaps its rebuild in
            rebuilt.append(subprocess.run([sys.executable, "-c", REBUILD, str(store_path)], check=True))

    monkeypatch.setattr(Views, "adopt", adopt_then_rebuild_elsewhere)
    with Memory(store_path, readonly=True) as memory:  # before: refused as views "another version" left behind
        assert rebuilt and [e.name for e in memory.read("read_graph", {}).entities] == ["a"]
        assert memory.views.tables.generation == 2


def test_servers_started_together_on_a_new_store_all_come_up_with_the_same_views(tmp_path: Path) -> None:
    """Each builds the views of a store that has none; whichever swaps in second takes the first's."""
    store, go = tmp_path / "store", tmp_path / "go"
    script = textwrap.dedent(f"""
        import os, sys, time
        while not os.path.exists({str(go)!r}):
            time.sleep(0.001)
        from chronograph.application import Memory
        with Memory({str(store)!r}, embeddings="off") as memory:
            memory.write("create_entities", {{"entities": [{{"name": sys.argv[1], "entityType": "t",
                                                          "observations": []}}]}}, actor="t")
    """)
    processes = [subprocess.Popen([sys.executable, "-c", script, f"E{i}"], cwd=ROOT, stderr=subprocess.PIPE,
                                  text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}) for i in range(4)]
    go.touch()
    errors = [p.communicate(timeout=120)[1] for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0, 0], errors
    with LmdbLog(store) as log:
        assert sorted(names(Views(log))) == ["E0", "E1", "E2", "E3"]
