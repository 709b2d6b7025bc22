"""The lock every use of a store in this process goes through, and the point where the process
catches up with erasures other processes made.

Threads of one process share the store (a server's tool calls, the embedding projector), one
at a time. The outermost acquisition is also the one moment no transaction of this process
is open, so it is where the store is refreshed: if content was erased since this process
last looked, the environment is reopened before anything is written (LMDB would otherwise
write bytes of its old page buffers, which may hold the erased content, into new pages).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

__all__ = ["StoreLock"]


class StoreLock:
    """A re-entrant lock that runs `on_first` each time a thread takes it from free."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self.on_first: Callable[[], object] | None = None
        """Run when the lock is taken from free (set once the store is open)."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock (see `threading.RLock.acquire`)."""
        if not self._lock.acquire(blocking, timeout):
            return False
        self._depth += 1
        if self._depth == 1 and self.on_first is not None:
            try:
                self.on_first()
            except BaseException:
                self.release()
                raise
        return True

    @contextmanager
    def if_free(self) -> Iterator[bool]:
        """Hold the lock for the `with` block if no other thread holds it (yields whether it is
        held): for a read that must not wait for it, such as one holding the word indexes' lock,
        which threads holding this one may wait for."""
        held = self.acquire(blocking=False)
        try:
            yield held
        finally:
            if held:
                self.release()

    @contextmanager
    def bare(self) -> Iterator[None]:
        """Hold the lock without the refresh taking it from free runs: for closing the store,
        which writes nothing and must not wait for a log out of reach."""
        self._lock.acquire()
        self._depth += 1
        try:
            yield
        finally:
            self.release()

    def release(self) -> None:
        """Give the lock back."""
        self._depth -= 1
        self._lock.release()

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()
