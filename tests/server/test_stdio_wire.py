"""Raw lines on a stdio server: every message with an id is answered, whatever it holds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.stdio import Oversized, framed, parse_line

pytestmark = pytest.mark.wire

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(request_id: int, name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


def converse(store: Path, lines: list[bytes], *extra: str) -> list[dict[str, Any]]:
    """Send `lines` after the handshake; return every reply, in order."""
    body = b"\n".join([json.dumps(INIT).encode(), json.dumps(INITIALIZED).encode(), *lines]) + b"\n"
    done = subprocess.run([sys.executable, "-m", "chronograph", "--store", str(store), *extra],
                          input=body, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    replies = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    return [r for r in replies if r.get("id") != 1]


def test_hostile_lines_each_get_an_answer_and_the_server_reads_on(tmp_path: Path) -> None:
    deep = b"[" * 5000 + b"]" * 5000
    lines = [
        b"this is not json",
        deep,
        b'{"jsonrpc": "2.0", "id": 2, "method": 42}',
        call(3, "create_entities", {"entities": [{"name": "\ud800", "entityType": "t", "observations": []}]}),
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"create_entities","arguments":'
        b'{"entities":[{"name":"bad \xff\xfe bytes","entityType":"t","observations":[]}]}}}',
        b"x" * 20_000,
        call(5, "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]}),
    ]
    replies = converse(tmp_path / "store", lines, "--max-message", "16K")
    by_id = {r["id"]: r for r in replies}
    nulls = [r for r in replies if r["id"] is None]
    assert [r["error"]["code"] for r in nulls] == [-32700, -32700, -32600]  # not JSON, too deep, too long
    assert by_id[2]["error"]["code"] == -32600
    assert by_id[3]["result"]["isError"] and "entities[0].name" in by_id[3]["result"]["content"][0]["text"]
    assert by_id[4]["result"]["isError"] and "entities[0].name" in by_id[4]["result"]["content"][0]["text"]
    assert not by_id[5]["result"].get("isError") and by_id[5]["result"]["structuredContent"]["entities"]


def test_a_refused_line_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    converse(store, [call(2, "create_entities", {"entities": [{"name": "\ud800", "entityType": "t",
                                                               "observations": []}]})])
    replies = converse(store, [call(3, "read_graph", {})])
    assert replies[0]["result"]["structuredContent"]["entities"] == []


@pytest.mark.anyio
async def test_lines_are_framed_whatever_the_chunks_and_long_ones_dropped() -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        for piece in [b"ab", b"c\nde", b"f\n", b"x" * 10, b"yy\nok\n", b"tail"]:
            yield piece

    lines = [line async for line in framed(chunks(), limit=5)]
    assert lines == [b"abc", b"def", b"xxxxxxxxxxyy", b"ok", b"tail"]
    assert [isinstance(line, Oversized) for line in lines] == [False, False, True, False, False]


def test_an_oversized_request_is_refused_under_its_own_id() -> None:
    reply, answered = parse_line(Oversized(b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"x":"yyy'))
    assert answered and reply.message.id == 41 and "--max-message" in reply.message.error.message  # type: ignore[union-attr]


def test_a_message_that_is_json_but_not_json_rpc_keeps_its_id_in_the_error() -> None:
    reply, answered = parse_line(b'{"jsonrpc": "2.0", "id": "seven", "params": 3}')
    assert answered and reply.message.id == "seven" and reply.message.error.code == -32600  # type: ignore[union-attr]
