"""HTTP with the store's tokens: once the store has one, a request without a valid token gets 401
(missing, wrong, revoked, expired); a valid one's principal is recorded on every event it writes;
$CHRONOGRAPH_TOKEN keeps working as the admin principal `token`; a store without tokens serves
loopback as before, as the local user."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from chronograph.tools.tokens import main as token
from freezegun import freeze_time
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ResourceUpdatedNotification
from support.http import ROOT, announced_port, request, start
from support.mcp import call, entity

pytestmark = [pytest.mark.anyio, pytest.mark.wire]
ENV_TOKEN = "s3cret-env-token"


def issue(store: Path, capsys: pytest.CaptureFixture[str], name: str, *flags: str) -> str:
    assert token(["create", name, *flags, "--store", str(store)]) == 0
    return capsys.readouterr().out.splitlines()[-1]


@asynccontextmanager
async def client(base: str, bearer: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, Client(
            streamable_http_client(base + "/mcp", http_client=http)) as c:
        yield c


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The store's tokens: alice (write), old (expired), gone (revoked)."""
    store = tmp_path / "store"
    made = {"alice": issue(store, capsys, "alice", "--grant", "*=write")}
    with freeze_time("2020-01-01T00:00:00Z"):
        made["old"] = issue(store, capsys, "old", "--grant", "*=read", "--expires", "1d")
    made["gone"] = issue(store, capsys, "gone", "--grant", "*=read")
    assert token(["revoke", "gone", "--store", str(store)]) == 0
    return made


@pytest.fixture
def server(tmp_path: Path, tokens: dict[str, str]) -> Iterator[str]:
    yield from start(tmp_path, None, bearer=tokens["alice"])


@pytest.fixture
def both(tmp_path: Path, tokens: dict[str, str]) -> Iterator[str]:
    yield from start(tmp_path, ENV_TOKEN)


@pytest.mark.parametrize("path", ["/health", "/mcp", "/ui/api/audit"])
@pytest.mark.parametrize("given", [None, "wrong", "chg_" + "A" * 43, "old", "gone"])
def test_once_the_store_has_a_token_a_request_without_a_valid_one_gets_401(
        server: str, tokens: dict[str, str], path: str, given: str | None) -> None:
    headers = {} if given is None else bearer(tokens.get(given, given))
    status, body = request(server + path, headers=headers)
    said = body["error"]["message"] if path == "/mcp" else body["error"]  # a JSON-RPC error on the MCP endpoint
    assert status == 401 and "bearer token" in said


async def test_a_valid_token_s_name_is_the_principal_of_every_event_it_writes(
        server: str, tokens: dict[str, str]) -> None:
    assert request(server + "/ready", headers=bearer(tokens["alice"]))[0] == 200
    async with client(server, tokens["alice"]) as c:
        await call(c, "create_entities", {"entities": [entity("Ada"), entity("Bob")]})
        events = (await call(c, "get_audit_log", {}))["events"]
        mine = (await call(c, "get_audit_log", {"principal": "alice"}))["events"]
    assert {e["principal"] for e in events if e["type"] == "entity_created"} == {"alice"}
    assert [e["subject"] for e in mine] == ["Bob", "Ada"]


