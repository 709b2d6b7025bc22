"""chronograph backup / restore: a consistent copy beside a writer, restored exactly, and every
damaged file or occupied target refused with nothing written."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lmdb
import pytest
from chronograph.application import Memory
from chronograph.projections.tables import VIEWS_FORMAT
from mcp import Client, StdioServerParameters
from support.mcp import call

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`chronograph ...` in its own process (a store is never opened twice in one process)."""
    return subprocess.run([sys.executable, "-m", "chronograph", *args], capture_output=True, text=True,
                          timeout=120, env=ENV, cwd=ROOT)


def answers(path: Path) -> dict[str, Any]:
    """What a store answers: the graph now and as of position 3, a history, the audit."""
    with Memory(path, sync=False) as memory:
        return {
            "now": memory.read("read_graph", {}),
            "then": memory.read("read_graph", {"asOf": 3}),
            "history": memory.read("get_entity_history", {"name": "Ada"}),
            "audit": memory.read("get_audit_log", {"limit": 100, "allWorkspaces": True}),
            "team": memory.read("memory_tool", {"action": "list"}),
        }


def test_a_backup_taken_beside_a_writer_restores_a_store_that_answers_the_same(tmp_path: Path) -> None:
    store, backup, restored = tmp_path / "store", tmp_path / "memory.chronograph", tmp_path / "restored"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person",
                                                       "observations": ["math"]}]}, actor="a")
        memory.write("add_observations", {"observations": [{"entityName": "Ada", "contents": ["tea"]}]}, actor="b")
        memory.call("memory_tool", {"action": "add", "scopeType": "global", "name": "git"}, actor="c")
        memory.write("update_context", {"activeTask": "backup", "workspace": "lab"}, actor="d")
        taken = cli("backup", "--store", str(store), "-o", str(backup))  # while this process holds the store
        assert taken.returncode == 0, taken.stderr
        assert "as of log position 4" in taken.stderr
        memory.write("delete_entities", {"entityNames": ["Ada"]}, actor="e")  # after the backup: not in it
    done = cli("restore", str(backup), "--store", str(restored))
    assert done.returncode == 0, done.stderr and "checksum verified" in done.stderr
    copy = answers(restored)
    assert [e.name for e in copy["now"].entities] == ["Ada"]
    with Memory(store, sync=False) as memory:
        memory.write("revert_entity", {"name": "Ada", "toVersion": 2}, actor="f")
    original = answers(store)
    assert copy["then"] == original["then"] and copy["team"] == original["team"]
    assert copy["history"].versions == original["history"].versions[:2]
    assert copy["audit"].events == [e for e in original["audit"].events if e.position <= 4]
    verified = subprocess.run([sys.executable, "tools/replay.py", "--store", str(restored), "--verify"],
                              capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.fixture
def backup(tmp_path: Path) -> Path:
    store, path = tmp_path / "store", tmp_path / "b.chronograph"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="a")
    assert cli("backup", "--store", str(store), "-o", str(path)).returncode == 0
    return path


@pytest.mark.parametrize("damage", ["truncate", "flip", "pad", "not a backup"])
def test_a_damaged_backup_is_refused_and_nothing_is_written(backup: Path, tmp_path: Path, damage: str) -> None:
    data = bytearray(backup.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 2] ^= 0x40
    elif damage == "pad":
        data += b"\0" * 4096
    else:
        data = bytearray(b"hello")
    backup.write_bytes(bytes(data))
    target = tmp_path / "target"
    refused = cli("restore", str(backup), "--store", str(target))
    assert refused.returncode == 2 and "nothing was written" in refused.stderr
    assert not target.exists() and not [p for p in tmp_path.iterdir() if "restoring" in p.name]


