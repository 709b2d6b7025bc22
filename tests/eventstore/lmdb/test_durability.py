"""Durability and opening: growth, stale readers, damaged, foreign and newer stores."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import lmdb
import pytest
from chronograph.eventstore import (
    EntityCreated,
    LmdbLog,
    ObservationsAdded,
    StorageFullError,
    StoreCorruptError,
    StoreFormatError,
    StoreOpenError,
    StreamWrite,
)
from chronograph.eventstore.keys import pack_u32
from support.disks import full_filesystem


def written_and_read_back(store_path: Path) -> None:
    """A store opened to write at `store_path` takes an event, and a reader finds it."""
    with LmdbLog(store_path) as store:
        store.append([StreamWrite("s", [EntityCreated(workspace="w", name="Ada", entity_type="person")])],
                     actor="a")
    with LmdbLog(store_path, readonly=True) as store:
        assert store.head() == 1


def note(i: int) -> ObservationsAdded:
    return ObservationsAdded(observations=(f"observation {i}",))


def test_commits_are_synchronous_by_default(store: LmdbLog) -> None:
    assert store.environment.env.flags()["sync"] and store.environment.env.flags()["metasync"]


def test_a_tiny_map_grows_until_100k_events_are_all_there_once(store_path: Path) -> None:
    with LmdbLog(store_path, map_size=64 * 1024, sync=False) as store:
        for start in range(0, 100_000, 500):
            store.append(
                [StreamWrite(f"s{start % 7}", [note(i) for i in range(start, start + 500)])],
                actor="t",
            )
        grown = store.environment.env.info()["map_size"]
        texts = [e.event.observations[0] for e in store.read_all()]
        positions_ok = [e.position for e in store.read_all()] == list(range(1, 100_001))
    assert grown > 64 * 1024
    assert positions_ok
    assert texts == [f"observation {i}" for i in range(100_000)]


def test_a_map_that_reaches_its_ceiling_gives_a_storage_error_and_stays_readable(
    store_path: Path,
) -> None:
    with LmdbLog(store_path, map_size=256 * 1024, max_map_size=512 * 1024) as store:
        store.append([StreamWrite("a", [note(0)])], actor="t")
        big = [note(i) for i in range(20_000)]
        with pytest.raises(StorageFullError, match="ceiling"):
            store.append([StreamWrite("a", big)], actor="t")
        assert store.head() == 1
        store.append([StreamWrite("a", [note(1)])], actor="t")
        assert store.head() == 2


def hold_open(store_path: Path, *, reading: bool) -> subprocess.Popen[str]:
    """A process that opens the store (and a read transaction) and waits."""
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import lmdb, time
            env = lmdb.open({str(store_path)!r}, max_dbs=64)
            txn = env.begin() if {reading!r} else None
            print("open", flush=True)
            time.sleep(120)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "open"
    return process


def test_opening_clears_the_reader_slots_of_killed_processes(store_path: Path) -> None:
    LmdbLog(store_path).close()
    # A live process keeps the environment open, so LMDB does not reset its reader
    # table when the next one opens it: the killed reader's slot would stay taken.
    bystander = hold_open(store_path, reading=False)
    reader = hold_open(store_path, reading=True)
    try:
        os.kill(reader.pid, signal.SIGKILL)
        reader.wait()
        with LmdbLog(store_path) as store:
            assert store.stale_readers_cleared == 1
            assert str(reader.pid) not in store.environment.env.readers()
    finally:
        for process in (bystander, reader):
            process.kill()
            process.wait()
            assert process.stdout is not None
            process.stdout.close()


def test_a_file_that_is_not_lmdb_is_refused_as_corrupt(store_path: Path) -> None:
    store_path.mkdir()
    (store_path / "data.mdb").write_bytes(os.urandom(64 * 1024))
    with pytest.raises(StoreCorruptError):
        LmdbLog(store_path)


def test_an_lmdb_environment_that_is_not_a_store_is_refused(store_path: Path) -> None:
    env = lmdb.open(str(store_path), max_dbs=4)
    with env.begin(write=True) as txn:
        txn.put(b"hello", b"world")
    env.close()
    with pytest.raises(StoreCorruptError, match="not a Chronograph store"):
        LmdbLog(store_path)


def test_a_store_whose_creation_was_cut_off_before_its_first_commit_is_made_again(store_path: Path) -> None:
    """A process killed between LMDB making the data file and the log's first commit left a
    folder every command refused (serve never started again): nothing was ever in it."""
    lmdb.open(str(store_path), max_dbs=4).close()  # the meta pages, no commit
    with pytest.raises(StoreOpenError, match="cut off before its first commit"):
        LmdbLog(store_path, readonly=True)
    written_and_read_back(store_path)


def test_an_empty_data_file_alone_is_a_creation_cut_off_too(store_path: Path) -> None:
    store_path.mkdir()
    (store_path / "data.mdb").write_bytes(b"")
    LmdbLog(store_path).close()
    with LmdbLog(store_path, readonly=True) as store:
        assert store.head() == 0


def test_an_uncommitted_environment_beside_other_files_is_still_refused(store_path: Path) -> None:
    lmdb.open(str(store_path), max_dbs=4).close()
    (store_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreCorruptError, match="not a Chronograph store"):
        LmdbLog(store_path)
    assert (store_path / "notes.txt").read_text() == "mine"


def test_a_store_written_by_a_newer_format_is_refused(store_path: Path) -> None:
    with LmdbLog(store_path) as store:
        with store.environment.env.begin(write=True) as txn:
            txn.put(b"format", pack_u32(99), db=store.dbs.meta)
    with pytest.raises(StoreFormatError, match="format 99"):
        LmdbLog(store_path)


def test_a_damaged_event_is_reported_not_skipped(store_path: Path) -> None:
    with LmdbLog(store_path) as store:
        store.append([StreamWrite("a", [note(0)])], actor="t")
        with store.environment.env.begin(write=True) as txn:
            txn.put((1).to_bytes(8, "big"), b"\xc1garbage", db=store.dbs.log)
    with pytest.raises(StoreCorruptError):
        LmdbLog(store_path)


def test_a_missing_store_is_not_created_when_opening_read_only(store_path: Path) -> None:
    with pytest.raises(StoreOpenError, match="no store"):
        LmdbLog(store_path, readonly=True)
    assert not store_path.exists()


def test_a_non_empty_directory_is_never_turned_into_a_store(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreOpenError, match="not empty"):
        LmdbLog(tmp_path)


def test_a_file_path_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text("")
    with pytest.raises(StoreOpenError, match="is a file"):
        LmdbLog(path)


def test_a_read_only_store_reads_but_refuses_writes(store_path: Path) -> None:
    LmdbLog(store_path).close()
    with LmdbLog(store_path, readonly=True) as store:
        assert store.head() == 0
        with pytest.raises(Exception, match="read-only"):
            store.append([StreamWrite("a", [note(0)])], actor="t")


def test_a_store_another_process_is_making_this_moment_is_made_with_it(store_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A data file read while LMDB writes its meta pages does not look uncommitted; opened, the
    environment holds no commit yet: the creation goes on with the other process's, not refused."""
    from chronograph.eventstore.lmdb import making  # noqa: PLC0415

    lmdb.open(str(store_path), max_dbs=4).close()  # the meta pages, no commit
    monkeypatch.setattr(making, "never_committed", lambda path: False)
    written_and_read_back(store_path)


