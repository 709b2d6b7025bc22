"""The one gate of an environment in a process: transactions pass it together, remapping alone.

Threads of a process read an environment at once (LMDB's readers take no lock, and a reader
never waits for the writer). What they must never overlap is LMDB's remapping of the file:
`set_mapsize` (growing the map, or taking on the size another process grew it to) and
closing or reopening the environment unmap the pages every open transaction of the process
points into. So each transaction passes the gate shared, and a remap passes it alone: it
waits for the transactions of other threads to end, and new ones wait for it (a waiting
remap goes first, so that a stream of readers cannot hold it off). A thread that holds a
transaction may always begin another (it would otherwise wait for itself).
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
        self._waiting = 0
        """Threads waiting to remap."""
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
                while self._remapping is not None or self._waiting:
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
            yield
            return
        held = self._held()
        with self._changed:
            self._waiting += 1
            try:
                while self._remapping is not None or self._open - held:
                    self._changed.wait()
            finally:
                self._waiting -= 1
            self._remapping = me
        try:
            yield
        finally:
            with self._changed:
                self._remapping = None
                self._changed.notify_all()

    @property
    def open(self) -> int:
        """Transactions open in this process now."""
        return self._open