def test_a_store_that_holds_something_is_replaced_only_when_asked_and_kept_beside(backup: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    with Memory(target, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Bob", "entityType": "p", "observations": []}]},
                     actor="a")
    refused = cli("restore", str(backup), "--store", str(target))
    assert refused.returncode == 2 and "not empty" in refused.stderr
    done = cli("restore", str(backup), "--store", str(target), "--replace")
    assert done.returncode == 0, done.stderr
    with Memory(target, sync=False) as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Ada"]
    with Memory(tmp_path / "target.replaced-1", sync=False) as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Bob"]


def test_a_restore_killed_while_it_built_leaves_the_next_nothing_to_set_aside(backup: Path, tmp_path: Path) -> None:
    """The next restore swept the killed one's staging folder and set what it had been building
    aside as `<store>.replaced-1`, the name of the store that was there before."""
    import signal
    import time

    target = tmp_path / "new"
    restore = subprocess.Popen([sys.executable, "-m", "chronograph", "restore", str(backup), "--store", str(target)],
                               env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and restore.poll() is None:
        if any((folder / name / "data.mdb").exists() for folder in tmp_path.glob(".new.restoring-*")
               for name in ("built", "store")):
            restore.send_signal(signal.SIGKILL)
            break
        time.sleep(0.0005)
    restore.wait()
    if restore.returncode == 0:
        pytest.skip("the restore finished before it could be stopped while it built")
    assert cli("restore", str(backup), "--store", str(target)).returncode == 0
    assert list(tmp_path.glob("new.replaced-*")) == [] and list(tmp_path.glob(".new.restoring-*")) == []


def test_restoring_a_backup_made_before_a_forget_says_what_came_back(backup: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"  # the backup's own store, which then forgets Ada
    assert cli("forget", "Ada", "--reason", "asked", "--store", str(store)).returncode == 0
    done = cli("restore", str(backup), "--store", str(store), "--replace")
    assert done.returncode == 0, done.stderr
    assert (f"the store replaced ({tmp_path / 'store.replaced-1'}) had 1 erasure(s) (forget) the backup was made "
            f"before: what they erased is in {store} again") in done.stderr
    again = cli("restore", str(backup), "--store", str(tmp_path / "fresh"))
    assert again.returncode == 0 and "erasure" not in again.stderr


def test_replace_sets_aside_a_store_never_a_folder_of_other_files(backup: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my own", encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    refused = cli("restore", str(backup), "--store", str(mine), "--replace")
    assert refused.returncode == 2 and "holds no Chronograph store" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing moved aside, nothing staged
    assert (mine / "notes.txt").read_text(encoding="utf-8") == "my own"


def test_replace_sets_aside_no_other_program_s_lmdb_environment(backup: Path, tmp_path: Path) -> None:
    import lmdb

    theirs = tmp_path / "theirs"
    env = lmdb.open(str(theirs), max_dbs=2)
    with env.begin(write=True) as txn:
        txn.put(b"their", b"data")
    env.close()
    (theirs / "notes.txt").write_text("my own", encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    refused = cli("restore", str(backup), "--store", str(theirs), "--replace")
    assert refused.returncode == 2 and "holds no Chronograph store" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_store_named_as_the_current_folder_is_restored_there(backup: Path, tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    done = subprocess.run([sys.executable, "-m", "chronograph", "restore", str(backup), "--store", "."],
                          capture_output=True, text=True, timeout=120, env=ENV, cwd=here)
    assert done.returncode == 0, done.stderr
    with Memory(here, sync=False) as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Ada"]


def test_backup_refuses_a_store_that_does_not_exist(tmp_path: Path) -> None:
    missing = cli("backup", "--store", str(tmp_path / "nothing"), "-o", str(tmp_path / "b"))
    assert missing.returncode == 2 and not (tmp_path / "b").exists() and not (tmp_path / "nothing").exists()


# --- where a backup may go (issue 27.3, 33.3) -------------------------------------------------


def test_backup_refuses_an_existing_file_unless_forced_and_names_the_flag(backup: Path, tmp_path: Path) -> None:
    store, notes = tmp_path / "store", tmp_path / "notes.txt"
    notes.write_text("the user's own\n")
    refused = cli("backup", "--store", str(store), "-o", str(notes))
    assert refused.returncode == 2 and "--force" in refused.stderr and notes.read_text() == "the user's own\n"
    forced = cli("backup", "--store", str(store), "-o", str(notes), "--force")
    assert forced.returncode == 0, forced.stderr
    assert cli("restore", str(notes), "--store", str(tmp_path / "back")).returncode == 0


@pytest.mark.parametrize("force", [(), ("--force",)])
@pytest.mark.parametrize("aim", ["store/data.mdb", "store/lock.mdb", "store/b.chronograph", "link-to-data",
                                 "link-to-store/b.chronograph"])
def test_backup_never_writes_into_a_store_even_when_forced(backup: Path, tmp_path: Path, aim: str,
                                                           force: tuple[str, ...]) -> None:
    store = tmp_path / "store"
    (tmp_path / "link-to-data").symlink_to(store / "data.mdb")
    (tmp_path / "link-to-store").symlink_to(store, target_is_directory=True)
    before = (store / "data.mdb").read_bytes()
    refused = cli("backup", "--store", str(store), "-o", str(tmp_path / aim), *force)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (store / "data.mdb").read_bytes() == before
    assert sorted(p.name for p in store.iterdir()) == ["data.mdb", "lock.mdb"]


def live_server(store: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", str(store)],
                                 env={**ENV, "CHRONOGRAPH_EMBEDDINGS": "off"}, cwd=str(ROOT))


@pytest.mark.anyio
@pytest.mark.wire
async def test_backup_and_restore_aimed_at_a_live_server_s_store_are_refused_and_no_acknowledged_write_is_lost(
    tmp_path: Path,
) -> None:
    """Issue 27.3 and 27.4: backup -o STORE/data.mdb, -o STORE/lock.mdb and restore --replace, while
    a server writes."""
    store, elsewhere = tmp_path / "store", tmp_path / "good.chronograph"
    acknowledged: list[str] = []
    async with Client(live_server(store)) as client:

        async def write(n: int) -> None:
            for _ in range(n):
                name = f"e{len(acknowledged)}"
                await call(client, "create_entities", {"entities": [{"name": name, "entityType": "t",
                                                                      "observations": []}]})
                acknowledged.append(name)

        await write(20)
        assert cli("backup", "--store", str(store), "-o", str(elsewhere)).returncode == 0
        for aim in ("data.mdb", "lock.mdb"):
            refused = cli("backup", "--store", str(store), "-o", str(store / aim), "--force")
            assert refused.returncode == 2 and "store" in refused.stderr
            await write(20)
        replaced = cli("restore", str(elsewhere), "--store", str(store), "--replace")
        assert replaced.returncode == 2 and "is open in process" in replaced.stderr, replaced.stderr
        await write(20)
        seen = [e["name"] for e in (await call(client, "read_graph"))["entities"]]
    assert sorted(seen) == sorted(acknowledged) and len(acknowledged) == 80
    assert not list(tmp_path.glob("store.replaced-*"))
    with Memory(store, sync=False) as memory:
        assert sorted(e.name for e in memory.read("read_graph", {}).entities) == sorted(acknowledged)  # type: ignore[attr-defined]
    verified = cli("replay", "--store", str(store), "--verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_restore_refuses_a_place_inside_another_store(backup: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    before = (store / "data.mdb").read_bytes()
    for place in (store / "data.mdb", store / "nested"):
        refused = cli("restore", str(backup), "--store", str(place), "--replace")
        assert refused.returncode == 2 and "inside the store" in refused.stderr
    assert (store / "data.mdb").read_bytes() == before and sorted(p.name for p in store.iterdir()) == [
        "data.mdb", "lock.mdb"]


# --- damaged and forged backups (issue 27.16) -------------------------------------------------


def reseal(backup: Path, damage: Callable[[bytearray, int, int], None], into: Path) -> Path:
    """A copy of `backup` damaged by `damage(data, start, size)` and sealed again, as a forger would."""
    data = bytearray(backup.read_bytes())
    start = data.index(b"\n", len(b"CHRONOGRAPH BACKUP 1\n")) + 1
    size = json.loads(data[len(b"CHRONOGRAPH BACKUP 1\n"):start])["bytes"]
    damage(data, start, size)
    digest = hashlib.blake2b(bytes(data[start:start + size]), digest_size=32).hexdigest()
    data[start + size:] = b"END %016x %s\n" % (size, digest.encode())
    into.write_bytes(bytes(data))
    return into


def damaged_views(tmp_path: Path, database: bytes, key: bytes | None, value: bytes) -> Path:
    """A backup whose log is whole and one of whose view records is garbage."""
    store = tmp_path / "damaged"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": n, "entityType": "p", "observations": [n]}
                                                      for n in ("Ada", "Bob")]}, actor="a")
    env = lmdb.open(str(store), max_dbs=64)
    with env.begin(write=True) as txn:
        db = env.open_db(database, txn=txn, create=False)  # a database the views use: no vacuous damage
        txn.put(key or bytes(next(iter(txn.cursor(db)))[0]), value, db=db)
    env.close()
    assert cli("backup", "--store", str(store), "-o", str(tmp_path / "damaged.chronograph")).returncode == 0
    return tmp_path / "damaged.chronograph"


@pytest.mark.parametrize(("database", "key", "value"), [
    (f"views.v{VIEWS_FORMAT}.b.meta".encode(), b"checkpoint", b"x"),  # before: a traceback, the damage left in place
    (f"views.v{VIEWS_FORMAT}.b.entities".encode(), None, b"\xc1"),  # before: "verified", then views that disagree
    (b"views", f"v{VIEWS_FORMAT}.generation".encode(), b"\xff\xff\xff\xff"),
])
def test_a_backup_with_damaged_views_restores_with_views_rebuilt_from_its_log(
    tmp_path: Path, database: bytes, key: bytes | None, value: bytes,
) -> None:
    backup = damaged_views(tmp_path, database, key, value)
    done = cli("restore", str(backup), "--store", str(tmp_path / "restored"))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    verified = cli("replay", "--store", str(tmp_path / "restored"), "--verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    with Memory(tmp_path / "restored", sync=False) as memory:
        assert [e.observations for e in memory.read("read_graph", {}).entities] == [["Ada"], ["Bob"]]  # type: ignore[attr-defined]


def test_a_backup_crafted_to_crash_its_reader_is_refused_in_one_line_and_the_old_store_stays(
    backup: Path, tmp_path: Path,
) -> None:
    """An event's size in its leaf page pointed past the end of the file: whoever reads it dies
    of SIGBUS (before: the restore itself, leaving its staging folder behind)."""
    store = tmp_path / "big"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Big", "entityType": "p",
                                                       "observations": ["y" * 5000]}]}, actor="a")
    assert cli("backup", "--store", str(store), "-o", str(tmp_path / "big.chronograph")).returncode == 0

    def oversize(data: bytearray, start: int, size: int) -> None:
        node = struct.pack("<HH", 1, 8) + struct.pack(">Q", 1)  # F_BIGDATA, an 8-byte key: position 1
        struct.pack_into("<HH", data, data.index(node, start, start + size) - 4, 0, 0x10)  # 1 MiB

    crafted = reseal(tmp_path / "big.chronograph", oversize, tmp_path / "crafted.chronograph")
    target = tmp_path / "target"
    assert cli("restore", str(backup), "--store", str(target)).returncode == 0
    refused = cli("restore", str(crafted), "--store", str(target), "--replace")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "damaged" in refused.stderr and "nothing was written" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert not [p for p in tmp_path.iterdir() if "restoring" in p.name or "replaced" in p.name]
    with Memory(target, sync=False) as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Ada"]  # type: ignore[attr-defined]


@pytest.mark.slow
def test_every_page_of_a_backup_damaged_and_sealed_again_restores_whole_or_is_refused(tmp_path: Path) -> None:
    """The adversary's crafted backups, over every page: never "verified" views that disagree with
    the log, never a traceback, never a damaged store in place."""
    store = tmp_path / "store"
    with Memory(store, sync=False) as memory:
        for i in range(40):
            memory.write("create_entities", {"entities": [{"name": f"E{i}", "entityType": "t",
                                                           "observations": [f"fact {i} " * 5]}]}, actor="a")
        memory.write("create_relations", {"relations": [{"from": "E1", "to": "E2", "relationType": "knows"}]},
                     actor="a")
    assert cli("backup", "--store", str(store), "-o", str(tmp_path / "b.chronograph")).returncode == 0
    size = (tmp_path / "b.chronograph").stat().st_size
    outcomes: dict[str, int] = {}
    for offset in [page * 4096 + within for page in range(size // 4096) for within in (20, 2048)]:
        def flip(data: bytearray, start: int, size: int, offset: int = offset) -> None:
            if offset < size:
                data[start + offset] ^= 0xFF

        crafted = reseal(tmp_path / "b.chronograph", flip, tmp_path / "c.chronograph")
        target = tmp_path / f"r{offset}"
        done = cli("restore", str(crafted), "--store", str(target))
        assert "Traceback" not in done.stderr and done.returncode in (0, 2), done.stderr
        if done.returncode == 2:
            assert not target.exists() and len(done.stderr.strip().splitlines()) == 1
            outcomes["refused"] = outcomes.get("refused", 0) + 1
        else:
            verified = cli("replay", "--store", str(target), "--verify")
            assert verified.returncode == 0, (offset, verified.stdout + verified.stderr)
            outcomes["restored"] = outcomes.get("restored", 0) + 1
    print(f"crafted backups: {dict(outcomes)}")
    assert not [p for p in tmp_path.iterdir() if "restoring" in p.name]


# --- keyed seals -------------------------------------------------------------------------------


@pytest.fixture
def key_files(tmp_path: Path) -> tuple[Path, Path]:
    mine, theirs = tmp_path / "mine.key", tmp_path / "theirs.key"
    mine.write_bytes(os.urandom(32))
    theirs.write_bytes(os.urandom(32))
    return mine, theirs


def test_a_keyed_backup_restores_only_with_its_key(tmp_path: Path, key_files: tuple[Path, Path]) -> None:
    mine, theirs = key_files
    store, sealed = tmp_path / "store", tmp_path / "sealed.chronograph"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="a")
    taken = cli("backup", "--store", str(store), "-o", str(sealed), "--key-file", str(mine))
    assert taken.returncode == 0 and "sealed with the key" in taken.stderr
    without = cli("restore", str(sealed), "--store", str(tmp_path / "a"))
    assert without.returncode == 2 and "--key-file" in without.stderr and not (tmp_path / "a").exists()
    wrong = cli("restore", str(sealed), "--store", str(tmp_path / "b"), "--key-file", str(theirs))
    assert wrong.returncode == 2 and "another key" in wrong.stderr and not (tmp_path / "b").exists()
    done = cli("restore", str(sealed), "--store", str(tmp_path / "c"), "--key-file", str(mine))
    assert done.returncode == 0 and "keyed seal" in done.stderr, done.stderr


def test_a_keyed_backup_altered_and_sealed_again_without_the_key_is_refused(
    tmp_path: Path, key_files: tuple[Path, Path],
) -> None:
    mine, _ = key_files
    store, sealed = tmp_path / "store", tmp_path / "sealed.chronograph"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="a")
    assert cli("backup", "--store", str(store), "-o", str(sealed), "--key-file", str(mine)).returncode == 0

    def alter(data: bytearray, start: int, size: int) -> None:
        data[start + size // 2] ^= 1

    def unkey(data: bytearray, start: int, size: int) -> None:  # pass it off as an unkeyed backup
        header = json.loads(data[len(b"CHRONOGRAPH BACKUP 1\n"):start])
        del header["seal"], header["key"]
        line = json.dumps(header).encode().ljust(start - len(b"CHRONOGRAPH BACKUP 1\n") - 1)
        data[len(b"CHRONOGRAPH BACKUP 1\n"):start - 1] = line

    for name, damage in (("altered", alter), ("unkeyed", unkey)):
        forged = reseal(sealed, damage, tmp_path / f"{name}.chronograph")
        refused = cli("restore", str(forged), "--store", str(tmp_path / name), "--key-file", str(mine))
        assert refused.returncode == 2 and not (tmp_path / name).exists(), refused.stderr


def test_a_key_file_too_short_to_be_a_secret_is_refused(tmp_path: Path) -> None:
    (tmp_path / "short.key").write_text("hunter2")
    refused = cli("backup", "--store", str(tmp_path / "store"), "-o", str(tmp_path / "b"), "--key-file",
                  str(tmp_path / "short.key"))
    assert refused.returncode == 2 and "at least 16" in refused.stderr and not (tmp_path / "b").exists()
