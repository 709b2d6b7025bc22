"""The HTTP listener: uvicorn, bound before it is announced, and guarded below HTTP.

Uvicorn times out idle keep-alive connections but not a request that never finishes
arriving: half-sent headers (slowloris) or a trickled body hold a socket forever, and
enough of them exhaust the file descriptors before any guard above HTTP runs. The
protocol here gives every request a deadline from its first byte to its last and caps
the open connections below the descriptor limit. At the cap a new connection is not
refused: it takes the place of the connection that began a request longest ago without
finishing it, else of the one resting longest between requests, else of the oldest that
has said nothing yet (a real client's, between its connect and its request, is among
those only for a moment), so a flood of half-open sockets can only crowd out itself.
Under pressure (half the cap open) a request has a short deadline until its headers carry
the server's token; a request that carries it (vouched for) keeps the full deadline and
is never the one evicted. A flood is logged once a minute, not once per socket.

Every accepted connection answers without Nagle's delay (TCP_NODELAY): a streamed MCP
answer goes out in pieces (headers, then the event stream's body), and a kept-alive
client's delayed ACK of the first piece held the rest back ~40 ms per call. asyncio sets
the option only on sockets made with the TCP protocol number, which a listening socket
made by hand (`bind`) had not, so the listener sets it on each connection itself.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
from uvicorn import Config, Server
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["GuardedH11Protocol", "Rules", "StoppingServer", "Vouch", "bind", "connection_cap", "no_delay", "serve",
           "server"]

REQUEST_DEADLINE = 30.0
"""Seconds a client has from a request's first byte to its last (headers and body)."""
PRESSED_DEADLINE = 2.0
"""The same, under pressure, for a request its headers have not vouched for (yet)."""
KEEP_ALIVE = 5
"""Seconds an idle keep-alive connection stays open."""
SWITCH_INTERVAL = 0.001
"""Seconds a thread runs before it hands the interpreter to another that waits (Python's
default is 5 ms): reads run in worker threads beside the event loop, and a short call beside
a long one crosses between them several times. At 10k entities, open_nodes' p99 beside a
looping whole-graph read fell from ~230 to ~140 ms (bench/http_flood.py long)."""

Vouch = Callable[[Iterable[tuple[bytes, bytes]]], bool]
"""Whether a request's headers carry what the server asks of its clients (its token)."""

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


_OVER_CAP = _Flood("refused over the open-connection cap (every open one busy)")
_EVICTED = _Flood("closed to make room at the open-connection cap (a request begun, resting or silent)")
_TOO_SLOW = _Flood("closed for not finishing a request in time")


