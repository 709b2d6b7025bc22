"""A TCP proxy between a process and PostgreSQL that lets one commit through and loses its answer.

`arm()` makes the next client message that holds `COMMIT` the last that crosses on its
connection: it reaches the database, which commits, and its answer is swallowed; then the
client's end is closed, as when the network drops after the commit left. Every other
connection, and every one made later, goes through untouched.
"""

from __future__ import annotations

import socket
import threading


class AnswerlessProxy:
    """127.0.0.1:`port` forwarded to `target`; the next commit's answer lost once armed."""

    def __init__(self, target: tuple[str, int], pattern: bytes = b"COMMIT") -> None:
        self.target = target
        self.pattern = pattern
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut = threading.Event()
        """Set once a commit's answer was lost."""
        self._armed = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database_url: str) -> str:
        """`database_url` (postgresql://user@host:port/...) through this proxy."""
        scheme, rest = database_url.split("://", 1)
        user, rest = rest.split("@", 1) if "@" in rest.split("/", 1)[0] else ("", rest)
        path = rest.split("/", 1)[1] if "/" in rest else ""
        return f"{scheme}://{user + '@' if user else ''}127.0.0.1:{self.port}/{path}"

    def arm(self) -> None:
        """Lose the answer of the next commit that crosses (and end its connection)."""
        with self._lock:
            self._armed = True
            self.cut.clear()

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for sock in self._sockets:
                _close(sock)
            self._sockets.clear()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            lost = threading.Event()
            threading.Thread(target=self._outbound, args=(client, upstream, lost), daemon=True).start()
            threading.Thread(target=self._inbound, args=(upstream, client, lost), daemon=True).start()

    def _outbound(self, client: socket.socket, upstream: socket.socket, lost: threading.Event) -> None:
        tail = b""  # the end of the last chunk: a pattern may straddle two
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                with self._lock:
                    fire = self._armed and self.pattern in tail + data
                    if fire:
                        self._armed = False
                tail = data[-(len(self.pattern) - 1):] if len(self.pattern) > 1 else b""
                if fire:
                    lost.set()  # from now on nothing comes back to the client
                upstream.sendall(data)  # (what follows the commit too: its pipeline's end)
        except OSError:
            pass
        _close(client)
        _close(upstream)

    def _inbound(self, upstream: socket.socket, client: socket.socket, lost: threading.Event) -> None:
        answer = b""
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                if not lost.is_set():
                    client.sendall(data)
                    continue
                answer += data  # swallowed, until the database says it is ready again: the commit is done
                if _READY in answer:
                    break
        except OSError:
            pass
        _close(client)
        _close(upstream)
        if lost.is_set():
            self.cut.set()


_READY = b"Z\x00\x00\x00\x05"
"""The start of PostgreSQL's ReadyForQuery message: what it sends once it has run all it was sent."""


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
