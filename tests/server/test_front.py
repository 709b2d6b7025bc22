"""The stdio front answers a session as the SDK would, without the SDK, and hands over the rest."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.wire
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
RANDOM = re.compile(r"[0-9a-f]{30,32}")
"""stream and correlation ids"""


def request(ident: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, **({"params": params} if params is not None else {})}


def call(ident: int, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return request(ident, "tools/call", {"name": tool, **({"arguments": arguments} if arguments is not None else {})})


HANDSHAKE = [
    request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "desktop", "version": "1"}}),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]
PRIMER = [*HANDSHAKE, request(2, "tools/list", {}), call(3, "read_graph"), request(4, "ping")]
"""A first session: the SDK answers, and what the front needs is kept."""
SESSION = [
    *HANDSHAKE,
    request(2, "tools/list", {}),
    request(3, "ping"),
    call(4, "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["math"]}]}),
    call(5, "add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}),
    call(6, "create_relations", {"relations": [{"from": "Ada", "to": "Ada", "relationType": "knows"}]}),
    call(7, "search_nodes", {"query": "MATH"}),
    call(8, "read_graph"),
    call(9, "search_nodes", {"query": "math", "colour": "red"}),
    call(10, "get_entity_history", {"name": "Ada"}),
]


def session(store: Path, messages: list[dict[str, Any] | bytes]) -> tuple[list[dict[str, Any]], str]:
    """The replies to `messages` sent in one go to a fresh server process, and what it imported."""
    wire = b"".join(m if isinstance(m, bytes) else json.dumps(m).encode() + b"\n" for m in messages)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "chronograph", "--store", str(store)],
                          input=wire, capture_output=True, env=ENV, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    replies = [json.loads(RANDOM.sub("X", TIME.sub("T", line))) for line in done.stdout.decode().splitlines()]
    return replies, done.stderr.decode()


def sdk_loaded(imports: str) -> bool:
    return re.search(r"\| +mcp\.server\.mcpserver$", imports, re.MULTILINE) is not None


META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "desktop", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}


def stateless(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same requests as the 2026-07-28 protocol asks them: no handshake, each names its asker
    (and no ping: that version has none)."""
    out = [request(0, "server/discover", META)]
    for message in messages:
        if "id" in message and message["method"] not in ("initialize", "ping"):
            out.append({**message, "params": {**message.get("params", {}), **META}})
    return out


@pytest.mark.parametrize("protocol", ["handshake", "stateless"])
def test_a_later_session_is_answered_by_the_front_exactly_as_the_sdk_answers(tmp_path: Path, protocol: str) -> None:
    shaped = (lambda messages: messages) if protocol == "handshake" else stateless
    first, imports = session(tmp_path / "front", shaped(PRIMER))
    assert sdk_loaded(imports)  # nothing kept yet: the SDK answered, and its answers were kept
    by_front, imports = session(tmp_path / "front", shaped(SESSION))
    assert not sdk_loaded(imports)
    by_sdk, imports = session(tmp_path / "sdk", shaped(SESSION))
    assert sdk_loaded(imports)
    assert by_front == by_sdk
    assert len(by_front) == len([m for m in shaped(SESSION) if "id" in m])
    assert by_front[:2] == first[:2]


def test_the_sdk_takes_over_where_the_front_cannot_answer_and_nothing_is_answered_twice(tmp_path: Path) -> None:
    session(tmp_path / "store", PRIMER)  # keeps the SDK's answers
    replies, imports = session(tmp_path / "store", [
        *HANDSHAKE,
        call(2, "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]}),
        request(3, "resources/read", {"uri": "memory://knowledge-graph"}),
        b"this is not json\n",
        call(4, "nope", {}),
        call(5, "open_nodes", {"names": ["Ada"]}),
    ])
    assert sdk_loaded(imports)
    by_id = {r.get("id"): r for r in replies}
    assert len(replies) == len(by_id) == 6 and set(by_id) == {1, 2, 3, None, 4, 5}
    assert json.loads(by_id[3]["result"]["contents"][0]["text"])["entities"][0]["name"] == "Ada"
    assert by_id[None]["error"]["code"] == -32700  # the line that was not JSON
    assert by_id[4]["result"]["isError"] is True
    assert by_id[5]["result"]["structuredContent"]["entities"][0]["name"] == "Ada"


def test_the_front_records_the_client_as_the_actor_and_exits_when_stdin_closes(tmp_path: Path) -> None:
    session(tmp_path / "store", PRIMER)
    replies, imports = session(tmp_path / "store", [
        *HANDSHAKE,
        call(2, "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]}),
        call(3, "get_audit_log", {}),
    ])
    assert not sdk_loaded(imports)
    [event] = replies[2]["result"]["structuredContent"]["events"]
    assert event["actor"] == "desktop"


def test_another_profile_or_protocol_version_is_answered_by_the_sdk_first(tmp_path: Path) -> None:
    session(tmp_path / "store", PRIMER)
    newer = [{**HANDSHAKE[0], "params": {**HANDSHAKE[0]["params"], "protocolVersion": "2025-11-25"}}, HANDSHAKE[1]]
    assert sdk_loaded(session(tmp_path / "store", newer)[1])
    assert not sdk_loaded(session(tmp_path / "store", newer)[1])


ASKS_2026 = [{**HANDSHAKE[0], "params": {**HANDSHAKE[0]["params"], "protocolVersion": "2026-07-28"}},
             HANDSHAKE[1], call(2, "read_graph")]


@pytest.mark.parametrize(("primer", "tricky"), [
    # a handshake asking for 2026-07-28 settles on an older version: its answers must not
    # be taken for the stateless 2026-07-28 protocol's
    (ASKS_2026, stateless([call(2, "read_graph")])),
    (stateless(PRIMER), ASKS_2026),
    # a request of the other generation inside a session, and a malformed tool name
    (PRIMER, [*HANDSHAKE, {**call(2, "read_graph"), "params": {"name": "read_graph", **META}},
              request(3, "tools/call", {"name": ["read_graph"]}), call(4, "read_graph")]),
    (stateless(PRIMER), [*stateless([call(2, "read_graph")]), HANDSHAKE[0], request(5, "tools/call", {"name": 7})]),
])
def test_whatever_the_front_kept_a_tricky_session_is_answered_as_the_sdk_answers_it(
    tmp_path: Path, primer: list[dict[str, Any]], tricky: list[dict[str, Any]]
) -> None:
    session(tmp_path / "primed", primer)
    by_front, _ = session(tmp_path / "primed", tricky)
    by_sdk, _ = session(tmp_path / "fresh", tricky)
    def by_id(replies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(replies, key=lambda reply: json.dumps(reply.get("id")))

    assert by_id(by_front) == by_id(by_sdk)


def test_a_result_with_a_lone_surrogate_beside_the_kept_json_is_escaped_whole() -> None:
    import msgspec
    from chronograph.server.front import _encoded

    line = _encoded({"content": [{"text": msgspec.Raw(b'"hi"'), "type": "text"}],
                     "structuredContent": msgspec.Raw(b'{"a":1}'), "_meta": {"x": "\ud800"}})
    assert line == b'{"content":[{"text":"hi","type":"text"}],"structuredContent":{"a":1},"_meta":{"x":"\\ud800"}}'
