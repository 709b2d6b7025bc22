"""The HTTP edge under abuse: slow clients, floods of connections and sessions, clashes, hints."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.http import ROOT, request, start

pytestmark = pytest.mark.wire

INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[str]:
    yield from start(tmp_path, None)


@pytest.fixture
def strict_server(tmp_path: Path) -> Iterator[str]:
    yield from start(tmp_path, None, "--request-timeout", "1", "--max-connections", "8",
                     "--sessions-per-address", "2")


def closed_by_server(sock: socket.socket, within: float = 10.0) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_half_sent_headers_are_cut_off_and_the_server_keeps_answering(strict_server: str) -> None:
    host, port = strict_server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as slow, socket.create_connection((host, int(port))) as silent:
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        assert request(strict_server + "/health")[0] == 200
        assert closed_by_server(slow)
        assert closed_by_server(silent)  # connected, said nothing


def test_a_connection_over_the_cap_takes_the_place_of_the_one_that_owed_a_request_longest(strict_server: str) -> None:
    host, port = strict_server.removeprefix("http://").split(":")
    idle = [socket.create_connection((host, int(port))) for _ in range(8)]  # the cap: said nothing
    try:
        code, _ = request(strict_server + "/health")  # a ninth: served, in the place of the first
        assert code == 200
        assert closed_by_server(idle[0], within=5)
        for sock in idle[1:]:  # the others are cut off by the request timeout
            assert closed_by_server(sock)
    finally:
        for sock in idle:
            sock.close()
    assert request(strict_server + "/health")[0] == 200


def test_a_slowloris_flood_does_not_keep_a_real_client_out(tmp_path: Path) -> None:
    from http_flood import Flood, probe

    for base in start(tmp_path, "t0ken", "--max-connections", "40"):
        host, port = base.removeprefix("http://").split(":")
        with Flood(host, int(port), 60) as flood:  # more half-open sockets than the server keeps open
            assert flood.turned_away(40)  # the flood has filled the cap and is being turned away
            seen = probe(base + "/ready", {"Authorization": "Bearer t0ken"}, 3.0)
        assert seen.failed == 0 and seen.ok > 0, seen


def status(url: str, body: bytes) -> int:
    """The status of a POST whose reply may be an event stream (read whole, not parsed)."""
    import httpx2 as httpx

    with httpx.Client(timeout=30) as http:
        return http.post(url, headers=MCP_HEADERS, content=body).status_code


def initialize(base: str) -> str:
    """A new session's id."""
    import httpx2 as httpx

    with httpx.Client(timeout=30) as http:
        reply = http.post(base + "/mcp", headers=MCP_HEADERS, content=INIT)
        assert reply.status_code == 200, reply.text
        return reply.headers["mcp-session-id"]


def alive(base: str, session: str) -> bool:
    """Whether `session` is still open (a ping in it is answered; a closed one is 404)."""
    import httpx2 as httpx

    with httpx.Client(timeout=30) as http:
        reply = http.post(base + "/mcp", headers={**MCP_HEADERS, "mcp-session-id": session,
                                                  "mcp-protocol-version": "2025-06-18"},
                          content=json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode())
        assert reply.status_code in (200, 404), reply.text
        return reply.status_code == 200


def test_one_client_opening_session_after_session_does_not_lock_out_the_others(strict_server: str) -> None:
    flood = [initialize(strict_server) for _ in range(5)]  # the share is 2
    other = initialize(strict_server)  # another client on the same address still gets in
    assert alive(strict_server, other)
    assert [alive(strict_server, session) for session in flood] == [False, False, False, False, True]


