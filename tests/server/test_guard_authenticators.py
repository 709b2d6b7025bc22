"""The guard and its authenticators, in process: the principal it puts in the request's scope,
who must present a token, and tokens that cannot be read letting nobody in."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Principal
from chronograph.eventstore.errors import StoreUnavailableError
from chronograph.server.addresses import served_names
from chronograph.server.authentication import PRINCIPAL_KEY
from chronograph.server.http import Guard
from chronograph.server.sessions import Sessions
from mcp_types import INTERNAL_ERROR, JSONRPCError
from mcp_types.jsonrpc import jsonrpc_message_adapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

pytestmark = pytest.mark.anyio
ALICE = Principal("alice", {"*": "read"})


class Known:
    """An authenticator of one token; `tokens` says whether it has any (None: it cannot tell)."""

    def __init__(self, tokens: bool | None = True, broken: bool = False, unreachable: bool = False) -> None:
        self.tokens, self.broken, self.unreachable = tokens, broken, unreachable

    def any(self) -> bool:
        if self.unreachable:
            raise StoreUnavailableError("the database of postgresql://db.internal/memory cannot be reached")
        if self.broken:
            raise OSError("the database went away")
        return bool(self.tokens)

    def authenticate(self, token: str) -> Principal | None:
        return ALICE if token == "alice-token" else None


def client(*authenticators: Any, token: str | None = None) -> httpx.AsyncClient:
    async def whom(request: Request) -> PlainTextResponse:
        principal = request.scope[PRINCIPAL_KEY]
        return PlainTextResponse(principal.name)

    app = Guard(Starlette(routes=[Route("/", whom)]), token=token, hosts=served_names("127.0.0.1", []),
                authenticators=list(authenticators))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 4242)),
                             base_url="http://127.0.0.1")


async def test_a_valid_token_s_principal_rides_the_request_s_scope() -> None:
    async with client(Known()) as c:
        answer = await c.get("/", headers={"Authorization": "bearer alice-token"})
        refused = await c.get("/", headers={"Authorization": "Bearer bob-token"})
    assert (answer.status_code, answer.text) == (200, "alice")
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer"


async def test_without_any_token_a_loopback_request_is_the_local_user_s() -> None:
    async with client(Known(tokens=False)) as c:
        answer = await c.get("/")
    assert (answer.status_code, answer.text) == (200, LOCAL_PRINCIPAL.name)


async def test_the_environment_s_token_is_the_admin_principal_token() -> None:
    async with client(Known(tokens=False), token="env-secret") as c:
        answer = await c.get("/", headers={"Authorization": "Bearer env-secret"})
        assert (await c.get("/")).status_code == 401
        assert (await c.get("/", headers={"Authorization": "Bearer alice-token"})).text == "alice"
    assert answer.text == "token"


async def test_tokens_that_cannot_be_read_let_nobody_in() -> None:
    async with client(Known(broken=True)) as c:
        answer = await c.get("/", headers={"Authorization": "Bearer alice-token"})
    assert answer.status_code == 503 and "cannot be read" in answer.json()["error"]


async def test_a_refusal_on_the_mcp_endpoint_is_a_json_rpc_error_whose_words_a_client_shows() -> None:
    async with client(Known(unreachable=True)) as c:
        answer = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}},
                              headers={"Authorization": "Bearer alice-token"})
        page = await c.get("/", headers={"Authorization": "Bearer alice-token"})
    refusal = jsonrpc_message_adapter.validate_json(answer.content, by_name=False)  # as the MCP SDK reads it
    assert answer.status_code == 503 and isinstance(refusal, JSONRPCError)
    assert refusal.error.code == INTERNAL_ERROR
    assert "tokens cannot be read now (its database cannot be reached)" in refusal.error.message
    assert "db.internal" not in answer.text  # the database's address is no business of an unauthenticated caller
    assert page.status_code == 503 and "cannot be read" in page.json()["error"]  # elsewhere: {"error": words}


async def test_a_session_answers_only_the_principal_that_opened_it() -> None:
    """Another principal's token naming a session it did not open is told no such session exists
    (it cannot use it, follow its stream or close it), and the session keeps serving its own."""

    async def mcp(request: Request) -> PlainTextResponse:  # the SDK's part: a session opens on initialize
        answer = PlainTextResponse(f"{request.method} for {request.scope[PRINCIPAL_KEY].name}")
        if request.method == "POST" and b"initialize" in await request.body():
            answer.headers["mcp-session-id"] = "s1"
        return answer

    app = Guard(Starlette(routes=[Route("/mcp", mcp, methods=["GET", "POST", "DELETE"])]), token="env-secret",
                hosts=served_names("127.0.0.1", []), authenticators=[Known()], sessions=Sessions(10, 100, 60.0))
    admin, alice = {"Authorization": "Bearer env-secret"}, {"Authorization": "Bearer alice-token"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 4242)),
                                 base_url="http://127.0.0.1") as c:
        opened = await c.post("/mcp", json=initialize, headers=admin)
        assert opened.headers["mcp-session-id"] == "s1"
        for method in ("GET", "POST", "DELETE"):
            stolen = await c.request(method, "/mcp", headers={**alice, "mcp-session-id": "s1"},
                                     **({"json": {"jsonrpc": "2.0", "id": 2, "method": "ping"}} if method == "POST"
                                        else {}))
            assert stolen.status_code == 404 and stolen.json()["error"]["message"] == "Session not found"
        twice = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                             headers=[*alice.items(), ("mcp-session-id", "s1"), ("mcp-session-id", "s-unknown")])
        assert twice.status_code == 400 and "2 mcp-session-id headers" in twice.json()["error"]["message"]
        own = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "ping"},
                           headers={**admin, "mcp-session-id": "s1"})
        assert (own.status_code, own.text) == (200, "POST for token")
