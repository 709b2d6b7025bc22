"""Hostile messages on the wire, stdio and HTTP: every one is answered, a rejected one writes nothing.

The in-process fuzz (test_fuzz.py) reaches the layer the tools call; this one reaches
the transports: raw lines that are not JSON, JSON that is not JSON-RPC, nesting too deep,
lone surrogates, bytes that are not UTF-8, lines over the size limit, and tool calls
with arguments bent out of shape, against a server in its own process, with the log
read from outside after every message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.eventstore import LmdbLog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fuzz import calls
from support.http import start

pytestmark = pytest.mark.wire

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}}
LIMIT = 64 << 10
"""--max-message of the stdio server: small, so that oversized lines are cheap to send."""

garbage = st.one_of(  # mostly answered with id null (an id the line carries is kept)
    st.binary(max_size=200).filter(lambda b: b"\n" not in b and b.strip()),
    st.integers(min_value=1, max_value=6000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(min_value=1, max_value=3000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    st.just(b"x" * (LIMIT + 10)),
    st.sampled_from([b"null", b"[]", b"{}", b'"text"', b"42", b'{"jsonrpc":"2.0"}', b'{"jsonrpc":"1.0","id":1}']),
)
"""Lines the server must answer with an error."""


def odd_line(request_id: Any, method: str, depth: int) -> bytes:
    """A request under an odd id, its params sometimes nested beyond what the parser reads."""
    params = {"name": "read_graph", "arguments": {}} if method == "tools/call" else {}
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
    return line.replace(b"{}}", b'{"x":' + b"[" * depth + b"]" * depth + b"}}") if depth > 1000 else line


def tool_line(request_id: int, name: str, arguments: Any, spoil: int) -> bytes:
    """A tools/call line; `spoil` sometimes swaps a text byte for bytes that are not UTF-8."""
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()
    if spoil == 1:  # inside the first string of the arguments: still JSON, no longer UTF-8
        quote = line.find(b'"', line.find(b'"arguments":') + len(b'"arguments":'))
        if quote != -1:
            line = line[: quote + 1] + b"\xff\xfe" + line[quote + 1 :]
    return line


messages = st.one_of(
    st.tuples(st.just("call"), calls, st.integers(min_value=0, max_value=5)),
    st.tuples(st.just("garbage"), garbage, st.just(0)),
    st.tuples(st.just("not-json-rpc"), st.dictionaries(st.sampled_from(["method", "params", "result", "x"]),
                                                       st.integers() | st.text(max_size=5), max_size=3),
              st.just(0)),
    st.tuples(st.just("odd-id"), st.tuples(
        st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False), st.just([1]),
                  st.just({}), st.integers(min_value=2**63, max_value=2**80)),
        st.sampled_from(["ping", "tools/list", "tools/call"]),
        st.integers(min_value=0, max_value=2000)), st.just(0)),
)

outcomes: Counter[str] = Counter()


class StdioServer:
    """A server in its own process, spoken to line by line."""

    def __init__(self, store: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chronograph", "--store", str(store), "--max-message", str(LIMIT)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.next_id = 1
        self.send(json.dumps(INIT).encode())
        assert self.reply()["id"] == 0
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the server closed stdout (exit code {self.process.poll()})"
        return json.loads(line)  # always valid UTF-8 JSON

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.process.stdout.close()


def head(log: LmdbLog) -> int:
    with log.read() as reader:
        return reader.head()


def exchange(server: StdioServer, log: LmdbLog, message: tuple[str, Any, int]) -> None:
    kind, body, spoil = message
    before = head(log)
    if kind == "call":
        request_id = server.next_id = server.next_id + 1
        name, arguments = body
        server.send(tool_line(request_id, name, arguments, spoil))
        reply = server.reply()
        assert reply["id"] == request_id, reply  # an oversized line too: its id is read from its start
        if "error" in reply or reply["result"].get("isError"):
            outcomes["refused"] += 1
            assert head(log) == before, f"a refused {name} call wrote to the log"
            text = reply["error"]["message"] if "error" in reply else reply["result"]["content"][0]["text"]
            assert text
        else:
            outcomes["accepted"] += 1
    elif kind == "garbage":
        server.send(body)
        reply = server.reply()
        assert reply["error"]["code"] in (-32700, -32600), reply
        assert reply["id"] is None or f'"id":{json.dumps(reply["id"])}'.encode() in body.replace(b" ", b""), reply
        outcomes["garbage"] += 1
        assert head(log) == before
    elif kind == "odd-id":  # an id MCP does not allow: answered under it when JSON-RPC allows it
        server.send(odd_line(*body))
        reply = server.reply()
        request_id = body[0]
        expected = request_id if isinstance(request_id, float | int | None) and not isinstance(request_id, bool) \
            else None
        if isinstance(request_id, int) and not isinstance(request_id, bool):
            assert reply["id"] == expected and ("result" in reply or "error" in reply), reply  # an id all the same
        else:
            assert reply["id"] == expected and "error" in reply, reply
        outcomes["odd ids"] += 1
        assert head(log) == before
    else:
        request_id = server.next_id = server.next_id + 1
        server.send(json.dumps({**body, "jsonrpc": "2.0", "id": request_id}).encode())
        reply = server.reply()
        assert reply["id"] in (request_id, None) and "error" in reply, reply
        outcomes["invalid"] += 1
        assert head(log) == before


@pytest.fixture(scope="module")
def stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StdioServer, LmdbLog]]:
    store = tmp_path_factory.mktemp("wire") / "store"
    server = StdioServer(store)
    server.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "create_entities", "arguments": {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["math"]},
            {"name": "Bob", "entityType": "person", "observations": []}]}}}).encode())
    assert not server.reply()["result"].get("isError")
    log = LmdbLog(store, readonly=True)
    try:
        yield server, log
    finally:
        log.close()
        server.close()


def run(server: StdioServer, log: LmdbLog, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(message=messages)
    def fuzz(message: tuple[str, Any, int]) -> None:
        exchange(server, log, message)

    fuzz()


def test_a_few_hundred_hostile_messages_over_stdio_are_all_answered(stdio: tuple[StdioServer, LmdbLog]) -> None:
    outcomes.clear()
    run(*stdio, 300)
    assert outcomes["refused"] > 30 and outcomes["garbage"] > 10 and outcomes["invalid"] > 10
    assert outcomes["odd ids"] > 10


@pytest.mark.slow
def test_thousands_of_hostile_messages_over_stdio_are_all_answered(stdio: tuple[StdioServer, LmdbLog]) -> None:
    outcomes.clear()
    run(*stdio, int(os.environ.get("CHRONOGRAPH_WIRE_EXAMPLES", "5000")))
    print(f"wire fuzz outcomes (stdio): {dict(outcomes)}")


def http_run(base: str, log: LmdbLog, examples: int) -> Counter[str]:
    import httpx2 as httpx

    seen: Counter[str] = Counter()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with httpx.Client(timeout=60) as http:
        reply = http.post(base + "/mcp", headers=headers, content=json.dumps(INIT).encode())
        headers["mcp-session-id"] = reply.headers["mcp-session-id"]
        http.post(base + "/mcp", headers=headers,
                  content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

        @settings(max_examples=examples, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                         HealthCheck.filter_too_much])
        @given(message=messages, request_id=st.integers(min_value=1, max_value=2**31))
        def fuzz(message: tuple[str, Any, int], request_id: int) -> None:
            kind, body, spoil = message
            before = head(log)
            if kind == "call":
                content = tool_line(request_id, body[0], body[1], spoil)
            elif kind == "garbage":
                content = body
            elif kind == "odd-id":
                content = odd_line(*body)
            else:
                content = json.dumps({**body, "jsonrpc": "2.0", "id": request_id}).encode()
            answer = http.post(base + "/mcp", headers=headers, content=content)
            assert 200 <= answer.status_code < 500, answer.status_code  # answered, never a crash (5xx)
            if answer.status_code >= 400 or b'"isError":true' in answer.content or b'"error"' in answer.content:
                seen["refused"] += 1
                assert head(log) == before
            else:
                seen["accepted"] += 1

        fuzz()
    return seen


def test_a_few_hundred_hostile_messages_over_http_are_all_answered(tmp_path: Path) -> None:
    for base in start(tmp_path, None, "--max-body", str(LIMIT)):
        with LmdbLog(tmp_path / "store", readonly=True) as log:
            seen = http_run(base, log, 200)
    assert seen["refused"] > 50


@pytest.mark.slow
def test_thousands_of_hostile_messages_over_http_are_all_answered(tmp_path: Path) -> None:
    for base in start(tmp_path, None, "--max-body", str(LIMIT)):
        with LmdbLog(tmp_path / "store", readonly=True) as log:
            seen = http_run(base, log, int(os.environ.get("CHRONOGRAPH_WIRE_EXAMPLES", "5000")))
    print(f"wire fuzz outcomes (http): {dict(seen)}")
