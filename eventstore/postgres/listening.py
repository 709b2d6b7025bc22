"""How a follower of a PostgreSQL log learns of other servers' writes: every commit announces the
log's new head and erasure count on its channel (`announcements`), which a connection of its own
LISTENs to; without an announcement the follower asks every `POLL_INTERVAL`, in case one is lost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from chronograph.eventstore.postgres.announcements import State, announced, furthest

__all__ = ["POLL_INTERVAL", "Listener"]

POLL_INTERVAL = 1.0
"""How often `watch` reads the head even without a notification."""


class Listener:
    """What the log's channel announces, heard on a connection made by `connect`, and otherwise
    read by `state` (a snapshot of the log)."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], channel: str,
                 state: Callable[[], State], given_up: Callable[[], int] = lambda: 0) -> None:
        self._connect = connect
        self._given_up = given_up
        """How many of the log's connections were given up as silent so far: when it grows, the
        listener's own may be as silent (a LISTEN's wait cannot tell), and is made anew."""
        self._epoch = 0
        self._channel = channel
        self._state = state
        self._listener: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._known: State | None = None
        """The (head, erasures) last announced while the listener listened, or last read."""

    def watch(self, after: int, timeout: float) -> State:
        """(head, erasure count) once the head passes `after`, or when `timeout` seconds pass.

        Raises:
            StoreUnavailableError: If the database cannot be reached.
        """
        deadline = time.monotonic() + timeout
        state = furthest(self._listen(0), self._known)  # listening before the first look: nothing is missed
        unheard: State | None = None
        while True:
            if state is None:
                state = self._state()
                if unheard is not None and state[0] > unheard[0]:  # written, and no announcement came
                    state = furthest(self._deaf(), state) or state
            self._known = state
            left = deadline - time.monotonic()
            if state[0] > after or left <= 0:
                return state
            heard = self._listen(min(left, POLL_INTERVAL))
            unheard = state if heard is None else None
            state = None if heard is None else furthest(heard, state)

    def _deaf(self) -> State | None:
        """What the listener's connection has heard now that a read found a write it did not
        announce (None): if nothing, the connection is taken for deaf (one left open after the
        database or the network held it) and made anew at the next listen."""
        heard = self._listen(0)
        if heard is None:
            self.close()
        return heard

    def close(self) -> None:
        with self._lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None

    def _listen(self, seconds: float) -> State | None:
        """The (head, erasures) announced within `seconds`, or None (on a connection of its own)."""
        with self._lock:
            try:
                epoch = self._given_up()
                if self._listener is not None and epoch != self._epoch:  # the database went silent meanwhile
                    self._listener.close()
                if self._listener is None or self._listener.closed:
                    self._epoch = epoch
                    self._known = None  # what was announced before this connection listened is unknown
                    self._listener = self._connect()
                    self._listener.execute(f"LISTEN {self._channel}")
                latest = None  # the furthest of all that came: `stop_after` yields a packet's every notice
                for notice in self._listener.notifies(timeout=seconds, stop_after=1):
                    latest = furthest(latest, announced(notice.payload))
                for notice in self._listener.notifies(timeout=0):  # and of those queued (two writers'
                    latest = furthest(latest, announced(notice.payload))  # barriers commit in any order)
                return latest
            except psycopg.OperationalError:
                if self._listener is not None:
                    self._listener.close()
                self._listener = None
                self._known = None
                time.sleep(min(seconds, POLL_INTERVAL))  # the next look says why, if the database is gone
                return None
