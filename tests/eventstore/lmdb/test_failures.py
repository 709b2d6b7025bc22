"""The system's refusals under a store (a read-only filesystem, permissions, limits of the process)
are the event store's errors naming the cause, never LMDB's own, and the store stays readable."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import lmdb
import pytest
from chronograph.eventstore import (
    EntityCreated,
    EventStoreError,
    LmdbLog,
    StorageFullError,
    StoreOpenError,
    StoreWriteError,
    StreamWrite,
)
from chronograph.eventstore.lmdb.env import LmdbEnv


def created(name: str) -> list[StreamWrite]:
    return [StreamWrite(name, [EntityCreated(workspace="w", name=name, entity_type="t")])]


def failing_commits(monkeypatch: pytest.MonkeyPatch, error: lmdb.Error) -> None:
    """Every write transaction's commit fails with `error`, as LMDB raises it (aborted, nothing kept)."""
    real = LmdbEnv._begin_write

    class Failing:
        def __init__(self, txn: lmdb.Transaction) -> None:
            self.txn = txn

        def __getattr__(self, name: str) -> object:
            return getattr(self.txn, name)

        def commit(self) -> None:
            self.txn.abort()
            raise error

    monkeypatch.setattr(LmdbEnv, "_begin_write", lambda self: Failing(real(self)))


@pytest.mark.parametrize(("error", "said"), [
    (lmdb.Error("mdb_txn_commit: Read-only file system"), "mounted read-only"),
    (lmdb.Error("mdb_txn_commit: Operation not permitted"), "forbids this process to write"),
    (lmdb.ReadonlyError("mdb_txn_commit: Permission denied"), "may not write its folder or files"),
    (lmdb.Error("mdb_txn_commit: File too large"), "largest file"),
    (lmdb.Error("mdb_txn_commit: Too many open files"), "too many files open"),
])
def test_a_commit_the_system_refuses_is_a_write_error_naming_the_cause_and_the_store_stays_readable(
        store_path: Path, monkeypatch: pytest.MonkeyPatch, error: lmdb.Error, said: str) -> None:
    with LmdbLog(store_path) as log:
        log.append(created("a"), actor="t")
        with monkeypatch.context() as patched:
            failing_commits(patched, error)
            with pytest.raises(StoreWriteError) as refused:
                log.append(created("b"), actor="t")
        assert said in str(refused.value) and str(error) in str(refused.value)
        assert "nothing was written" in str(refused.value) and str(store_path) in str(refused.value)
        assert log.head() == 1
        log.append(created("c"), actor="t")  # the refusal lifted: it writes again
        assert log.head() == 2