@dataclass
class Rules:
    """What one server's connections obey, and the registers of those it may close for another."""

    max_connections: int = 1000
    deadline: float = REQUEST_DEADLINE
    pressed_deadline: float = PRESSED_DEADLINE
    vouch: Vouch | None = None
    begun: dict[GuardedH11Protocol, None] = field(default_factory=dict)
    """Connections owing the rest of a request they began (no token vouched for it), in the
    order they began: the slowloris signature, closed first."""
    resting: dict[GuardedH11Protocol, None] = field(default_factory=dict)
    """Connections between requests (keep-alive), longest resting first."""
    silent: dict[GuardedH11Protocol, None] = field(default_factory=dict)
    """Connections that have sent nothing yet, oldest first: a real client's is among them for
    the moment between its connect and its request, so they are closed last."""


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a per-request deadline and a cap on open connections that
    evicts the connection doing least for its place (see the module docstring).

    `serve` makes a subclass per server, with its own `Rules`.
    """

    rules: ClassVar[Rules] = Rules()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False
        self._vetted: object = None
        """The request whose headers were judged (uvicorn's scope of it)."""
        self._vouched = False
        self._begun = False
        """Bytes of the current request arrived."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.rules.max_connections and not self._evict():
            self._refused = True
            _OVER_CAP.note()
            transport.abort()
            return
        no_delay(transport)
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._stop()
        self._unregister()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._begun = True
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        self._begun = False
        super().on_response_complete()
        self._watch()

    def _unregister(self) -> None:
        for register in (self.rules.begun, self.rules.resting, self.rules.silent):
            register.pop(self, None)

    def _evict(self) -> bool:
        """Close the connection that has owed a request it began longest, else the one resting
        longest, else the oldest that has said nothing yet; False if every one is busy."""
        for register in (self.rules.begun, self.rules.resting, self.rules.silent):
            for victim in register:
                del register[victim]
                victim._stop()
                _EVICTED.note()
                victim.transport.abort()
                return True
        return False

    def _watch(self) -> None:
        """Run the deadline while the client owes us the rest of a request it has begun
        (or, on a new connection, its first one); stop it once the request is whole.
        Keep the registers of evictable connections current."""
        rules = self.rules
        if self.conn.their_state is not h11.IDLE and self.scope is not self._vetted:  # new headers: judge them
            self._vetted = self.scope
            self._vouched = rules.vouch is not None and self.scope is not None and rules.vouch(self.scope["headers"])
        closing = self.transport.is_closing()
        owing = self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not closing
        resting = self.conn.their_state is h11.IDLE and self.timeout_keep_alive_task is not None
        if resting:
            owing = False  # between requests: uvicorn's keep-alive timeout is in charge
        if owing and self._deadline is None:
            pressed = len(self.connections) * 2 >= rules.max_connections and not self._vouched
            self._deadline = self.loop.call_later(rules.pressed_deadline if pressed else rules.deadline, self._expire)
        elif not owing:
            self._stop()
        evictable = owing and not (self._vouched and self.conn.their_state is h11.SEND_BODY)
        for register, belongs in ((rules.begun, evictable and self._begun),
                                  (rules.silent, evictable and not self._begun),
                                  (rules.resting, resting and not closing)):
            if belongs:
                register.setdefault(self, None)
            else:
                register.pop(self, None)

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            _TOO_SLOW.note()
            self._unregister()
            self.transport.abort()


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Send what `transport` is given at once (TCP_NODELAY), not after the peer's ACK of what went before."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # the peer is gone already: nothing to send to
            pass


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
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # accepted sockets inherit the protocol
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
    request_timeout: float = REQUEST_DEADLINE, vouch: Vouch | None = None, on_stop: Callable[[], object] | None = None,
) -> None:
    """Serve `app` on the bound `sock` until a signal stops the server; `vouch` says which
    requests carry the server's token (see `GuardedH11Protocol`); `on_stop` is called at the
    signal (see `StoppingServer`)."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    server(app, log_level=log_level, max_connections=max_connections, request_timeout=request_timeout,
           vouch=vouch, on_stop=on_stop).run(sockets=[sock])


def server(
    app: Any, *, log_level: str = "warning", max_connections: int | None = None,
    request_timeout: float = REQUEST_DEADLINE, vouch: Vouch | None = None, on_stop: Callable[[], object] | None = None,
) -> Server:
    """The uvicorn server `serve` runs: guarded connections (`GuardedH11Protocol`) with their own `Rules`."""
    cap = connection_cap()
    rules = Rules(max_connections=cap if max_connections is None else min(max_connections, cap),
                  deadline=request_timeout, pressed_deadline=min(request_timeout, PRESSED_DEADLINE), vouch=vouch)
    protocol = type("ServedH11Protocol", (GuardedH11Protocol,), {"rules": rules})
    config = Config(app, http=protocol, log_level=log_level, timeout_keep_alive=KEEP_ALIVE,
                    lifespan="on", ws="none")
    return StoppingServer(config, on_stop)


class StoppingServer(Server):
    """Uvicorn's server, which also calls `on_stop` when a signal asks it to stop: uvicorn waits
    for the requests in flight before it closes the app, and a call waiting on something that
    may never come (the log's lock, held by a server cut off from the database) would hold the
    stop up for as long; `on_stop` cuts such waits short."""

    def __init__(self, config: Config, on_stop: Callable[[], object] | None = None) -> None:
        super().__init__(config)
        self._on_stop = on_stop

    def handle_exit(self, sig: int, frame: Any) -> None:
        if self._on_stop is not None:
            self._on_stop()
        super().handle_exit(sig, frame)