def opened_together(base: str, count: int) -> list[str]:
    """The sessions `count` clients opening one each at the same moment got (those not refused)."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx2 as httpx

    def opening(_: int) -> str | None:
        with httpx.Client(timeout=30) as http:
            reply = http.post(base + "/mcp", headers=MCP_HEADERS, content=INIT)
            assert reply.status_code in (200, 429), reply.text
            return reply.headers.get("mcp-session-id")

    with ThreadPoolExecutor(count) as pool:
        return [session for session in pool.map(opening, range(count)) if session]


def test_sessions_opened_all_at_once_are_admitted_at_most_to_the_share(tmp_path: Path) -> None:
    for base in start(tmp_path, None, "--sessions-per-address", "2"):  # connections enough for all at once
        opened = opened_together(base, 30)
        assert opened and sum(alive(base, session) for session in opened) <= 2


def test_many_openings_at_once_from_one_address_leave_exactly_its_share_open(tmp_path: Path) -> None:
    for base in start(tmp_path, None, "--sessions-per-address", "20"):
        opened = opened_together(base, 60)
        assert sum(alive(base, session) for session in opened) == 20


def test_a_busy_session_is_never_the_one_closed(strict_server: str) -> None:
    import httpx2 as httpx

    sessions = [initialize(strict_server) for _ in range(2)]
    with httpx.Client(timeout=30) as http:
        streams = [http.stream("GET", strict_server + "/mcp", headers={
            "Accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})
            for session in sessions]
        opened = [stream.__enter__() for stream in streams]  # a listening stream each: both busy
        try:
            assert all(reply.status_code == 200 for reply in opened)
            assert status(strict_server + "/mcp", INIT) == 429
        finally:
            for stream in streams:
                stream.__exit__(None, None, None)


def test_the_bearer_scheme_is_case_insensitive(tmp_path: Path) -> None:
    for base in start(tmp_path, "t0ken"):
        for scheme in ("Bearer", "bearer", "BEARER"):
            assert request(base + "/health", headers={"Authorization": f"{scheme} t0ken"})[0] == 200
        assert request(base + "/health", headers={"Authorization": "Basic t0ken"})[0] == 401


def test_a_foreign_host_is_told_how_to_allow_it(open_server: str) -> None:
    code, body = request(open_server.replace("127.0.0.1", "localhost") + "/health")
    assert code == 200
    host, port = open_server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: memory.example:8765\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
    reply = received.decode()
    assert " 421 " in reply.splitlines()[0] and "--allow-host memory.example" in reply


def test_a_port_in_use_is_one_line_and_nothing_is_announced(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "chronograph", "--http", "--port", str(port), "--store",
                               str(tmp_path / "store")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "cannot listen on 127.0.0.1" in done.stderr and "serving" not in done.stderr


def test_a_server_told_to_serve_the_network_without_a_token_warns(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CHRONOGRAPH_TOKEN"}
    process = subprocess.Popen([sys.executable, "-m", "chronograph", "--http", "--host", "0.0.0.0", "--port",
                                "0", "--store", str(tmp_path / "store"), "--allow-network-without-token"],
                               env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        lines = [process.stderr.readline() for _ in range(3)]
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()
    assert any("without $CHRONOGRAPH_TOKEN (--allow-network-without-token)" in line for line in lines)
    assert any("--allow-host" in line for line in lines)


def test_health_probes_are_answered_while_whole_graph_reads_run(tmp_path: Path) -> None:
    from chronograph.application import Memory

    with Memory(tmp_path / "store", sync=False) as memory:
        for base in range(0, 30_000, 1000):
            memory.write("create_entities", {"entities": [
                {"name": f"e{i}", "entityType": "t", "observations": ["x" * 200] * 3} for i in range(base, base + 1000)
            ]}, actor="t")
    for server in start(tmp_path, None, "--max-reply", "0"):
        finished = threading.Event()

        def long_read(server: str = server, finished: threading.Event = finished) -> None:
            import httpx2 as httpx

            with httpx.Client(timeout=120) as http:
                reply = http.post(server + "/mcp", headers=MCP_HEADERS, content=INIT)
                session = {"mcp-session-id": reply.headers["mcp-session-id"]}
                http.post(server + "/mcp", headers={**MCP_HEADERS, **session}, content=json.dumps(
                    {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
                for _ in range(3):  # three whole-graph reads, back to back
                    http.post(server + "/mcp", headers={**MCP_HEADERS, **session}, content=json.dumps({
                        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "read_graph", "arguments": {}}}).encode())
            finished.set()

        reader = threading.Thread(target=long_read)
        reader.start()
        answered = 0
        while not finished.is_set():  # probes answered while the reads run (a blocked loop answers none)
            assert request(server + "/health")[0] == 200
            answered += 1
        reader.join(120)
        assert answered >= 10
