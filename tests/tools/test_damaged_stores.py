"""Damaged stores: a flipped byte in a view record or in the log is found, never served, and
every surface (tools, CLI commands, the explorer) answers with a clear error naming the
store and the fix, never a traceback.

A byte is flipped in one stored value, chosen by the seed among the views' records and
indexes, the snapshots, the search images and the log (as a disk's bit rot would, through
LMDB, so that the value's own bytes change and nothing else). Then every surface runs;
each answer is the one the undamaged store gives, or a clear error.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lmdb
import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application import explorer as pages
from chronograph.application.errors import ChronographError
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.keys import stream_key
from chronograph.eventstore.lmdb.streamindex import NARROW
from chronograph.projections import ProjectionError
from chronograph.projections.past.snapshots import Snapshots, fold_to
from chronograph.tools.cli import main as cli

SEEDS = int(os.environ.get("CHRONOGRAPH_DAMAGE_SEEDS", "60"))
DAMAGEABLE = ("views.", "log", "snapshots.", "search.")
"""The databases whose values the seeds damage (prefixes of their names)."""
FIXES = ("chronograph replay --rebuild", "chronograph replay --verify", "restore from a backup")

TOOLS: dict[str, dict[str, Any]] = {
    "open_nodes": {"names": ["Ada", "E3"]},
    "read_graph": {},
    "search_nodes": {"query": "alpha"},
    "get_graph_summary": {},
    "get_entity_history": {"name": "E3"},
    "get_related_entities": {"name": "E1"},
    "get_audit_log": {},
    "list_workspaces": {},
    "read_graph then": {"asOf": 27},
}


def make(store: Path) -> None:
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["math", "alpha engine notes"]},
            *({"name": f"E{i}", "entityType": "thing", "observations": [f"obs {i} alpha", f"note {i}"]}
              for i in range(20))]}, actor="t")
        memory.write("create_relations", {"relations": [
            {"from": "E1", "to": f"E{i}", "relationType": "knows"} for i in range(2, 10)]}, actor="t")
        memory.write("update_context", {"activeTask": "testing damage"}, actor="t")
        memory.write("add_observations", {"observations": [{"entityName": "E3", "contents": ["later"]}]},
                     actor="t")
        memory.read("search_nodes", {"query": "alpha"})  # a search image
        fold_to(memory.log, Snapshots(memory.views.env, spacing=4), memory.log.head())  # snapshots of the past


def plain(answer: Any, store: Path) -> Any:
    """An answer as JSON, the store's own path (the overview names it) left out, and the size of
    its file (`storeBytes`): making again what damage cost (a search image) may take a page more
    on disk, which is the file's size, not the graph's answer."""
    found = json.loads(msgspec.json.encode(answer).decode().replace(str(store), "STORE"))
    if isinstance(found, dict):
        found.pop("storeBytes", None)
    return found


def answers(store: Path) -> dict[str, Any]:
    """Each tool's answer (JSON) or the error it raised (as the class and the message)."""
    found: dict[str, Any] = {}
    try:
        with Memory(store, sync=False) as memory:
            for tool, arguments in TOOLS.items():
                try:
                    found[tool] = plain(memory.read(tool.split()[0], arguments), store)
                except ChronographError as error:
                    found[tool] = error
            for page, ask in PAGES.items():
                try:
                    found[page] = plain(ask(memory), store)
                except (ChronographError, EventStoreError, ProjectionError) as error:  # what the endpoint catches
                    found[page] = error
    except (EventStoreError, ProjectionError, ChronographError) as error:  # the store cannot even be opened
        found["open"] = error
    return found


PAGES: dict[str, Callable[[Memory], Any]] = {
    "page overview": lambda memory: pages.overview(memory, "default"),
    "page graph": lambda memory: pages.graph(memory, "default"),
    "page around E1": lambda memory: pages.graph(memory, "default", around="E1"),
    "page entity E3": lambda memory: pages.entity_page(memory, "default", "E3"),
    "page audit": lambda memory: pages.audit(memory, "default"),
}
"""The explorer's answers (what its endpoints return), read through the core as they are."""


def values(store: Path) -> list[tuple[bytes, bytes]]:
    """(database, key) of every value the seeds may damage."""
    env = lmdb.open(str(store), max_dbs=64, readonly=True, lock=False)
    try:
        found = []
        with env.begin() as txn:
            names = [bytes(name) for name, _ in txn.cursor()]
            for name in names:
                if name.decode().startswith(DAMAGEABLE):
                    db = env.open_db(name, txn=txn, create=False)
                    found += [(name, bytes(key)) for key, value in txn.cursor(db) if value]  # a byte to flip
        return found
    finally:
        env.close()


