"""Raw lines on a stdio server: every message with an id is answered, whatever it holds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.stdio import Oversized, framed, parse_line, top_level_id

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


def refused(line: bytes) -> dict[str, Any]:
    """The answer the transport gives a line it does not pass on."""
    reply = parse_line(line)
    assert isinstance(reply, bytes), reply
    return json.loads(reply)  # type: ignore[no-any-return]


def test_an_oversized_request_is_refused_under_its_own_id() -> None:
    reply = refused(Oversized(b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"x":"yyy'))
    assert reply["id"] == 41 and "--max-message" in reply["error"]["message"]


def test_a_message_that_is_json_but_not_json_rpc_keeps_its_id_in_the_error() -> None:
    reply = refused(b'{"jsonrpc": "2.0", "id": "seven", "params": 3}')
    assert reply["id"] == "seven" and reply["error"]["code"] == -32600


def test_a_call_nested_too_deeply_to_parse_is_refused_under_its_id() -> None:
    deep = b"[" * 5000 + b"]" * 5000
    before = b'{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{"name":"read_graph","arguments":{"x":'
    assert refused(before + deep + b"}}}")["id"] == 78
    after = b'{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"x":' + deep + b'}},"id":"late"}'
    assert refused(after) == {"jsonrpc": "2.0", "id": "late", "error": {
        "code": -32700, "message": "Parse error: the message nests deeper than the server reads"}}


def test_requests_with_ids_mcp_does_not_allow_are_answered_under_them() -> None:
    for request_id in (2.5, None, -0.5):
        reply = refused(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode())
        assert reply["id"] == request_id and reply["error"]["code"] == -32600
    for unreadable in (True, [1], {"a": 1}):  # not ids JSON-RPC knows: answered under null
        reply = refused(json.dumps({"jsonrpc": "2.0", "id": unreadable, "method": "ping"}).encode())
        assert reply["id"] is None and reply["error"]["code"] == -32600


def test_an_id_is_read_only_at_the_top_and_only_whole() -> None:
    assert top_level_id('{"params":{"id":5},"id":6}') == 6
    assert top_level_id('{"a":"\\"id\\":9","id":"x]}"}') == "x]}"
    assert top_level_id('{"id":1,"id":2}') == 2  # as json.loads reads it
    for unread in ('{"id":7', '{"params":{"id":5}', '[{"id":1}]', '{"id":{"a":1}}', '{"id":true}', '"id":3'):
        assert not isinstance(top_level_id(unread), int | str), unread


def test_a_parse_error_keeps_an_id_only_if_it_came_before_the_damage() -> None:
    assert refused(b'{"jsonrpc":"2.0","id":12,"method":"ping",,}')["id"] == 12
    assert refused(b'{"jsonrpc":"2.0","id":78')["id"] is None  # perhaps 789...


def test_every_request_of_a_session_is_answered_even_when_the_front_serves_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    deep = b'{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{"name":"read_graph","arguments":{"x":' + (
        b"[" * 5000 + b"]" * 5000 + b"}}}")
    odd = [b'{"jsonrpc":"2.0","id":2.5,"method":"ping"}', b'{"jsonrpc":"2.0","id":null,"method":"ping"}']
    for _ in range(2):  # the first session is the SDK's; the second the front's, from the answers it kept
        replies = converse(store, [deep, *odd, call(3, "read_graph", {})])
        assert sorted(map(str, (r["id"] for r in replies))) == ["2.5", "3", "78", "None"]
