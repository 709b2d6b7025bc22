"""Who holds a store: replacing one is refused while any process has it open, and an opening
that starts during a replacement opens the store put in place."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from chronograph.eventstore import LmdbLog, ObservationsAdded, StreamWrite
from chronograph.eventstore.lmdb.holders import StoreBusyError, exclusively
from support.holders import held_open


def append(log: LmdbLog, text: str) -> None:
    log.append([StreamWrite("s", [ObservationsAdded(observations=(text,))])], actor="t")


def test_a_store_open_in_this_process_cannot_be_replaced(store_path: Path) -> None:
    with LmdbLog(store_path), pytest.raises(StoreBusyError, match="this process"):
        with exclusively(store_path):
            pass
    with exclusively(store_path):  # closed: free
        pass


@pytest.mark.parametrize("how", ["reader", "lmdb"])
def test_a_store_open_in_another_process_cannot_be_replaced_and_the_process_is_named(store_path: Path,
                                                                                      how: str) -> None:
    LmdbLog(store_path).close()
    with held_open(store_path, how) as holder, pytest.raises(StoreBusyError, match=f"process {holder.pid}"), \
            exclusively(store_path):
        pass
    with exclusively(store_path):
        pass


def blocked_on_flock(path: Path) -> bool:
    """Whether a process waits for a flock on `path` (/proc/locks lists waiters with `->`)."""
    inode = os.stat(path).st_ino
    return any("->" in line and line.split()[-3].endswith(f":{inode}") for line in Path("/proc/locks").read_text()
               .splitlines() if "FLOCK" in line)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs /proc/locks to see a waiter")
def test_an_opening_during_a_replacement_waits_and_opens_the_store_put_in_place(tmp_path: Path) -> None:
    old, new = tmp_path / "store", tmp_path / "staged"
    with LmdbLog(old) as log:
        append(log, "old")
    with LmdbLog(new) as log:
        append(log, "new")
        append(log, "new")
    opened: list[int] = []

    def open_it() -> None:
        with LmdbLog(old, readonly=True, create=False) as log:
            opened.append(log.head())

    opener = threading.Thread(target=open_it)
    with exclusively(old):
        opener.start()
        for _ in range(10_000):  # until the opener waits on the lock (not a sleep: a bounded poll of the kernel)
            if blocked_on_flock(old / "lock.mdb"):
                break
            threading.Event().wait(0.001)
        else:
            pytest.fail("the opening did not wait for the replacement")
        os.rename(old, tmp_path / "aside")
        os.rename(new, old)
    opener.join(timeout=60)
    assert opened == [2]
