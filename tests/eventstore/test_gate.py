"""The gate of an environment: transactions of many threads together, a remap of the file alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import lmdb
from chronograph.eventstore.lmdb.env import LmdbEnv
from chronograph.eventstore.lmdb.gate import Gate


def wait_until(condition: threading.Condition, test: object) -> None:
    with condition:
        assert condition.wait_for(test, timeout=30)  # type: ignore[arg-type]


def eventually(test: Callable[[], bool]) -> None:
    """Wait until `test` holds (a hang guard of 30 s, not a measure of time)."""
    deadline = time.monotonic() + 30
    while not test():
        assert time.monotonic() < deadline
        threading.Event().wait(0.001)


def test_a_remap_waits_for_the_transactions_of_other_threads_and_new_ones_wait_for_it() -> None:
    gate = Gate()
    seen: list[str] = []
    reading, done_reading = threading.Event(), threading.Event()

    def reader() -> None:
        with gate.transaction():
            seen.append("reading")
            reading.set()
            done_reading.wait(30)
            with gate.transaction():  # a thread holding one may always begin another
                seen.append("nested")
            seen.append("read")

    def remapper() -> None:
        with gate.remapping():
            seen.append("remap")

    def latecomer() -> None:
        with gate.transaction():
            seen.append("late")

    threads = [threading.Thread(target=reader)]
    threads[0].start()
    assert reading.wait(30)
    threads.append(threading.Thread(target=remapper))
    threads[1].start()
    wait_until(gate._changed, lambda: gate.waiting == 1)  # noqa: SLF001 (the remap is waiting)
    threads.append(threading.Thread(target=latecomer))
    threads[2].start()
    done_reading.set()
    for thread in threads:
        thread.join(30)
    assert seen == ["reading", "nested", "read", "remap", "late"]
    assert gate.open == 0


def test_a_claimed_remap_holds_off_new_transactions_of_other_threads_until_it_is_done() -> None:
    gate = Gate()
    seen: list[str] = []

    def latecomer() -> None:
        with gate.transaction():
            seen.append("late")

    with gate.transaction():
        gate.claim()  # the map was found full inside this transaction: readers stop coming now
        thread = threading.Thread(target=latecomer)
        thread.start()
        eventually(lambda: len(gate._changed._waiters) == 1)  # type: ignore[attr-defined]  # noqa: SLF001
    with gate.remapping():
        seen.append("remap")
    thread.join(30)
    assert seen == ["remap", "late"]
    assert gate.waiting == 0


def test_a_claim_taken_back_lets_other_threads_in_again() -> None:
    gate = Gate()
    gate.claim()
    gate.unclaim()
    done = threading.Event()

    def reader() -> None:
        with gate.transaction():
            done.set()

    threading.Thread(target=reader).start()
    assert done.wait(30)
    assert gate.waiting == 0


READERS = 4
"""Threads that read the whole environment without pause beside the writer."""


def test_an_environment_grows_its_map_while_other_threads_read_it(tmp_path: Path) -> None:
    env = LmdbEnv(tmp_path / "env", map_size=1 << 18, sync=False)  # 256 KiB: it doubles many times below
    db = env.open_db("things")
    value = b"x" * 4000
    stop = threading.Event()
    problems: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            with env.read() as txn:
                for key, got in txn.cursor(db=db):
                    if got != value:
                        problems.append(f"{bytes(key)!r} read back wrong")

    def writer() -> None:
        for batch in range(20):
            def put(txn: lmdb.Transaction, batch: int = batch) -> None:
                for i in range(60):
                    txn.put(f"{batch:03d}-{i:03d}".encode(), value, db=db)

            env.write(put)

    readers = [threading.Thread(target=reader) for _ in range(READERS)]
    for thread in readers:
        thread.start()
    writing = threading.Thread(target=writer)
    try:
        grown = env.env.info()["map_size"]
        writing.start()
        writing.join(60)  # a hang guard only: the writer needs well under a second
        assert not writing.is_alive(), "the writer did not get the gate alone to grow the map"
        assert env.env.info()["map_size"] >= grown * 16
    finally:
        stop.set()
        for thread in readers:
            thread.join(30)
        writing.join(300)
        env.close()
    assert problems == []
    assert env.gate.open == 0
