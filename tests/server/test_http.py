"""Streamable HTTP: loopback by default, bearer token, Host/Origin checks, size limit, probes."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.http import request, start
from support.mcp import call, entity, names

pytestmark = pytest.mark.wire  # a server in a subprocess: skip locally with -m 'not wire'

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token"


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[str]:
    yield from start(tmp_path, None)


@pytest.fixture
def guarded_server(tmp_path: Path) -> Iterator[str]:
    yield from start(tmp_path, TOKEN)


def test_health_and_readiness_answer(open_server: str) -> None:
    assert request(open_server + "/health") == (200, {"status": "ok"})
    status, body = request(open_server + "/ready")
    assert status == 200 and body["status"] == "ready"


def test_the_workspace_server_s_probes_answer_under_api(open_server: str) -> None:
    assert request(open_server + "/api/health") == (200, {"status": "ok"})
    assert request(open_server + "/api/ready")[1]["status"] == "ready"


def test_the_server_binds_to_loopback_by_default(open_server: str) -> None:
    port = int(open_server.rsplit(":", 1)[1])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            address = probe.getsockname()[0]
        except OSError:
            address = "127.0.0.1"
    if address.startswith("127."):
        pytest.skip("this machine has no non-loopback address to try")
    with pytest.raises(OSError), socket.create_connection((address, port), timeout=2):
        pass


@pytest.mark.parametrize("path", ["/health", "/ready", "/mcp"])
def test_without_the_token_every_request_is_refused(guarded_server: str, path: str) -> None:
    assert request(guarded_server + path)[0] == 401
    status, body = request(guarded_server + path, headers={"Authorization": "Bearer wrong"})
    assert status == 401
    code = body["error"]["data"]["code"] if path == "/mcp" else body["code"]  # a JSON-RPC error on /mcp
    assert code == "unauthorized"


def test_with_the_token_the_probes_answer(guarded_server: str) -> None:
    assert request(guarded_server + "/ready", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200


def test_a_foreign_host_or_origin_is_refused(open_server: str) -> None:
    status, body = request(open_server + "/health", headers={"Host": "evil.example:80"})
    assert (status, body["code"]) == (421, "misdirected") and "--allow-host" in body["error"]
    status, body = request(open_server + "/health", headers={"Origin": "http://evil.example"})
    assert (status, body["code"]) == (403, "forbidden")
    assert request(open_server + "/health", headers={"Origin": "http://localhost:3000"})[0] == 200


def test_an_oversized_body_is_refused_before_it_is_read(open_server: str) -> None:
    host, port = open_server.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.putrequest("POST", "/mcp")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(64 * 1024 * 1024))
        connection.endheaders()  # announce 64 MiB, send none of it
        response = connection.getresponse()
        assert response.status == 413 and b"limited" in response.read()
    finally:
        connection.close()


def test_a_streamed_body_over_the_limit_is_refused(open_server: str) -> None:
    host, port = open_server.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        chunks = (b"x" * 65536 for _ in range(80))  # 5 MiB, chunked: no Content-Length
        connection.request("POST", "/mcp", body=chunks, encode_chunked=True,
                           headers={"Content-Type": "application/json", "Accept": "application/json"})
        assert connection.getresponse().status == 413
    except ConnectionResetError:
        pass  # the server may also cut the upload short once it has answered
    finally:
        connection.close()


@pytest.mark.anyio
async def test_mcp_over_http_with_the_token_keeps_workspaces_apart(guarded_server: str) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    async with http, Client(streamable_http_client(guarded_server + "/mcp", http_client=http)) as c:
        await call(c, "create_entities", {"entities": [entity("Secret")], "workspace": "team-a"})
        assert names(await call(c, "read_graph", {"workspace": "team-a"})) == ["Secret"]
        assert (await call(c, "search_nodes", {"query": "secret", "workspace": "team-b"}))["entities"] == []


def test_a_call_is_answered_with_one_json_body(open_server: str) -> None:
    """Not an event stream of one event: the stream cost the event loop a third of a short call."""
    import json
    import urllib.request

    def post(message: dict, session: str | None = None) -> tuple[str, dict, str | None]:  # type: ignore[type-arg]
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   **({"Mcp-Session-Id": session} if session else {})}
        req = urllib.request.Request(open_server + "/mcp", data=json.dumps(message).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.headers["Content-Type"], json.loads(response.read()), response.headers["Mcp-Session-Id"]

    kind, answer, session = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert kind.startswith("application/json") and answer["id"] == 1 and session
    kind, answer, _ = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "read_graph", "arguments": {}}}, session)
    assert kind.startswith("application/json") and answer["result"]["isError"] is False