def test_a_full_disk_quota_is_a_storage_full_error(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LmdbLog(store_path) as log:
        failing_commits(monkeypatch, lmdb.Error("mdb_txn_commit: Disk quota exceeded"))
        with pytest.raises(StorageFullError, match="full or failing .*nothing was written"):
            log.append(created("a"), actor="t")


def test_an_lmdb_error_of_no_known_cause_is_still_the_event_store_s(store_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with LmdbLog(store_path) as log:
        failing_commits(monkeypatch, lmdb.Error("mdb_txn_commit: something new"))
        with pytest.raises(EventStoreError, match="LMDB: mdb_txn_commit: something new; nothing was written"):
            log.append(created("a"), actor="t")


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """`path` made immutable (`chattr +i`: even root's writes get EPERM) for the `with` block."""
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (needs root and a filesystem that has it)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_data_file_made_immutable_refuses_writes_by_name_and_reads_go_on(store_path: Path) -> None:
    with LmdbLog(store_path) as log:
        log.append(created("a"), actor="t")
        with immutable(store_path / "data.mdb"):
            with pytest.raises(StoreWriteError, match="forbids this process to write .*Operation not permitted"):
                log.append(created("b"), actor="t")
            assert log.head() == 1
        log.append(created("b"), actor="t")
        assert [entry.event.name for entry in log.read_all()] == ["a", "b"]  # type: ignore[attr-defined]


# --- an environment that cannot be reopened or remapped ----------------------------------------


def test_a_reopening_the_process_may_not_do_keeps_the_store_open_and_readable(store_path: Path) -> None:
    """The folder lost its permissions or its data file was made immutable under a server: the
    reopening an erasure's scrub begins with closed the environment, failed to open it again,
    and every later call failed ("Attempt to operate on closed/deleted/dropped object")."""
    with LmdbLog(store_path) as log:
        log.append(created("a"), actor="t")
        with immutable(store_path / "data.mdb"):
            with pytest.raises(StoreOpenError, match="again: .*Operation not permitted.*stays open"):
                log.environment.reopen()
            assert log.head() == 1
        log.environment.reopen()
        log.append(created("b"), actor="t")
        assert log.head() == 2


def test_an_environment_whose_reopening_failed_is_opened_again_by_the_next_call(
        store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LmdbLog(store_path) as log:
        log.append(created("a"), actor="t")
        real = LmdbEnv._open

        def out_of_memory(self: LmdbEnv, map_size: int, *, create: bool) -> lmdb.Environment:
            raise lmdb.MemoryError(f"{self.path}: Cannot allocate memory")

        monkeypatch.setattr(LmdbEnv, "_open", out_of_memory)
        with pytest.raises(StoreOpenError, match="out of memory or address space .*every call tries again"):
            log.environment.reopen()
        with pytest.raises(StoreOpenError, match="again"):  # still cannot: said again, by the event store
            log.head()
        monkeypatch.setattr(LmdbEnv, "_open", real)
        assert log.head() == 1
        log.append(created("b"), actor="t")
        assert log.head() == 2


class _NoAddressSpace:
    """An environment whose map cannot grow: LMDB is asked for more than any address space holds,
    so it fails as under `ulimit -v` (ENOMEM), leaving its environment unusable."""

    def __init__(self, env: lmdb.Environment) -> None:
        self.env = env

    def __getattr__(self, name: str) -> object:
        return getattr(self.env, name)

    def set_mapsize(self, size: int) -> None:
        self.env.set_mapsize(size and 1 << 62)


def test_a_map_that_cannot_grow_for_want_of_address_space_refuses_the_write_and_the_store_goes_on(
        store_path: Path) -> None:
    with LmdbLog(store_path, map_size=256 << 10) as log:
        log.append(created("a"), actor="t")
        size = log.environment.env.info()["map_size"]
        log.environment.env = _NoAddressSpace(log.environment.env)  # type: ignore[assignment]
        big = [StreamWrite("b", [EntityCreated(workspace="w", name="b" * 400, entity_type="t" * 400)] * 2000)]
        with pytest.raises(StorageFullError, match="out of address space .*nothing was written.*--max-size"):
            log.append(big, actor="t")
        assert log.environment.env.info()["map_size"] == size  # opened again, at the size it had
        assert log.head() == 1
        log.append(created("c"), actor="t")
        assert [entry.event.name for entry in log.read_all()] == ["a", "c"]  # type: ignore[attr-defined]


def test_a_database_whose_creation_the_full_disk_refuses_is_a_storage_full_error(store_path: Path) -> None:
    """Opening the views creates their databases, which commits: a traceback on a nearly full disk."""

    class Full:
        def __init__(self, env: lmdb.Environment) -> None:
            self.env = env

        def __getattr__(self, name: str) -> object:
            return getattr(self.env, name)

        def open_db(self, *_: object, **__: object) -> None:
            raise lmdb.DiskError("mdb_txn_commit: No space left on device")

    with LmdbLog(store_path) as log:
        real, log.environment.env = log.environment.env, Full(log.environment.env)  # type: ignore[assignment]
        try:
            with pytest.raises(StorageFullError, match="full or failing .*No space left on device.*nothing was"):
                log.environment.open_db("views")
        finally:
            log.environment.env = real
