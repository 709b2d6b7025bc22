"""A TCP proxy between a server and PostgreSQL, to cut the network under it.

`cut()` turns it into a black hole: connections stay open but nothing crosses, and new
ones are accepted and never answered, as when a cable is pulled (no reset ever comes); but a
connection the database has sent nothing on for five seconds is dropped (the proxy's own read
timeout: most connections of a cut client end so). `hang()` is a database that takes
connections and never answers (hung, its disk stuck): the same, and nothing is ever dropped.
`mend()` lets traffic through again for the connections made from then on. `refuse()` is a
database that stopped: every connection dropped, new ones closed at once. `drop_after(marker)`
passes the next client message holding `marker` (a COMMIT), and the rest of its pipeline, to the
server, swallows the answer until the server says it has run them all, and then drops that
connection: a network lost while the answer was on its way, after the commit was done.
"""

from __future__ import annotations

import socket
import threading

READY = b"Z\x00\x00\x00\x05"
"""The start of PostgreSQL's ReadyForQuery message: what it sends once it has run all it was sent."""


class TcpProxy:
    """127.0.0.1:`port` forwarded to `target`; cut and mended at will."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open = threading.Event()
        self.open.set()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.refusing = False
        self.hanging = False
        self._marker: bytes | None = None
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        """Nothing crosses any more, and nothing says so."""
        self.open.clear()

    def hang(self) -> None:
        """What is sent is taken and never answered, on every connection, old and new; none is dropped."""
        self.hanging = True
        self.open.clear()

    def refuse(self) -> None:
        """Drop every connection and close each new one at once: the database stopped."""
        self.refusing = True
        self._drop()

    def drop_after(self, marker: bytes) -> None:
        """Pass on the next client message that holds `marker` with what follows it, then drop its
        connection once the database has run them, its answer lost."""
        self._marker = marker

    def mend(self) -> None:
        """Traffic crosses again; the connections held through the cut are dropped (as a
        reset after the cable is back would drop them)."""
        self.refusing = self.hanging = False
        self._drop()
        self.open.set()

    def _drop(self) -> None:
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.close()
                except OSError:
                    pass
            self._sockets.clear()

    def close(self) -> None:
        self.listener.close()
        self.mend()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            with self._lock:
                self._sockets.append(client)
            if not self.open.is_set():
                continue  # accepted, never answered: a black hole
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets.append(upstream)
            lost = threading.Event()
            for source, sink, outgoing in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(source, sink, outgoing, lost), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, outgoing: bool, lost: threading.Event) -> None:
        tail = b""  # the end of the last chunk: a marker may straddle two
        answer = b""
        try:
            while True:
                try:
                    data = source.recv(65536)
                except TimeoutError:
                    if self.hanging:
                        continue
                    raise
                if not data:
                    break
                self.open.wait()  # held while cut
                if not outgoing and lost.is_set():
                    answer += data  # swallowed, until the database has run what it was sent
                    if READY in answer:
                        break  # (the finally shuts both ends: the answer never comes back)
                    continue
                marker = self._marker
                if outgoing and marker is not None and marker in tail + data:
                    self._marker = None
                    lost.set()  # the rest of the pipeline (its Execute, its Sync) still crosses
                if outgoing and marker is not None:
                    tail = data[-(len(marker) - 1):]
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