async def test_a_token_revoked_while_the_server_runs_is_refused_at_the_next_request(
        tmp_path: Path, server: str, tokens: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    carol = issue(tmp_path / "store", capsys, "carol", "--grant", "*=read")
    assert request(server + "/ready", headers=bearer(carol))[0] == 200
    assert token(["revoke", "carol", "--store", str(tmp_path / "store")]) == 0
    assert request(server + "/ready", headers=bearer(carol))[0] == 401
    assert request(server + "/ready", headers=bearer(tokens["alice"]))[0] == 200


async def test_the_environment_s_token_is_the_admin_principal_token_beside_the_store_s(
        both: str, tokens: dict[str, str]) -> None:
    async with client(both, ENV_TOKEN) as c:
        await call(c, "create_entities", {"entities": [entity("Ada")]})
    async with client(both, tokens["alice"]) as c:
        await call(c, "create_entities", {"entities": [entity("Bob")]})
        events = (await call(c, "get_audit_log", {}))["events"]
    assert [(e["subject"], e["principal"]) for e in events] == [("Bob", "alice"), ("Ada", "token")]
    assert request(both + "/ready")[0] == 401


async def test_a_store_without_tokens_serves_loopback_as_the_local_user(tmp_path: Path) -> None:
    started = start(tmp_path, None)
    base = next(started)
    try:
        async with client(base, None) as c:
            await call(c, "create_entities", {"entities": [entity("Ada")]})
            (event,) = (await call(c, "get_audit_log", {}))["events"]
        assert event["principal"] == "local"
    finally:
        next(started, None)


def test_the_explorer_takes_the_token_from_its_link_and_shows_the_principal(
        server: str, tokens: dict[str, str]) -> None:
    link = f"{server}/ui/?token={tokens['alice']}"
    with httpx2.Client(timeout=30, follow_redirects=True) as browser:
        opened = browser.get(link)
        assert opened.status_code == 200 and tokens["alice"] not in str(opened.url)
        feed = browser.get(f"{server}/ui/api/audit", params={"principal": "local"})
    assert feed.status_code == 200 and feed.json()["events"] == []


def test_the_ui_command_asks_for_a_token_of_the_store_too(tmp_path: Path, tokens: dict[str, str]) -> None:
    process = subprocess.Popen([sys.executable, "-m", "chronograph", "ui", "--store", str(tmp_path / "store"),
                                "--port", "0"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True)
    said = ""
    try:
        port, said = announced_port(process)
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if request(base + "/health", headers=bearer(tokens["alice"]))[0] == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None
            time.sleep(0.1)
        assert request(base + "/ui/api/overview")[0] == 401
        assert request(base + "/ui/api/overview", headers=bearer(tokens["gone"]))[0] == 401
        assert request(base + "/ui/api/overview", headers=bearer(tokens["alice"]))[0] == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert process.stderr is not None
        said += process.stderr.read()
        process.stderr.close()
    assert "?token=..." in said and tokens["alice"] not in said


async def test_a_listening_stream_ends_when_its_token_is_revoked_and_hears_nothing_after(
        tmp_path: Path, server: str, tokens: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    carol = issue(tmp_path / "store", capsys, "carol", "--grant", "*=read")
    async with client(server, carol) as listener, client(server, tokens["alice"]) as writer:
        async with listener.listen(resource_subscriptions=["memory://knowledge-graph"]) as heard:
            await call(writer, "create_entities", {"entities": [entity("Ada")]})
            with anyio.fail_after(10):
                assert (await heard.__anext__()).uri == "memory://knowledge-graph"  # type: ignore[attr-defined]
            assert token(["revoke", "carol", "--store", str(tmp_path / "store")]) == 0
            await call(writer, "create_entities", {"entities": [entity("Bob")]})
            after: list[object] = []
            with anyio.fail_after(10), pytest.raises(SubscriptionLost):  # the server closed the stream
                async for event in heard:
                    after.append(event)
            assert after == []  # nothing of Bob reached a revoked token
    assert request(server + "/mcp", method="POST", headers=bearer(carol))[0] == 401  # listening again: refused


async def test_a_handshake_era_subscriber_hears_nothing_once_its_token_is_revoked(
        tmp_path: Path, server: str, tokens: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    carol = issue(tmp_path / "store", capsys, "carol", "--grant", "*=read")
    heard: list[object] = []

    async def collect(message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            heard.append(message)

    async with httpx2.AsyncClient(headers=bearer(carol), timeout=30) as http, Client(
            streamable_http_client(server + "/mcp", http_client=http), mode="legacy", message_handler=collect) as c, \
            client(server, tokens["alice"]) as writer:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # resources/subscribe is the 2025 way
            await c.session.subscribe_resource("memory://knowledge-graph")
        await call(writer, "create_entities", {"entities": [entity("Ada")]})
        with anyio.fail_after(10):
            while not heard:
                await anyio.sleep(0.05)
        assert token(["revoke", "carol", "--store", str(tmp_path / "store")]) == 0
        await call(writer, "create_entities", {"entities": [entity("Bob")]})
        await anyio.sleep(1.0)
    assert len(heard) == 1  # Ada's write only: the stream that would carry Bob's was closed
