"""A TCP proxy between a server and PostgreSQL, to cut the network under it.

`cut()` turns it into a black hole: connections stay open but nothing crosses, and new
ones are accepted and never answered, as when a cable is pulled (no reset ever comes).
`mend()` lets traffic through again for the connections made from then on.
"""

from __future__ import annotations

import socket
import threading


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
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        """Nothing crosses any more, and nothing says so."""
        self.open.clear()

    def mend(self) -> None:
        """Traffic crosses again; the connections held through the cut are dropped (as a
        reset after the cable is back would drop them)."""
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.close()
                except OSError:
                    pass
            self._sockets.clear()
        self.open.set()

    def close(self) -> None:
        self.listener.close()
        self.mend()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
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
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                self.open.wait()  # held while cut
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
