"""HTTP under pressure: a slowloris flood, many sessions, a long call beside short ones, a
burst of openings; each against a real `chronograph serve --http` process.

    python bench/http_flood.py [--sockets 1050] [--seconds 45] [--token] [--silent] [--json FILE]
    python bench/http_flood.py load|long|admit ... [--baseline CMD]   (see http_load.py)

Starts `chronograph serve --http` in its own process, measures a client asking `/ready`
(a new connection each time, as a load balancer's probe does) for a few seconds, then
opens --sockets connections that send half a request and never the rest, reopening every
one the server closes, for --seconds while the client goes on asking. Prints the client's
success rate and p50/p99 latency before and during the flood, and what the flood managed.
With --token the server requires a bearer token, which the client has and the flood has not;
with --silent the flood's sockets send nothing at all (connect and wait).
"""

from __future__ import annotations

import argparse
import os
import secrets
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from report import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
HALF = b"GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
"""What each flood socket sends: headers begun, never ended."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(store: Path, port: int, token: str | None, *extra: str) -> subprocess.Popen[bytes]:
    """`chronograph serve --http` on 127.0.0.1:port, once it answers /health."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CHRONOGRAPH_TOKEN", None)
    if token:
        env["CHRONOGRAPH_TOKEN"] = token
    process = subprocess.Popen([sys.executable, "-m", "chronograph", "serve", "--http", "--port", str(port),
                                "--store", str(store), *extra], cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited at start")
        if ask(f"http://127.0.0.1:{port}/health", headers, 1.0)[0]:
            return process
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not come up")


def ask(url: str, headers: dict[str, str], timeout: float) -> tuple[bool, float]:
    """(answered 200, seconds taken) for one GET on a new connection."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as reply:
            ok = reply.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        ok = False
    return ok, time.perf_counter() - started


@dataclass
class Probes:
    """What the real client saw."""

    ok: int = 0
    failed: int = 0
    latencies: list[float] = field(default_factory=list)
    """Seconds per answered probe."""

    @property
    def rate(self) -> float:
        return self.ok / max(1, self.ok + self.failed)

    def quantile(self, q: float) -> float:
        if len(self.latencies) < 2:
            return self.latencies[0] if self.latencies else float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[int(q * 100) - 1]


def probe(url: str, headers: dict[str, str], seconds: float, pause: float = 0.05) -> Probes:
    """Ask `url` again and again for `seconds` (a pause between asks); count what came back."""
    seen = Probes()
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        ok, took = ask(url, headers, 5.0)
        if ok:
            seen.ok += 1
            seen.latencies.append(took)
        else:
            seen.failed += 1
        time.sleep(pause)
    return seen


class Flood:
    """`sockets` connections that each send half a request and wait, reopened when the server
    closes them, until stopped."""

    def __init__(self, host: str, port: int, sockets: int, *, silent: bool = False) -> None:
        self.address = (host, port)
        self.opening = b"" if silent else HALF
        """What each socket sends: half a request, or nothing at all."""
        self.wanted = sockets
        self.opened = 0
        self.cut = 0
        """Flood sockets the server closed (cut off, refused or evicted)."""
        self.peak = 0
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Flood:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def turned_away(self, sockets: int, timeout: float = 60.0) -> bool:
        """Wait until the server has closed `sockets` flood sockets; False if it did not in `timeout`."""
        with self._changed:
            return self._changed.wait_for(lambda: self.cut >= sockets, timeout)

    def filled(self, sockets: int, timeout: float = 60.0) -> bool:
        """Wait until the flood holds `sockets` sockets at once; False if it did not in `timeout`."""
        with self._changed:
            return self._changed.wait_for(lambda: self.peak >= sockets, timeout)

    def _open(self, selector: selectors.BaseSelector) -> bool:
        sock = socket.socket()
        sock.settimeout(2.0)
        try:
            sock.connect(self.address)
            sock.sendall(self.opening)
        except OSError:
            sock.close()
            return False
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        self.opened += 1
        return True

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        try:
            while not self._stop.is_set():
                while len(selector.get_map()) < self.wanted and not self._stop.is_set():
                    if not self._open(selector):
                        time.sleep(0.01)
                        break
                with self._changed:
                    self.peak = max(self.peak, len(selector.get_map()))
                    self._changed.notify_all()
                for key, _ in selector.select(timeout=0.05):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        data = sock.recv(4096)
                    except OSError:
                        data = b""
                    if not data:  # closed by the server: open another
                        selector.unregister(sock)
                        sock.close()
                        with self._changed:
                            self.cut += 1
                            self._changed.notify_all()
        finally:
            for key in list(selector.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
            selector.close()


def run(sockets: int, seconds: float, token: str | None, before: float = 5.0, *extra: str,
        silent: bool = False) -> dict[str, object]:
    """Probe, flood while probing, and return the figures."""
    with tempfile.TemporaryDirectory(prefix="bench-flood-") as base:
        port = free_port()
        server = start_server(Path(base) / "store", port, token, *extra)
        try:
            url = f"http://127.0.0.1:{port}/ready"
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            quiet = probe(url, headers, before)
            with Flood("127.0.0.1", port, sockets, silent=silent) as flood:
                flood.filled(int(sockets * 0.9))  # let the flood reach its size first
                loud = probe(url, headers, seconds)
                figures = {"flood_opened": flood.opened, "flood_cut": flood.cut, "flood_peak": flood.peak}
            alive = server.poll() is None
        finally:
            server.terminate()
            server.wait(30)
    return {
        "sockets": sockets, "seconds": seconds, "token": bool(token), "silent": silent, "server_alive": alive,
        **figures,
        **{f"{phase}_{name}": value for phase, seen in (("before", quiet), ("during", loud)) for name, value in (
            ("ok", seen.ok), ("failed", seen.failed), ("rate", seen.rate),
            ("p50_ms", seen.quantile(0.5) * 1000), ("p99_ms", seen.quantile(0.99) * 1000))},
    }


def main(argv: list[str] | None = None) -> int:
    """Run the flood (or, with a first argument load, long or admit, that bench of http_load.py);
    print the table; 0 if the client was answered throughout (>= 99% during the flood)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("load", "long", "admit"):
        from http_load import main as load_main

        return load_main(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sockets", type=int, default=1050)
    parser.add_argument("--seconds", type=float, default=45.0)
    parser.add_argument("--token", action="store_true", help="the server requires a token (the client has it)")
    parser.add_argument("--silent", action="store_true", help="flood sockets send nothing at all (not half a request)")
    parser.add_argument("--json", type=Path, default=Path("bench-flood.json"))
    parser.add_argument("extra", nargs="*", help="more options for the server (after --)")
    args = parser.parse_args(argv)
    token = secrets.token_hex(16) if args.token else None
    figures = run(args.sockets, args.seconds, token, 5.0, *args.extra, silent=args.silent)
    rows = [
        ("flood sockets held at once (peak)", f"{figures['flood_peak']:,}", f"{args.sockets:,} wanted"),
        ("flood sockets opened / cut off by the server",
         f"{figures['flood_opened']:,} / {figures['flood_cut']:,}", ""),
        *((f"/ready {phase}: answered", f"{figures[f'{phase}_ok']:,} of "
           f"{figures[f'{phase}_ok'] + figures[f'{phase}_failed']:,} ({figures[f'{phase}_rate']:.1%})",
           "all" if phase == "before" else ">= 99%") for phase in ("before", "during")),
        *((f"/ready {phase}: p50 / p99", f"{figures[f'{phase}_p50_ms']:.1f} / {figures[f'{phase}_p99_ms']:.1f} ms",
           "") for phase in ("before", "during")),
        ("server alive after the flood", "yes" if figures["server_alive"] else "NO", "yes"),
    ]
    print_table(f"slowloris: {args.sockets:,} {'silent' if args.silent else 'half-open'} sockets for "
                f"{args.seconds:.0f} s"
                f"{' (token required; the client has it)' if token else ''}", rows)
    write_json(args.json, figures)
    return 0 if figures["server_alive"] and figures["during_rate"] >= 0.99 else 1  # type: ignore[operator]


if __name__ == "__main__":
    raise SystemExit(main())
