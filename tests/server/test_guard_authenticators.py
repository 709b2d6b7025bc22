"""The guard and its authenticators, in process: the principal it puts in the request's scope,
who must present a token, and tokens that cannot be read letting nobody in."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Principal
from chronograph.server.addresses import served_names
from chronograph.server.authentication import PRINCIPAL_KEY
from chronograph.server.http import Guard
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

pytestmark = pytest.mark.anyio
ALICE = Principal("alice", {"*": "read"})


class Known:
    """An authenticator of one token; `tokens` says whether it has any (None: it cannot tell)."""

    def __init__(self, tokens: bool | None = True, broken: bool = False) -> None:
        self.tokens, self.broken = tokens, broken

    def any(self) -> bool:
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
