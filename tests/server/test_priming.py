"""Start-up answers made ahead (`server/priming.py`), and kept before the client has them."""

from __future__ import annotations

import fcntl
import json
import os
from functools import partial
from pathlib import Path

import anyio
from chronograph.application import Memory
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from chronograph.server.front import HANDSHAKE, STATELESS
from chronograph.server.priming import PRIMED_PROFILES, prime
from chronograph.server.replies import ReplyCache
from chronograph.server.runtime import Runtime
from chronograph.server.stdio import run_stdio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS


def test_priming_keeps_every_opening_answer_at_every_protocol_version(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        versions = len(HANDSHAKE_PROTOCOL_VERSIONS) + len(MODERN_PROTOCOL_VERSIONS)
        assert prime(memory) == len(PRIMED_PROFILES) * versions
        for name in PRIMED_PROFILES:
            cache = ReplyCache(memory, Settings(store=tmp_path / "store", profile=name))
            for version in HANDSHAKE_PROTOCOL_VERSIONS:
                for method in ("initialize", "tools/list", "ping", "tools/call"):
                    assert cache.get(method, f"{HANDSHAKE}:{version}") is not None, (name, version, method)
            for version in MODERN_PROTOCOL_VERSIONS:
                for method in ("server/discover", "tools/list", "tools/call"):
                    assert cache.get(method, f"{STATELESS}:{version}") is not None, (name, version, method)
        assert memory.log.head() == 0  # priming wrote no event


def test_priming_loads_no_word_index(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        things = [{"name": f"thing {i}", "entityType": "thing", "observations": [f"note {i}"]} for i in range(50)]
        memory.write("create_entities", {"entities": things}, actor="t")
        memory.prepare_search()
        assert memory.views.search.loaded() == []
        prime(memory)
        assert memory.views.search.loaded() == []  # a million entities' index is a gigabyte: the import's peak


class Watching(ReplyCache):
    """A reply cache that notes, at each answer it keeps, what the client had already been sent."""

    def __init__(self, memory: Memory, settings: Settings, wire: int) -> None:
        super().__init__(memory, settings)
        self.wire = wire
        self.sent = b""
        self.kept: list[tuple[str, bytes]] = []

    def put(self, method: str, protocol: str, result: bytes) -> None:
        try:
            while chunk := os.read(self.wire, 1 << 16):
                self.sent += chunk
        except BlockingIOError:
            pass
        self.kept.append((method, self.sent))
        super().put(method, protocol, result)


def test_an_answer_is_kept_before_the_client_has_it(tmp_path: Path) -> None:
    """So a client that kills its server as soon as it has an answer leaves the next spawn with it."""
    settings = Settings(store=tmp_path / "store")
    wire = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "d", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_graph", "arguments": {}}}]
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    fcntl.fcntl(stdout_read, fcntl.F_SETFL, fcntl.fcntl(stdout_read, fcntl.F_GETFL) | os.O_NONBLOCK)
    os.write(stdin_write, b"".join(json.dumps(m).encode() + b"\n" for m in wire))
    os.close(stdin_write)
    with Memory(tmp_path / "store") as memory:
        cache = Watching(memory, settings, stdout_read)
        server = create_server(settings, Runtime.over(memory, settings))
        anyio.run(partial(run_stdio, server, fds=(stdin_read, stdout_write), cache=cache))
    for fd in (stdin_read, stdout_write, stdout_read):
        os.close(fd)
    assert [method for method, _ in cache.kept] == ["initialize", "tools/call"]
    for (_, sent), ident in zip(cache.kept, (1, 2), strict=True):
        assert f'"id":{ident},'.encode() not in sent
