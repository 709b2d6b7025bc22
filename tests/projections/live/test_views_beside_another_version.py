"""A server's views beside another version of Chronograph writing to the same store folder (an
upgrade with a client's old server still running): what the other writes, forgets or empties
reaches this one's reads, and what this one forgets leaves the other's views refusing, not empty."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import zstandard
from chronograph.application import Memory
from chronograph.projections import tables

ROOT = Path(__file__).resolve().parents[3]

OTHER_VERSION = textwrap.dedent("""
    import importlib, json, sys
    from chronograph.projections import tables
    tables.VIEWS_FORMAT += 1  # a version of Chronograph with another view layout
    from chronograph.projections.live import derived, views
    from chronograph.projections.past.snapshots import Snapshots
    from chronograph.projections.search.indexes import SearchIndex
    Snapshots.NAME, SearchIndex.NAME = "snapshots.other", "search.other"  # derived data of its own too
    importlib.reload(derived)
    views.foreign = derived.foreign
    if sys.argv[2] == "older":  # one made before this version: it empties nothing of this version's
        views.foreign = lambda name: False
        views.retire = lambda txn, databases, pointer: None
    from chronograph.application import Memory
    with Memory(sys.argv[1]) as memory:
        for tool, arguments in json.loads(sys.argv[3]):
            memory.call(tool, arguments, actor="other")
        print(json.dumps([e.name for e in memory.read("read_graph", {}).entities]))
""")


def other_version(store: Path, calls: list[tuple[str, dict[str, Any]]], kind: str = "other") -> list[str]:
    """Run `calls` in a process of another view format (`kind` "older": one that empties none of
    this version's databases); return the names its read_graph answers after them."""
    done = subprocess.run([sys.executable, "-c", OTHER_VERSION, str(store), kind, json.dumps(calls)], check=True,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return list(json.loads(done.stdout))


def entity(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "person", "observations": list(observations)}


def names(answer: Any) -> list[str]:
    return [e.name for e in answer.entities]


def found(store: Path, needle: bytes) -> int:
    """How often `needle` is in the store's data file, in its bytes or in the zstd frames it holds
    (not its lock file: closing a file this process has open releases its locks on it)."""
    data = (store / "data.mdb").read_bytes()
    hits = data.count(needle)
    at = data.find(b"\x28\xb5\x2f\xfd")
    while at >= 0:
        try:
            hits += zstandard.ZstdDecompressor().decompressobj().decompress(data[at:at + (1 << 20)]).count(needle)
        except zstandard.ZstdError:
            pass
        at = data.find(b"\x28\xb5\x2f\xfd", at + 4)
    return hits


def test_a_running_server_answers_what_another_version_writes_before_it_writes_itself(store_path: Path) -> None:
    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [entity("Ada", "born 1815")]}, actor="t")
        other_version(store_path, [("create_entities", {"entities": [entity("Note", "from the other server")]}),
                                   ("add_observations", {"observations": [
                                       {"entityName": "Ada", "contents": ["first programmer"]}]})], "older")
        assert names(memory.read("read_graph", {})) == ["Ada", "Note"]  # before: ["Ada"], until it wrote
        ada = memory.read("open_nodes", {"names": ["Ada"]}).entities[0]
        assert ada.observations == ["born 1815", "first programmer"]
        assert names(memory.read("search_nodes", {"query": "other server"})) == ["Note"]


def test_a_read_beside_a_thread_holding_the_store_s_lock_answers_without_waiting_and_that_thread_folds(
    store_path: Path,
) -> None:
    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [entity("Ada")]}, actor="t")
        other_version(store_path, [("create_entities", {"entities": [entity("Note")]})], "older")
        holding, done, folded = threading.Event(), threading.Event(), []

        def hold() -> None:
            with memory.lock:  # (a write, or a read that takes it, of another client)
                holding.set()
                done.wait(60)
                folded.append(names(memory.read("read_graph", {})))  # it folds, under the lock it holds

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(60)
        try:  # a read that waited for the lock would answer after it, with "Note"
            assert names(memory.read("read_graph", {})) == ["Ada"]
        finally:
            done.set()
            holder.join(60)
        assert folded == [["Ada", "Note"]]


def test_a_running_server_whose_views_another_version_emptied_answers_the_whole_graph_not_an_empty_one(
    store_path: Path,
) -> None:
    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [entity("Ada"), entity("Bob")]}, actor="t")

        def empty(txn: Any) -> None:  # as an older version's forget empties the databases it does not know
            for db in memory.views.tables.databases():
                txn.drop(db, delete=False)

        memory.views.env.write(empty)
        assert names(memory.read("read_graph", {})) == ["Ada", "Bob"]  # before: []
        assert memory.read("get_graph_summary", {}).entities == 2


def test_an_older_version_s_forget_leaves_nothing_of_the_entity_in_a_running_server_s_answers_or_file(
    store_path: Path,
) -> None:
    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [entity("Leaky", "LEAKYSECRET ssn 078"), entity("Kept", "ssn")]},
                     actor="t")
        memory.views.snapshots.spacing = 1
        memory.read("read_graph", {"asOf": memory.log.head()})  # a snapshot of the views, kept in the store
        assert names(memory.read("search_nodes", {"query": "LEAKYSECRET"})) == ["Leaky"]
        memory.keep_images_now()  # and the word index's image
        assert other_version(store_path, [("forget_entity", {"name": "Leaky", "reason": "asked"})], "older") == [
            "Kept"]
        assert memory.read("open_nodes", {"names": ["Leaky"]}).entities == []  # before: Leaky, until it wrote
        assert memory.read("search_nodes", {"query": "LEAKYSECRET"}).entities == []
        assert found(store_path, b"LEAKYSECRET") == 0  # before: in its views' pages until it was reopened
        with memory.views.env.read() as txn:
            assert memory.views.pointer.erasures(txn) == 1


def test_a_server_that_writes_first_after_an_older_version_s_forget_keeps_nothing_of_the_entity(
    store_path: Path,
) -> None:
    with Memory(store_path) as memory:
        memory.write("create_entities", {"entities": [entity("Leaky", "LEAKYSECRET ssn 078")]}, actor="t")
        assert names(memory.read("search_nodes", {"query": "LEAKYSECRET"})) == ["Leaky"]
        memory.keep_images_now()
        other_version(store_path, [("forget_entity", {"name": "Leaky", "reason": "asked"})], "older")
        memory.write("create_entities", {"entities": [entity("After")]}, actor="t")
        assert found(store_path, b"LEAKYSECRET") == 0  # before: in the image and freed pages of its views
        assert names(memory.read("read_graph", {})) == ["After"]


def test_a_forget_retires_another_format_s_views_whole_so_its_running_server_refuses_rather_than_answer_nothing(
    store_path: Path,
) -> None:
    other = f"v{tables.VIEWS_FORMAT + 1}.generation".encode()
    assert other_version(store_path, [("create_entities", {"entities": [entity("Ada"), entity("Bob")]})]) == [
        "Ada", "Bob"]
    with Memory(store_path) as memory:
        with memory.views.env.read() as txn:
            assert txn.get(other, db=memory.views.pointer.db) is not None
        memory.write("forget_entity", {"name": "Ada", "reason": "asked"}, actor="t")
        with memory.views.env.read() as txn:  # an emptied slot it still pointed to read as an empty graph
            assert txn.get(other, db=memory.views.pointer.db) is None
            assert txn.get(memory.views.pointer.KEY, db=memory.views.pointer.db) is not None
    assert other_version(store_path, []) == ["Bob"]  # opened again, it builds its views anew
