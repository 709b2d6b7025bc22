"""How long the database has left this process's round trips unanswered, and the bound past
which a connection it leaves silent is given up.

A database that takes connections but never answers (hung, its disk stuck under it, or a
middlebox that holds what it is sent) trips nothing on this side of the connection: the TCP
keepalives and user timeout of `connections` fire only where the peer stops acknowledging, and
here it acknowledges. Every round trip on the log's connections is watched instead: the time
since the database last gave a sign of life on it (a byte to read, or room to write more) is
kept per thread (`silence`), and one silent past its thread's bound (`ANSWER_WAIT`, unless the
thread set another: `within`) ends with `Unanswered`, its connection closed: its protocol state
is unknown, so it goes back to no pool and nothing more is sent on it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import psycopg

__all__ = ["ANSWER_WAIT", "Answers", "Unanswered"]

RV = TypeVar("RV")

ANSWER_WAIT = 30.0
"""Seconds a round trip waits without a sign of the database before its connection is given up
(unless its thread set another bound): three times the pool's wait, far past any statement of a
unit of work (a scan fetches a batch of 4 MB per round trip); a lock's wait is allowed its
`lock_timeout` on top, and a rewrite (VACUUM FULL) has no bound."""


class Unanswered(psycopg.OperationalError):
    """The database left a round trip silent past its bound: the connection was closed."""


class _Wait:
    """A round trip in flight: when the database last gave a sign on it, its bound (inf: none), and
    whether its answer is due promptly (not: a lock's wait, a rewrite)."""

    __slots__ = ("bound", "heard", "prompt")

    def __init__(self, bound: float | None, prompt: bool) -> None:
        self.heard = time.monotonic()
        self.bound = float("inf") if bound is None else bound
        self.prompt = prompt


class Answers:
    """The round trips in flight on the connections of one log, and each thread's bound on them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waits: dict[int, _Wait] = {}
        """The round trip in flight of each thread in one."""
        self._bound = threading.local()

    def bound(self) -> float | None:
        """Seconds this thread's round trips may go without an answer (None: any)."""
        return getattr(self._bound, "seconds", ANSWER_WAIT)

    @contextmanager
    def within(self, seconds: float | None, *, prompt: bool = True) -> Iterator[None]:
        """Within the block, this thread's round trips give their connection up after `seconds`
        without an answer (None: never); not `prompt`: the database may take long on purpose."""
        before = self.bound(), getattr(self._bound, "prompt", True)
        self._bound.seconds, self._bound.prompt = seconds, prompt and seconds is not None
        try:
            yield
        finally:
            self._bound.seconds, self._bound.prompt = before

    def longer(self, seconds: float) -> AbstractContextManager[None]:
        """Within the block, this thread's round trips may go `seconds` longer without an answer,
        and are not prompt (a wait for the log's lock, which the database ends within its
        `lock_timeout`)."""
        bound = self.bound()
        return self.within(None if bound is None else bound + seconds, prompt=False)

    def silence(self) -> float:
        """Seconds the longest silence of the database in a round trip still waiting for it has
        lasted, among those it should answer promptly (not a wait for a lock, nor a rewrite);
        0.0 when none waits."""
        now = time.monotonic()
        with self._lock:
            since = [wait.heard for wait in self._waits.values() if wait.prompt]
        return max((now - heard for heard in since), default=0.0)

    def watched(self, gen: Generator[Any, Any, RV], bound: float | None) -> Generator[Any, Any, RV]:
        """`gen` (a round trip of psycopg's, waited on by its `wait`), raising `Unanswered` once the
        database has given no sign for `bound` seconds; the waits' ticks (a ready state of none,
        every tenth of a second) are when it looks."""
        me = threading.get_ident()
        wait = _Wait(bound, getattr(self._bound, "prompt", True))
        with self._lock:
            outer = self._waits.get(me)
            self._waits[me] = wait
        try:
            state = next(gen)
            while True:
                ready = yield state
                now = time.monotonic()
                if ready:
                    wait.heard = now
                elif now - wait.heard > wait.bound:
                    raise Unanswered(f"the database gave no answer for {wait.bound:g} s")
                state = gen.send(ready)
        except StopIteration as done:
            return done.value
        finally:
            with self._lock:
                if outer is None:
                    self._waits.pop(me, None)
                else:
                    self._waits[me] = outer

    def connection_class(self, base: type[psycopg.Connection[Any]]) -> type[psycopg.Connection[Any]]:
        """`base` with its round trips watched by these answers (a wait given a timeout by psycopg,
        a LISTEN's, is bounded already, and left alone)."""
        answers = self

        class Answering(base):  # type: ignore[valid-type,misc]
            def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
                if timeout is not None:
                    return super().wait(gen, interval, timeout)
                try:
                    return super().wait(answers.watched(gen, answers.bound()), interval, timeout)
                except Unanswered:
                    self.pgconn.finish()  # (broken now: a pool drops it, and nothing more is sent on it)
                    raise

        return Answering