def flip(store: Path, name: bytes, key: bytes, rng: random.Random) -> None:
    """Change one byte of one stored value, as bit rot on the disk would."""
    env = lmdb.open(str(store), max_dbs=64)
    try:
        db = env.open_db(name)
        with env.begin(write=True) as txn:
            value = bytearray(txn.get(key, db=db))
            value[rng.randrange(len(value))] ^= rng.randrange(1, 256)
            txn.put(key, bytes(value), db=db)
    finally:
        env.close()


def clear(error: BaseException, store: Path) -> bool:
    """Whether an error names the store and what to do."""
    text = str(error)
    return str(store) in text and any(fix in text for fix in FIXES)


def test_a_flipped_byte_in_any_view_record_or_log_event_is_a_clear_error_or_the_right_answer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base"
    make(base)
    expected = answers(base)
    assert not any(isinstance(answer, BaseException) for answer in expected.values())
    assert cli(["export", "--store", str(base), "-o", str(tmp_path / "expected.jsonl")]) == 0
    damageable = values(base)
    assert {name.decode().split(".")[0] for name, _ in damageable} >= {"views", "log", "snapshots", "search"}
    rng = random.Random(2027)
    caught: dict[str, int] = {"right answers": 0, "clear errors": 0}
    for seed in range(SEEDS):
        store = tmp_path / f"damaged-{seed}"
        shutil.copytree(base, store)
        name, key = rng.choice(damageable)
        flip(store, name, key, rng)
        where = f"seed {seed}: {name.decode()}"
        for surface, answer in answers(store).items():
            if isinstance(answer, BaseException):
                assert clear(answer, store), f"{where}, {surface}: {answer}"
                caught["clear errors"] += 1
            else:
                assert answer == expected[surface], f"{where}, {surface}: a wrong answer served as truth"
                caught["right answers"] += 1
        capsys.readouterr()
        for command in (["export", "-o", str(tmp_path / f"export-{seed}.jsonl")], ["replay", "--verify"],
                        ["audit"], ["replay", "--position", "3", "--json"]):
            code = cli([*command[:1], "--store", str(store), *command[1:]])  # a traceback fails the test
            err = capsys.readouterr().err
            assert code in (0, 1, 2), f"{where}, {command[0]}: exit {code}"
            if code == 2:
                assert str(store) in err and any(fix in err for fix in FIXES), f"{where}, {command}: {err}"
            if command[0] == "export" and code == 0:
                assert (tmp_path / f"export-{seed}.jsonl").read_bytes() == (tmp_path / "expected.jsonl").read_bytes()
        shutil.rmtree(store)
    assert caught["clear errors"] and caught["right answers"]


def test_damaged_views_name_the_store_and_the_rebuild_and_a_rebuild_repairs_them(tmp_path: Path) -> None:
    store = tmp_path / "store"
    make(store)
    name = next(n for n, _ in values(store) if n.endswith(b".entities"))
    key = next(k for n, k in values(store) if n == name)
    flip(store, name, key, random.Random(1))
    with Memory(store) as memory, pytest.raises(ChronographError) as raised:
        memory.read("read_graph", {})
    assert f"the views of the store at {store} are damaged" in str(raised.value)
    assert f"`chronograph replay --rebuild --store {store}`" in str(raised.value)
    assert cli(["replay", "--rebuild", "--store", str(store)]) == 0
    with Memory(store) as memory:
        assert len(memory.read("read_graph", {}).entities) == 21  # type: ignore[attr-defined]


@pytest.mark.wire
def test_the_explorer_answers_damaged_views_with_the_error_not_a_crash(tmp_path: Path) -> None:
    from support.http import request, start

    store = tmp_path / "store"
    make(store)
    name = next(n for n, _ in values(store) if n.endswith(b".entities"))
    flip(store, name, next(k for n, k in values(store) if n == name), random.Random(1))
    for base in start(tmp_path, None, store=str(store)):
        code, body = request(base + "/ui/api/graph")
        assert code == 503 and f"`chronograph replay --rebuild --store {store}`" in body["error"]
        assert request(base + "/health")[0] == 200


