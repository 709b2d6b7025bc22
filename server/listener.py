"""The HTTP listener: uvicorn, bound before it is announced, and guarded below HTTP.

Uvicorn times out idle keep-alive connections but not a request that never finishes
arriving: half-sent headers (slowloris) or a trickled body hold a socket forever, and
enough of them exhaust the file descriptors before any guard above HTTP runs. The
protocol here gives every request a deadline from its first byte to its last, caps the
open connections below the descriptor limit, and logs a flood once a minute, not once
per socket.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import time
from typing import Any

import h11
from uvicorn import Config, Server
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["GuardedH11Protocol", "bind", "connection_cap", "serve"]

REQUEST_DEADLINE = 30.0
"""Seconds a client has from a request's first byte to its last (headers and body)."""
KEEP_ALIVE = 5
"""Seconds an idle keep-alive connection stays open."""

_log = logging.getLogger("chronograph.http")


class _Flood:
    """Counts refused or expired connections; says so at most once a minute."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.count = 0
        self.said = 0.0

    def note(self) -> None:
        self.count += 1
        now = time.monotonic()
        if now - self.said >= 60:
            _log.warning("%s: %d connection(s) in the last minute (a flood, or a slow network)", self.what, self.count)
            self.said, self.count = now, 0


_OVER_CAP = _Flood("refused over the open-connection cap")
_TOO_SLOW = _Flood("closed for not finishing a request in time")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a per-request deadline and a cap on open connections."""

    max_connections = 1000
    deadline = REQUEST_DEADLINE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.max_connections:
            self._refused = True
            _OVER_CAP.note()
            transport.abort()
            return
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Run the deadline while the client owes us the rest of a request it has begun
        (or, on a new connection, its first one); stop it once the request is whole."""
        owing = self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing()
        if self.conn.their_state is h11.IDLE and self.timeout_keep_alive_task is not None:
            owing = False  # between requests: uvicorn's keep-alive timeout is in charge
        if owing and self._deadline is None:
            self._deadline = self.loop.call_later(self.deadline, self._expire)
        elif not owing:
            self._stop()

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            _TOO_SLOW.note()
            self.transport.abort()


def connection_cap() -> int:
    """Open connections to allow: well under the descriptor limit, raised as far as it goes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 8192 if hard == resource.RLIM_INFINITY else min(hard, 8192)
    if soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return max(16, min(1000, soft - 128))


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, bound now so that a clash is known before anything is announced.

    Raises:
        OSError: If the address cannot be bound (in use, not ours, ...).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(
    app: Any, sock: socket.socket, *, log_level: str = "warning", max_connections: int | None = None,
    request_timeout: float = REQUEST_DEADLINE,
) -> None:
    """Serve `app` on the bound `sock` until a signal stops the server."""
    cap = connection_cap()
    GuardedH11Protocol.max_connections = cap if max_connections is None else min(max_connections, cap)
    GuardedH11Protocol.deadline = request_timeout
    config = Config(app, http=GuardedH11Protocol, log_level=log_level, timeout_keep_alive=KEEP_ALIVE,
                    lifespan="on", ws="none")
    Server(config).run(sockets=[sock])
