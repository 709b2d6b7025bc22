"""Starting an HTTP server in a subprocess and talking to it, as the HTTP tests do."""

from __future__ import annotations

import json
import os
import re
import selectors
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A port free now. Only for a test that must name its port before the server starts: a
    server told `--port 0` binds a free one itself (`announced_port`), where a port chosen here
    may be taken, by another test's server under pytest-xdist, before the server binds it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


ANNOUNCED = re.compile(rb" at https?://\S*:(\d+)/")
"""The address a server prints once it has bound its port (`serve --http` and `ui` alike)."""


def announced_port(process: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str]:
    """The port a server started with `--port 0` (its stderr a pipe) bound, read from the address
    it announces; and what it wrote to stderr until then (which `process.stderr` no longer holds)."""
    assert process.stderr is not None
    said = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as waiting:
        waiting.register(process.stderr, selectors.EVENT_READ)
        while (found := ANNOUNCED.search(said)) is None:
            left = deadline - time.monotonic()
            assert left > 0, f"the server announced no address: {said.decode(errors='replace')}"
            if waiting.select(timeout=left):
                chunk = os.read(process.stderr.fileno(), 65536)
                assert chunk, f"the server exited: {said.decode(errors='replace')}"
                said += chunk
    return int(found.group(1)), said.decode(errors="replace")


def request(url: str, *, method: str = "GET", headers: dict[str, str] | None = None,
            body: bytes | None = None) -> tuple[int, dict]:  # type: ignore[type-arg]
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@asynccontextmanager
async def session(base: str) -> AsyncIterator[Client]:
    """An MCP client over streamable HTTP to the server at `base`."""
    async with httpx2.AsyncClient(timeout=30) as http, Client(
            streamable_http_client(base + "/mcp", http_client=http)) as client:
        yield client


def start(tmp_path: Path, token: str | None, *extra: str, store: str | None = None,
          processes: list[subprocess.Popen[str]] | None = None, bearer: str | None = None) -> Iterator[str]:
    """A server on a port it chose (`token`: its $CHRONOGRAPH_TOKEN; `bearer`: the token its probe
    presents, when the store has tokens of its own)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CHRONOGRAPH_TOKEN", None)
    if token:
        env["CHRONOGRAPH_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, "-m", "chronograph", "--http", "--port", "0", "--store",
         store or str(tmp_path / "store"), *extra],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    if processes is not None:
        processes.append(process)
    base = f"http://127.0.0.1:{announced_port(process)[0]}"
    headers = {"Authorization": f"Bearer {bearer or token}"} if bearer or token else {}
    deadline = time.monotonic() + 60
    while True:
        try:
            if request(base + "/health", headers=headers)[0] == 200:
                break
        except OSError:
            pass
        assert process.poll() is None, process.stderr.read()  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the HTTP server did not come up"
        time.sleep(0.1)
    try:
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()


