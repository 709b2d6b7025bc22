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
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from typing import Any, TypeVar

import psycopg

__all__ = ["ANSWER_WAIT", "CHECK_AFTER", "LOOK_WAIT", "Answers", "Unanswered", "longer", "rewriting"]

RV = TypeVar("RV")

ANSWER_WAIT = 30.0
"""Seconds a round trip waits without a sign of the database before its connection is given up
(unless its thread set another bound): three times the pool's wait, far past any statement of a
unit of work (a scan fetches a batch of 4 MB per round trip); a lock's wait is allowed its
`lock_timeout` on top, and a rewrite (VACUUM FULL) has no bound."""
CHECK_AFTER = 4.0
"""Seconds of silence after which a prompt round trip is looked at from outside (`Answers._look`),
before `/ready` would count it (`server.http.READY_SILENCE`, 5 s)."""
LOOK_WAIT = 2.0
"""Seconds a look from outside waits for the database's answer (the connection, then the query)."""
_LOOK = "SELECT state = 'active' AND wait_event_type IS DISTINCT FROM 'Client' FROM pg_stat_activity WHERE pid = %s"
"""Whether a backend is at work (running, or queued on a lock), not waiting on its client's network."""


class Unanswered(psycopg.OperationalError):
    """The database left a round trip silent past its bound: the connection was closed."""


class _Wait:
    """A round trip in flight: when the database last gave a sign on it, its bound (inf: none), and
    whether its answer is due promptly (not: a lock's wait, a rewrite)."""

    __slots__ = ("bound", "heard", "looked", "prompt")

    def __init__(self, bound: float | None, prompt: bool) -> None:
        self.heard = self.looked = time.monotonic()
        self.bound = float("inf") if bound is None else bound
        self.prompt = prompt


class Answers:
    """The round trips in flight on the connections of one log, and each thread's bound on them."""

    def __init__(self, side: Callable[[], psycopg.Connection[Any]] | None = None) -> None:
        self._lock = threading.Lock()
        self._waits: dict[int, _Wait] = {}
        """The round trip in flight of each thread in one."""
        self._bound = threading.local()
        self.side = side
        """A new connection to the database (of `connection_class`), on which a silent round trip
        is looked at from outside (None: it is not, and given up at its bound)."""
        self.given_up = 0
        """How many connections were given up so far (a listener that sees it grow reconnects:
        its connection may have gone as silent, and a LISTEN's wait says nothing)."""

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

    def watched(self, gen: Generator[Any, Any, RV], bound: float | None, pid: int = 0) -> Generator[Any, Any, RV]:
        """`gen` (a round trip of psycopg's, waited on by its `wait`, on the connection of backend
        `pid`), raising `Unanswered` once the database has given no sign for `bound` seconds and
        does not show the backend at work either (`_look`); the waits' ticks (a ready state of
        none, every tenth of a second) are when it looks."""
        me = threading.get_ident()
        looking = getattr(self._bound, "looking", False)  # (a look's own round trips are not looked at)
        wait = _Wait(bound, getattr(self._bound, "prompt", True) and not looking)
        with self._lock:
            outer = self._waits.get(me)
            self._waits[me] = wait
        try:
            state = next(gen)
            while True:
                ready = yield state
                now = time.monotonic()
                if ready:
                    wait.heard = wait.looked = now
                elif now - wait.heard > wait.bound or (wait.prompt and now - wait.looked > CHECK_AFTER):
                    at_work = None if looking else self._look(pid, cancel=now - wait.heard > wait.bound)
                    if at_work:  # the database answers: the statement waits for a lock, or works long
                        wait.prompt = False
                        wait.looked = time.monotonic()
                        if now - wait.heard > wait.bound:
                            wait.heard = wait.looked
                    elif now - wait.heard > wait.bound:
                        raise Unanswered(f"the database gave no answer for {wait.bound:g} s")
                    else:
                        wait.looked = time.monotonic()  # (said by `silence`; given up at the bound)
                state = gen.send(ready)
        except StopIteration as done:
            return done.value
        finally:
            with self._lock:
                if outer is None:
                    self._waits.pop(me, None)
                else:
                    self._waits[me] = outer

    def _look(self, pid: int, *, cancel: bool) -> bool | None:
        """Whether the database shows backend `pid` at work, asked on a connection of its own
        within about `LOOK_WAIT` seconds each to connect and to answer (None: no answer came; False:
        the backend is idle, gone, or waits on this side's network). With `cancel`, a backend not
        at work has its statement cancelled, if any: its round trip is given up, and nothing of it
        is left queued."""
        if self.side is None or not pid:
            return None
        before = getattr(self._bound, "looking", False)
        self._bound.looking = True
        try:
            with self.within(LOOK_WAIT, prompt=False), self.side() as side:
                row = side.execute(_LOOK, (pid,)).fetchone()
                at_work = bool(row and row[0])
                if cancel and not at_work:
                    side.execute("SELECT pg_cancel_backend(%s)", (pid,))
                return at_work
        except psycopg.Error:
            return None
        finally:
            self._bound.looking = before

    def connection_class(self, base: type[psycopg.Connection[Any]]) -> type[psycopg.Connection[Any]]:
        """`base` with its round trips watched by these answers (a wait given a timeout by psycopg,
        a LISTEN's, is bounded already, and left alone)."""
        answers = self

        class Answering(base):  # type: ignore[valid-type,misc]
            def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
                if timeout is not None:
                    return super().wait(gen, interval, timeout)
                try:
                    return super().wait(answers.watched(gen, answers.bound(), self.pgconn.backend_pid), interval,
                                        timeout)
                except Unanswered:
                    if not getattr(answers._bound, "looking", False):  # noqa: SLF001
                        answers.given_up += 1
                        with suppress(psycopg.Error):  # (where the database still hears, nothing stays queued)
                            self.cancel_safe(timeout=1.0)
                    self.pgconn.finish()  # (broken now: a pool drops it, and nothing more is sent on it)
                    raise

        Answering.answers = answers
        return Answering


def _answers(connection: Any) -> Answers | None:
    found = getattr(connection, "answers", None)
    return found if isinstance(found, Answers) else None


def rewriting(connection: Any) -> AbstractContextManager[None]:
    """Within the block, `connection`'s round trips have no bound and are not prompt: a rewrite
    (VACUUM FULL, an upgrade's UPDATE of every row) takes as long as the table is large. Only
    the rewrite itself: the statements around it keep their bound."""
    answers = _answers(connection)
    return nullcontext() if answers is None else answers.within(None, prompt=False)


def longer(connection: Any, seconds: float) -> AbstractContextManager[None]:
    """Within the block, `connection`'s round trips may wait `seconds` longer, not prompt (a wait
    for the log's lock, ended by its `lock_timeout`; see `Answers.longer`)."""
    answers = _answers(connection)
    return nullcontext() if answers is None else answers.longer(seconds)

