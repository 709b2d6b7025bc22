"""Listening beyond loopback: refused without a token unless asked for by name; the URL
printed is one that works; this machine's names are taken only from this machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from chronograph.server.addresses import announced, is_loopback, served_names
from chronograph.server.http import Guard
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from support.http import ROOT, announced_port, start

NETWORK_FLAG = "--allow-network-without-token"


def outward_address() -> str | None:
    """An address of this machine that is not loopback (where a connection from 'elsewhere' comes from)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))  # no packet is sent: this only picks the interface
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if is_loopback(address) or address == "0.0.0.0" else address


def run_command(*argv: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CHRONOGRAPH_TOKEN"}
    if token:
        env["CHRONOGRAPH_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "chronograph", *argv], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def existing_store(tmp_path: Path) -> Path:
    from chronograph.application import Memory

    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person",
                                                       "observations": ["secret"]}]}, actor="t")
    return tmp_path / "store"


@pytest.mark.wire
@pytest.mark.parametrize("command", [["ui"], ["serve", "--http"]])
def test_listening_beyond_loopback_without_a_token_is_refused_naming_the_flag(
        existing_store: Path, command: list[str]) -> None:
    done = run_command(*command, "--store", str(existing_store), "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0" in done.stderr and NETWORK_FLAG in done.stderr
    assert "$CHRONOGRAPH_TOKEN" in done.stderr


def served(store: Path, *extra: str, token: str | None = None) -> Iterator[tuple[str, list[str]]]:
    """`chronograph ui` in its own process: (its base URL on loopback, its first lines on stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "CHRONOGRAPH_TOKEN"}
    if token:
        env["CHRONOGRAPH_TOKEN"] = token
    process = subprocess.Popen([sys.executable, "-m", "chronograph", "ui", "--store", str(store), "--port", "0",
                                *extra], env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        port, said = announced_port(process)
        lines = said.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):  # the rest of a line cut where the read stopped
            lines[-1] += process.stderr.readline()
        while not any("(read-only)" in line for line in lines):
            line = process.stderr.readline()
            assert line, f"the explorer exited: {lines}"
            lines.append(line)
        yield f"http://127.0.0.1:{port}", lines
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


@pytest.mark.wire
def test_with_the_flag_the_explorer_serves_the_network_warning_and_printing_a_link_that_works(
        existing_store: Path) -> None:
    for base, lines in served(existing_store, "--host", "0.0.0.0", NETWORK_FLAG):
        port = base.rsplit(":", 1)[1]
        assert any("warning: listening on 0.0.0.0" in line for line in lines)
        link = next(line for line in lines if "(read-only)" in line)
        assert f"http://{socket.gethostname()}:{port}/ui/" in link and "127.0.0.1" not in link
        with httpx.Client(timeout=10) as http:  # the name it printed passes the Host check
            assert http.get(base + "/health", headers={"Host": f"{socket.gethostname()}:{port}"}).status_code == 200


@pytest.mark.wire
def test_this_machine_s_names_are_refused_from_elsewhere(existing_store: Path) -> None:
    outward = outward_address()
    if outward is None:
        pytest.skip("this machine has no address but loopback")
    for base, _ in served(existing_store, "--host", "0.0.0.0", NETWORK_FLAG):
        port = int(base.rsplit(":", 1)[1])
        for host, status in ((f"localhost:{port}", 421), (f"127.0.0.1:{port}", 421), (f"{outward}:{port}", 200)):
            with socket.create_connection((outward, port)) as sock:  # a client whose address is not loopback
                sock.sendall(f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                reply = b""
                while chunk := sock.recv(4096):
                    reply += chunk
            assert reply.split(b" ")[1] == str(status).encode(), (host, reply[:200])
        with httpx.Client(timeout=10) as http:  # from this machine, its names are fine
            assert http.get(base + "/health").status_code == 200


def test_a_server_on_loopback_needs_no_token_and_a_token_lets_it_listen_anywhere(tmp_path: Path) -> None:
    for base in start(tmp_path, None):
        assert httpx.get(base + "/health").status_code == 200
    for base in start(tmp_path, "t0ken", "--host", "0.0.0.0"):  # the token is the protection: no flag needed
        assert httpx.get(base + "/health", headers={"Authorization": "Bearer t0ken"}).status_code == 200


def guard(peer: str, any_ip: bool = False) -> httpx.AsyncClient:
    """A client from `peer` of a guard bound to every address (any_ip as said) that allows memory.example."""
    async def ok(_: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Guard(Starlette(routes=[Route("/", ok)]), token=None, hosts=served_names("0.0.0.0", ["memory.example"]),
                any_ip=any_ip)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=(peer, 4242)), base_url="http://x")


@pytest.mark.anyio
@pytest.mark.parametrize(("peer", "host", "origin", "status"), [
    ("127.0.0.1", "localhost:8766", None, 200),
    ("::1", "[::1]:8766", None, 200),
    ("192.0.2.7", "localhost:8766", None, 421),
    ("192.0.2.7", "127.0.0.1", None, 421),
    ("192.0.2.7", "0.0.0.0:8766", None, 421),
    ("::ffff:127.0.0.1", "localhost", None, 200),
    ("192.0.2.7", "memory.example", None, 200),
    ("192.0.2.7", "memory.example", "http://localhost:3000", 403),  # a page on the client's own localhost
    ("127.0.0.1", "localhost", "http://localhost:3000", 200),
    ("192.0.2.7", "evil.example", None, 421),
])
async def test_the_host_check_takes_this_machine_s_names_only_from_this_machine(
        peer: str, host: str, origin: str | None, status: int) -> None:
    headers = {"Host": host, **({"Origin": origin} if origin else {})}
    async with guard(peer) as http:
        assert (await http.get("/", headers=headers)).status_code == status


@pytest.mark.anyio
async def test_a_server_on_every_address_answers_to_any_ip_address_but_no_foreign_name() -> None:
    async with guard("192.0.2.7", any_ip=True) as http:
        assert (await http.get("/", headers={"Host": "192.0.2.2:8766"})).status_code == 200
        assert (await http.get("/", headers={"Host": "[2001:db8::2]:8766"})).status_code == 200
        assert (await http.get("/", headers={"Host": "rebound.example"})).status_code == 421
    async with guard("192.0.2.7") as http:
        assert (await http.get("/", headers={"Host": "192.0.2.2:8766"})).status_code == 421


def test_the_announced_url_is_one_a_client_can_use() -> None:
    assert announced("127.0.0.1", 8766, "/ui/") == "http://127.0.0.1:8766/ui/"
    assert announced("::1", 8765, "/mcp") == "http://[::1]:8765/mcp"
    assert announced("0.0.0.0", 8766, "/ui/") == f"http://{socket.gethostname()}:8766/ui/"
    assert socket.gethostname().lower() in served_names("0.0.0.0", [])