def test_a_folder_holding_lmdb_s_lock_file_alone_is_a_store_being_made(store_path: Path) -> None:
    """Another process opening the new store made its lock file and not yet its data file."""
    lmdb.open(str(store_path), max_dbs=4).close()
    (store_path / "data.mdb").unlink()  # LMDB's lock file, just made
    with LmdbLog(store_path) as store:
        assert store.head() == 0


@pytest.mark.parametrize("case", ["a user's file of that name", "one a store left an hour ago"])
def test_a_lock_file_alone_that_is_not_a_store_being_made_is_not_taken_over(tmp_path: Path, case: str) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    if case.startswith("a user"):
        (folder / "lock.mdb").write_text("mine")
    else:
        lmdb.open(str(folder), max_dbs=4).close()
        (folder / "data.mdb").unlink()  # the data file went: that is what to notice, not an empty new store
        os.utime(folder / "lock.mdb", (0, 0))
    with pytest.raises(StoreOpenError, match="not empty"):
        LmdbLog(folder)
    assert os.listdir(folder) == ["lock.mdb"]


def test_a_lock_file_of_zeros_alone_that_no_process_holds_is_a_creation_cut_off_and_made_again(tmp_path: Path) -> None:
    """A full disk stopped the making after LMDB sized its lock file and before it set it up (it
    died of SIGBUS): the folder was refused for good as "not empty and holds no Chronograph store"."""
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "lock.mdb").write_bytes(bytes(16_512))
    os.utime(folder / "lock.mdb", (0, 0))
    with LmdbLog(folder) as store:
        assert store.head() == 0


def test_a_lock_file_of_zeros_alone_that_a_process_holds_is_not_taken_over(tmp_path: Path) -> None:
    import fcntl

    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "lock.mdb").write_bytes(bytes(16_512))
    os.utime(folder / "lock.mdb", (0, 0))
    with (folder / "lock.mdb").open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_SH)  # as every opening of the store holds it
        with pytest.raises(StoreOpenError, match="not empty"):
            LmdbLog(folder)


def test_a_data_file_holding_its_first_meta_page_alone_is_a_creation_cut_off_and_made_again(store_path: Path) -> None:
    """A full disk took the second meta page: every command said the store was truncated and
    should be restored from a backup, though it never held anything."""
    lmdb.open(str(store_path), max_dbs=4).close()
    os.truncate(store_path / "data.mdb", 4096)
    with pytest.raises(StoreOpenError, match="cut off before its first commit"):
        LmdbLog(store_path, readonly=True)
    written_and_read_back(store_path)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    with full_filesystem(tmp_path / "disk") as disk:
        yield disk


def test_a_store_made_on_a_full_disk_is_refused_in_words_then_made_once_there_is_room(full_disk: Path) -> None:
    """LMDB maps a lock file it sized without giving it blocks: on a full tmpfs the process died of
    SIGBUS at its first write there, and left a folder every later start refused."""
    opening = [sys.executable, "-c", f"from chronograph.eventstore import LmdbLog; LmdbLog({str(full_disk / 's')!r})"]
    done = subprocess.run(opening, capture_output=True, text=True)
    assert done.returncode == 1, done  # an error, not a signal
    assert "StoreOpenError: cannot make the store at" in done.stderr and "No space left" in done.stderr
    os.remove(full_disk / "filler")
    written_and_read_back(full_disk / "s")
