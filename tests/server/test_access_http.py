"""Over HTTP, each request is answered for the principal its authentication put in the ASGI
scope (`PRINCIPAL_KEY`): the MCP endpoint's tools and resources and the explorer's API alike.
A test wrapper stands in for the authenticator (the `X-Test-Principal` header names one)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from chronograph.application.engine.principal import Principal
from chronograph.server.app import Runtime, create_server
from chronograph.server.authentication import PRINCIPAL_KEY
from chronograph.server.config import Settings
from chronograph.server.http import http_app
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from support.mcp import entity

pytestmark = pytest.mark.anyio

PRINCIPALS = {
    "reader": Principal("reader", {"alpha": "read"}),
    "elsewhere": Principal("elsewhere", {"bravo": "write"}),
    "writer": Principal("writer", {"alpha": "write"}),
    "admin": Principal("admin", {"alpha": "admin"}),
}
BASE = "http://127.0.0.1"


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[tuple[Runtime, Any]]:
    """An HTTP server in process (its lifespan run) whose requests carry the principal their
    `X-Test-Principal` header names, as an authenticator would put it in the scope (behind the
    guard, which finds no token required and says `local`)."""
    settings = Settings(store=tmp_path / "store", embeddings="off")
    runtime = Runtime(settings, offload=True)
    guarded = http_app(create_server(settings, runtime), runtime, host="127.0.0.1", token=None)

    starlette = guarded.app

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:  # behind the guard, which says `local`
        if scope["type"] == "http":
            name = dict(scope["headers"]).get(b"x-test-principal")
            if name is not None:
                scope = {**scope, PRINCIPAL_KEY: PRINCIPALS[name.decode()]}
        await starlette(scope, receive, send)

    guarded.app = app
    async with starlette.router.lifespan_context(starlette):
        for workspace, name in (("alpha", "AlphaOne"), ("bravo", "BravoOne")):
            runtime.memory.write("create_entities", {"workspace": workspace, "entities": [
                entity(name, "thing", f"{workspace}-fact")]}, actor="setup")
        yield runtime, guarded


def http(app: Any, who: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE, timeout=30,
                              headers={"X-Test-Principal": who})


@pytest.mark.parametrize(("who", "status"), [("reader", 200), ("elsewhere", 403), ("writer", 200), ("admin", 200)])
async def test_the_explorer_answers_each_request_for_its_principal(tmp_path: Path, who: str, status: int) -> None:
    async with served(tmp_path) as (runtime, app), http(app, who) as client:
        head = runtime.memory.log.head()
        answers = [await client.get(f"/ui/api/{endpoint}?workspace=alpha{extra}") for endpoint, extra in (
            ("overview", ""), ("graph", ""), ("graph", "&q=AlphaOne"), ("entity", "&name=AlphaOne"), ("audit", ""),
            ("diff", "&from=1&to=2"))]
        assert runtime.memory.log.head() == head
    assert [a.status_code for a in answers] == [status] * len(answers)
    said = " ".join(a.text for a in answers)
    assert "BravoOne" not in said and "bravo-fact" not in said
    if status == 403:
        assert {a.json()["code"] for a in answers} == {"forbidden"}
        assert "AlphaOne" not in said
    else:
        assert [w["name"] for w in answers[0].json()["workspaces"]] == ["alpha"]  # not bravo: no grant there


@pytest.mark.parametrize(("who", "refused"), [("reader", True), ("elsewhere", True), ("writer", False)])
async def test_a_tool_call_over_http_is_made_for_the_request_s_principal(
    tmp_path: Path, who: str, refused: bool
) -> None:
    async with served(tmp_path) as (runtime, app), http(app, who) as client, Client(
            streamable_http_client(BASE + "/mcp", http_client=client)) as mcp:
        head = runtime.memory.log.head()
        result = await mcp.call_tool("create_entities", {"workspace": "alpha", "entities": [entity("Ada")]})
        listed = await mcp.call_tool("list_workspaces", {})
        wrote = runtime.memory.log.head() != head
        try:
            graph = (await mcp.read_resource("memory://workspaces")).contents[0].text  # type: ignore[union-attr]
        except MCPError as error:
            graph = error.message
    assert (result.is_error, wrote) == (refused, not refused)
    shown = [w["name"] for w in listed.structured_content["workspaces"]]  # type: ignore[index]
    assert shown == PRINCIPALS[who].readable(["alpha", "bravo"])
    assert [w["name"] for w in json.loads(graph)["workspaces"]] == shown


async def test_an_http_request_without_a_principal_is_the_runtime_s_own(tmp_path: Path) -> None:
    async with served(tmp_path) as (_, app), httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        overview = (await client.get("/ui/api/overview?workspace=bravo")).json()
    assert [w["name"] for w in overview["workspaces"]] == ["alpha", "bravo"]  # the local user's: every grant
