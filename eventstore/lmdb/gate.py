"""The one gate of an environment in a process: transactions pass it together, remapping alone.

Threads of a process read an environment at once (LMDB's readers take no lock, and a reader
never waits for the writer). What they must never overlap is LMDB's remapping of the file:
`set_mapsize` (growing the map, or taking on the size another process grew it to) and
closing or reopening the environment unmap the pages every open transaction of the process
points into. So each transaction passes the gate shared, and a remap passes it alone: it
waits for the transactions of other threads to end, and new ones wait for it (a waiting
remap goes first, so that a stream of readers cannot hold it off). A thread that holds a
transaction may always begin another (it would otherwise wait for itself).

A thread that finds it must remap (a full map, a map grown by another process) `claim`s
the gate at once, before it ends its transaction: ending one lets go of the GIL, and
threads that read without pause pass the GIL between each other so fast that the one
waiting for it got it back only seconds later (`docs/decisions.md`, "Calls that don't wait
for each other"). From the claim on, new transactions of other threads wait; those open
end, their threads sleep at the gate, and the claimant has the interpreter to itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Gate"]


class Gate:
    """Transactions of this process (shared) and remapping (exclusive) of one environment."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._open = 0
        """Transactions open in this process."""
        self._remapping: int | None = None
        """The thread remapping now."""
        self._wanting: set[int] = set()
        """Threads that want to remap: from the moment one says so, no other thread's transaction begins."""
        self._mine = threading.local()

    def _held(self) -> int:
        return getattr(self._mine, "count", 0)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Pass for one transaction (for the `with` block)."""
        held = self._held()
        me = threading.get_ident()
        with self._changed:
            if not held and self._remapping != me:
                while self._remapping is not None or self._wanting:
                    self._changed.wait()
            self._open += 1
        self._mine.count = held + 1
        try:
            yield
        finally:
            self._mine.count = held
            with self._changed:
                self._open -= 1
                self._changed.notify_all()

    @contextmanager
    def remapping(self) -> Iterator[None]:
        """Pass alone: no other thread of this process holds a transaction for the `with` block."""
        me = threading.get_ident()
        if self._remapping == me:  # already alone (a reopen inside a remap)
            self._wanting.discard(me)
            yield
            return
        held = self._held()
        self.claim()
        try:
            with self._changed:
                while self._remapping is not None or self._open - held:
                    self._changed.wait()
                self._remapping = me
                self._wanting.discard(me)
        except BaseException:
            self.unclaim()
            raise
        try:
            yield
        finally:
            with self._changed:
                self._remapping = None
                self._changed.notify_all()

    def claim(self) -> None:
        """Say that this thread is about to remap: from now on other threads' new transactions
        wait, until its `remapping` block ends (or `unclaim`).

        Takes no lock, so it never lets go of the interpreter: a thread that must remap says so
        before anything that does. Threads that read without pause hand the interpreter to each
        other, and one that let go of it between finding the map full and saying so would wait
        for it behind them, seconds at a time.
        """
        self._wanting.add(threading.get_ident())  # one bytecode on a set: atomic

    def unclaim(self) -> None:
        """Take back this thread's `claim` when it will not remap after all."""
        me = threading.get_ident()
        if me in self._wanting:
            self._wanting.discard(me)
            with self._changed:
                self._changed.notify_all()

    @property
    def waiting(self) -> int:
        """Threads that want to remap now."""
        return len(self._wanting)

    @property
    def mine(self) -> int:
        """Transactions the calling thread holds now."""
        return self._held()

    @property
    def open(self) -> int:
        """Transactions open in this process now."""
        return self._open
