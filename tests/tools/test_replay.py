"""tools/replay.py: the graph at a moment, diffs, rebuild and verify, through main([...])."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lmdb
import pytest
from chronograph.application import Memory
from chronograph.application.engine.semantic import Semantic
from chronograph.eventstore import LmdbLog, StoreCorruptError
from chronograph.projections import Views
from chronograph.projections.tables import table_names
from chronograph.tools.replay import main
from support.embedders import Words


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_at_a_time_prints_the_graph_then_as_read_graph_json(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = run(capsys, "--store", str(history_store), "--at", "2026-03-01T10:30:00Z", "--json")
    graph = json.loads(out)
    assert code == 0 and set(graph) == {"entities", "relations"}
    assert [(e["name"], e["entityType"]) for e in graph["entities"]] == [("Ada", "person"), ("Bob", "person")]
    assert [(r["from"], r["to"]) for r in graph["relations"]] == [("Bob", "Ada")]


def test_at_a_position_prints_a_table(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = run(capsys, "--store", str(history_store), "--position", "1")
    assert code == 0
    assert "entities as of 1 (1)" in out and "Ada" in out and "Bob" not in out


def test_one_entity_as_of_a_moment(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = run(capsys, "--store", str(history_store), "--at", "2026-03-01T11:30:00Z", "--entity", "Ada", "--json")
    assert [e["entityType"] for e in json.loads(out)["entities"]] == ["countess"]
    code, out = run(capsys, "--store", str(history_store), "--at", "2026-03-01T12:30:00Z", "--entity", "Ada")
    assert "no entity 'Ada'" in out


def test_a_diff_lists_what_was_created_changed_and_deleted(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = run(capsys, "--store", str(history_store), "--diff", "2026-03-01T09:00:00Z",
                    "2026-03-01T11:30:00Z", "--json")
    changes = {(c["change"], c["kind"], c["what"]) for c in json.loads(out)}
    assert changes == {("created", "entity", "Ada"), ("created", "entity", "Bob"),
                       ("created", "relation", "Bob -[knows]-> Ada")}
    code, out = run(capsys, "--store", str(history_store), "--diff", "2026-03-01T10:00:00Z",
                    "2026-03-01T12:00:00Z", "--json")
    assert [(c["change"], c["what"]) for c in json.loads(out)] == [
        ("deleted", "Ada"), ("deleted", "Bob -[knows]-> Ada")
    ]
    code, out = run(capsys, "--store", str(history_store), "--diff", "3", "4")
    assert "changed" in out and "type person -> countess" in out


def test_verify_agrees_with_healthy_views_and_fails_on_damaged_ones(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = run(capsys, "--store", str(history_store), "--verify")
    assert code == 0 and "agree" in out
    with LmdbLog(history_store) as store:
        generation = Views(store).tables.generation
        entities = store.environment.open_db(table_names(generation)[0], create=False)
        with store.environment.env.begin(write=True) as txn:
            key, _ = next(iter(txn.cursor(entities)))
            txn.delete(key, db=entities)
    code, out = run(capsys, "--store", str(history_store), "--verify")
    assert code == 1 and "entities:" in out and "is missing" in out


def test_rebuild_repairs_the_views(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out = run(capsys, "--store", str(history_store), "--rebuild")
    assert code == 0 and "rebuilt generation 2" in out
    assert run(capsys, "--store", str(history_store), "--verify")[0] == 0


def test_a_rebuild_past_its_memory_bound_says_so_and_leaves_views_that_agree(  # type: ignore[no-untyped-def]
        history_store: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilding = importlib.import_module("chronograph.projections.live.rebuild")
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 1)
    monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 2)  # Ada and Bob in memory, the rest onto the views
    code, out = run(capsys, "--store", str(history_store), "--rebuild")
    assert code == 0 and "segment(s) folded onto the views written, to keep its memory bounded" in out
    assert run(capsys, "--store", str(history_store), "--verify")[0] == 0


def test_a_rebuild_where_there_is_no_store_refuses_in_one_line_and_creates_none(  # type: ignore[no-untyped-def]
    tmp_path: Path, capsys
) -> None:
    missing = tmp_path / "mistyped" / "store"
    code = main(["--store", str(missing), "--rebuild"])
    assert code == 2 and capsys.readouterr().err.strip() == f"chronograph replay: there is no store at {missing}"
    assert not (tmp_path / "mistyped").exists()


def test_rebuild_keeps_the_search_index_and_embeds_the_store_again(  # type: ignore[no-untyped-def]
    history_store: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHRONOGRAPH_EMBEDDINGS", "local")
    code, out = run(capsys, "--store", str(history_store), "--rebuild")
    assert code == 0 and "1 search index(es); embeddings rebuilt" in out
    with Memory(history_store, embeddings="local") as memory:
        assert memory.semantic is not None
        with memory.views.search.lock, memory.views.snapshot() as snapshot:
            assert memory.semantic.vectors.checkpoint(snapshot.graph.txn) == memory.log.head()
            assert memory.views.search.current(snapshot.log, snapshot.graph, "default") is not None
        assert memory.views.search.due(every=1) == []  # loaded from the image the rebuild kept
        [bob] = memory.read("semantic_search", {"query": "bob"}).entities  # type: ignore[attr-defined]
        assert bob.name == "Bob"


def test_a_missing_store_is_one_clear_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["--store", str(tmp_path / "nothing"), "--position", "1"])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"chronograph replay: there is no store at {tmp_path / 'nothing'}"


@pytest.mark.wire
def test_a_server_keeps_working_through_many_rebuilds_run_beside_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Memory(store) as server:  # the long-lived process
        for i in range(12):  # each adopted generation once cost the server 7 named databases, of 64
            server.write("create_entities", {"entities": [{"name": f"n{i}", "entityType": "t", "observations": []}]},
                         actor="t")
            subprocess.run([sys.executable, "-m", "chronograph", "replay", "--store", str(store), "--rebuild"],
                           check=True, capture_output=True)
            assert [e.name for e in server.read("read_graph", {}).entities][-1] == f"n{i}"  # type: ignore[attr-defined]
        assert server.views.tables.generation == 13


def test_verify_names_every_damaged_position_of_the_log(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    data = (history_store / "data.mdb").read_bytes()
    (history_store / "data.mdb").write_bytes(data.replace(b"countess", b"cOuntess"))
    code, out = run(capsys, "--store", str(history_store), "--verify")
    assert code == 1 and "the log is damaged" in out and "position 4" in out


def test_verify_names_damage_in_the_newest_event_and_reading_it_advises_verify_on_this_store(
        tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store"
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": ["x"]}]},
                     actor="t")
        memory.write("add_observations", {"observations": [{"entityName": "a", "contents": ["zanzibar"]}]},
                     actor="t")
    data = (store / "data.mdb").read_bytes()
    (store / "data.mdb").write_bytes(data.replace(b"zanzibar", b"zAnzibar"))  # the log's last event, and a view
    code, out = run(capsys, "--store", str(store), "--verify")  # the open read the newest event whole, and refused
    assert code == 1 and "the log is damaged" in out and "position 2" in out
    assert run(capsys, "--store", str(store), "--at", "2999-01-01")[0] == 2
    from chronograph.tools.cli import main as cli

    assert cli(["backup", "--store", str(store), "-o", str(tmp_path / "b.chronograph")]) == 2  # no backup of damage
    assert not (tmp_path / "b.chronograph").exists()
    with pytest.raises(StoreCorruptError) as refused:  # any other open refuses it, saying how to see the damage
        Memory(store, readonly=True)
    assert f"`chronograph replay --verify --store {store}`" in str(refused.value)


def _index(store: Path, change: Callable[[lmdb.Transaction, Any, list[bytes]], None]) -> None:
    """Change the stream index of `store` by hand: `change(txn, index, keys)`, the keys in order."""
    env = lmdb.open(str(store), max_dbs=64)
    try:
        index = env.open_db(b"streams")
        with env.begin(write=True) as txn:
            change(txn, index, [bytes(key) for key in txn.cursor(index).iternext(values=False)])
    finally:
        env.close()


def test_verify_finds_a_stream_index_that_lost_a_stream_s_last_key(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    with LmdbLog(history_store) as log, log.read() as reader:  # Ada's stream: created, updated, deleted
        ada = next(e.stream for e in reader.all() if e.version == 3)
        last = reader.dbs.layout.key(reader.dbs.key(ada), 3)
    _index(history_store, lambda txn, index, keys: txn.delete(last, db=index))
    code, out = run(capsys, "--store", str(history_store), "--verify")  # before: "the views agree with the log"
    assert code == 1 and "index of streams disagrees" in out and "chronograph copy" in out
    assert "the event at position 6 (version 3 of its stream) has no key" in out


def test_verify_finds_a_stream_index_key_that_points_at_another_event(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    def swap(txn: lmdb.Transaction, index: Any, keys: list[bytes]) -> None:
        first, second = txn.get(keys[0], db=index), txn.get(keys[1], db=index)
        txn.put(keys[0], second, db=index)
        txn.put(keys[1], first, db=index)

    _index(history_store, swap)
    code, out = run(capsys, "--store", str(history_store), "--verify")
    assert code == 1 and out.count("has a key that points at position") == 2


def test_a_truncated_store_is_one_clear_line_not_a_crash(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import os

    os.truncate(history_store / "data.mdb", 4096 * 3)
    assert main(["--store", str(history_store), "--verify"]) == 2
    assert "truncated" in capsys.readouterr().err
    done = subprocess.run([sys.executable, "-m", "chronograph", "serve", "--store", str(history_store)],
                          input=b"", capture_output=True)
    assert done.returncode == 2 and b"truncated" in done.stderr


def test_a_moment_past_the_end_of_the_log_says_where_the_log_ends(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--store", str(history_store), "--position", "999", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["entities"][0]["name"] == "Bob"  # the graph where the log ends
    assert err == ("chronograph replay: position 999 is past the end of the log: it ends at position 6 "
                   "(2026-03-01T12:00:00.000000Z), so this is the graph as it stands there\n")
    assert main(["--store", str(history_store), "--diff", "1", "2999-01-01T00:00:00Z"]) == 0
    assert "2999-01-01T00:00:00Z has not happened yet: it ends at position 6" in capsys.readouterr().err
    assert main(["--store", str(history_store), "--position", "6"]) == 0
    assert main(["--store", str(history_store), "--at", "2026-03-02T00:00:00Z"]) == 0  # after the end, but past
    assert capsys.readouterr().err == ""


def test_a_rebuild_on_an_unchanged_model_embeds_nothing_again_and_shows_progress_when_it_must(  # type: ignore[no-untyped-def]
    history_store: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = Words()
    monkeypatch.setattr(importlib.import_module("chronograph.application.engine.service"), "open_embedder",
                        lambda *args, **kwargs: words)
    stages: list[str] = []

    class Recorded:
        def __init__(self, stream: object = None) -> None:
            pass

        def __call__(self, stage: str, done: int, total: int) -> None:
            stages.append(stage)

        def finish(self) -> None:
            pass

    monkeypatch.setattr(importlib.import_module("chronograph.tools.replay"), "Progress", Recorded)
    monkeypatch.setenv("CHRONOGRAPH_EMBEDDINGS", "local")
    code, out = run(capsys, "--store", str(history_store), "--rebuild")
    assert code == 0 and "embeddings rebuilt (1 brought up to date" in out
    assert words.texts and "embedding" in stages  # Bob, the one live entity, with progress
    words.texts.clear()
    for _ in range(2):
        code, out = run(capsys, "--store", str(history_store), "--rebuild")
        assert code == 0 and "embeddings rebuilt (0 brought up to date" in out
    assert words.texts == []  # same model, same entity versions: every vector was kept
    with Memory(history_store) as memory:
        memory.write("add_observations", {"observations": [{"entityName": "Bob", "contents": ["sails"]}]}, actor="t")
    code, out = run(capsys, "--store", str(history_store), "--rebuild")
    assert "embeddings rebuilt (1 brought up to date" in out and len(words.texts) == 1 and "sails" in words.texts[0]


class Elsewhere(Words):
    """A model served through an endpoint, say, which the rebuild has no way to reach."""

    model = "an-endpoint-model"


def embedded_by(memory: Memory, embedder: Words) -> tuple[int, int]:
    """(entities `embedder`'s model holds a vector of, its checkpoint)."""
    semantic = Semantic(memory.views, embedder, memory.lock)
    with memory.lock, memory.views.snapshot() as snapshot:
        streams = [e.stream for e in snapshot.graph.entities("default")]
        return len(semantic.vectors.versions(snapshot.graph.txn, streams)), semantic.vectors.checkpoint(
            snapshot.graph.txn)


def test_a_rebuild_leaves_another_model_s_vectors_as_they_were(  # type: ignore[no-untyped-def]
        history_store: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(history_store) as memory:
        Semantic(memory.views, Elsewhere(), memory.lock).catch_up()
        kept = embedded_by(memory, Elsewhere())
    assert kept[0] > 0
    monkeypatch.setattr(importlib.import_module("chronograph.application.engine.service"), "open_embedder",
                        lambda *args, **kwargs: Words())
    monkeypatch.setenv("CHRONOGRAPH_EMBEDDINGS", "local")
    code, out = run(capsys, "--store", str(history_store), "--rebuild")
    assert code == 0 and "with test-words; other models' vectors left as they were" in out
    with Memory(history_store) as memory:
        assert embedded_by(memory, Elsewhere()) == kept  # its server embeds nothing again


def test_a_rebuild_refuses_a_term_weights_switch_it_cannot_read(  # type: ignore[no-untyped-def]
        history_store: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("CHRONOGRAPH_TERM_WEIGHTS", "OFF")
    code = main(["--store", str(history_store), "--rebuild"])
    assert code == 2 and "$CHRONOGRAPH_TERM_WEIGHTS is 'OFF': use on or off" in capsys.readouterr().err