def test_a_damaged_stream_index_is_found_not_served(tmp_path: Path) -> None:
    store = tmp_path / "store"
    make(store)
    with Memory(store) as memory, memory.views.read() as graph:
        streams = [graph.entity("default", name).stream for name in ("E3", "Ada")]  # type: ignore[union-attr]
    env = lmdb.open(str(store), max_dbs=64)
    try:  # version 1 of E3 now points at Ada's first event
        index = env.open_db(b"streams")
        with env.begin(write=True) as txn:
            first = [NARROW.key(stream_key(stream), 1) for stream in streams]  # store format 6's keys
            txn.put(first[0], txn.get(first[1], db=index), db=index)
    finally:
        env.close()
    with Memory(store) as memory, pytest.raises(ChronographError) as raised:
        memory.read("get_entity_history", {"name": "E3"})
    assert "the stream index is damaged" in str(raised.value) and str(store) in str(raised.value)


READS = """
import sys
from chronograph.application import Memory
from chronograph.application.errors import ChronographError
from chronograph.eventstore import EventStoreError
from chronograph.projections import ProjectionError
try:
    with Memory(sys.argv[1], sync=False) as memory:
        for tool, arguments in {tools!r}.items():
            try:
                memory.read(tool.split()[0], arguments)
            except ChronographError as error:
                print(error, file=sys.stderr)
except (EventStoreError, ProjectionError, ChronographError) as error:
    print(error, file=sys.stderr)
    raise SystemExit(2)
"""


def test_a_page_whose_node_offsets_point_past_the_file_s_end_does_not_kill_its_reader(tmp_path: Path) -> None:
    """LMDB does not check a leaf's table of node offsets: one pointing past the page sent the
    reader past the end of the file, which killed it (SIGBUS). Writers keep zeros there."""
    import struct
    import subprocess
    import sys

    store = tmp_path / "store"
    make(store)
    with lmdb.open(str(store), readonly=True, lock=False) as env:
        page_size, last = env.stat()["psize"], env.info()["last_pgno"]
    data = bytearray((store / "data.mdb").read_bytes())
    leaves = [n for n in range(2, last + 1) if struct.unpack_from("<H", data, n * page_size + 10)[0] & 0x02
              and struct.unpack_from("<H", data, n * page_size + 12)[0] > 16]  # a leaf with nodes
    for page in leaves[-3:]:  # near the end: an offset past the page is past the file's last page
        data[page * page_size + 17] ^= 0xC0  # the high byte of its first node's offset: 48 KiB further
    (store / "data.mdb").write_bytes(bytes(data))
    done = subprocess.run([sys.executable, "-c", READS.format(tools=TOOLS), str(store)], capture_output=True,
                          text=True, timeout=120)
    assert "Traceback" not in done.stderr and done.returncode in (0, 1, 2), (done.returncode, done.stderr[-800:])


@pytest.mark.slow
def test_bytes_flipped_anywhere_in_the_file_never_end_in_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    base = tmp_path / "base"
    make(base)
    with lmdb.open(str(base), readonly=True, lock=False) as env:  # the pages, not the zeros kept past them
        size = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    rng = random.Random(7)
    outcomes: dict[str, int] = {}
    for seed in range(int(os.environ.get("CHRONOGRAPH_RAW_DAMAGE_SEEDS", "40"))):
        store = tmp_path / f"damaged-{seed}"
        shutil.copytree(base, store)
        data = bytearray((store / "data.mdb").read_bytes())
        for _ in range(rng.choice((1, 1, 4, 16))):  # past the two meta pages, anywhere
            data[rng.randrange(2 * 4096, size)] ^= rng.randrange(1, 256)
        (store / "data.mdb").write_bytes(bytes(data))
        for command in (["-c", READS.format(tools=TOOLS), str(store)],
                        ["-m", "chronograph", "export", "--store", str(store), "-o", str(store / "x.jsonl")],
                        ["-m", "chronograph", "replay", "--verify", "--store", str(store)],
                        ["-m", "chronograph", "audit", "--store", str(store)]):
            done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=120)
            assert "Traceback" not in done.stderr, f"seed {seed}, {command[1]}: {done.stderr[-1500:]}"
            assert done.returncode in (0, 1, 2), f"seed {seed}, {command[1]}: exit {done.returncode}"
            outcome = f"{command[2] if command[0] == '-m' else 'tools'} exit {done.returncode}"
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        shutil.rmtree(store)
    print(f"raw damage outcomes: {outcomes}")
