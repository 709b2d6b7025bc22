"""OAuth resource-server mode over HTTP: the 401 challenge, the protected-resource metadata,
and an access token's principal on the request that reaches the tool call."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from chronograph.server.app import Runtime, create_server
from chronograph.server.authentication import PRINCIPAL_KEY
from chronograph.server.config import Settings
from chronograph.server.grantmap import GrantMap
from chronograph.server.http import Guard, http_app
from chronograph.server.listener import bind, server
from chronograph.server.oauth import oauth_authenticator
from chronograph.tools.cli import main
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import Context
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from support.http import ROOT, announced_port, free_port, request
from support.issuer import Issuer, issuer, rsa_key
from support.mcp import call, entity, names

GRANTS = GrantMap(scopes={"chronograph:write": {"*": "write"}}, subjects={"alice": {"audit": "admin"}})


class Served:
    def __init__(self, base: str, signer: Issuer, audience: str) -> None:
        self.base, self.signer, self.audience = base, signer, audience

    def token(self, **changes: object) -> str:
        return self.signer.token(aud=self.audience, **changes)  # type: ignore[arg-type]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A server on a loopback port taking the access tokens of a local issuer (keys from a file),
    with one extra tool, `whoami`, answering the principal its request carries."""
    signer = issuer()
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(signer.jwks()))
    sock = bind("127.0.0.1", 0)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    audience = base + "/mcp"
    authenticator, resource = oauth_authenticator(signer.url, audience, jwks=jwks, grants=GRANTS)
    settings = Settings(store=tmp_path / "store", embeddings="off")
    runtime = Runtime(settings, offload=True)
    runtime.open()
    mcp = create_server(settings, runtime)

    @mcp.tool()
    def whoami(ctx: Context) -> str:
        """The principal of the request that carries this call."""
        request = ctx.request_context.request
        return str(request.scope[PRINCIPAL_KEY].name) if request is not None else "none"

    app = http_app(mcp, runtime, host="127.0.0.1", token=None, authenticators=[authenticator], resource=resource)
    listener = server(app)
    thread = threading.Thread(target=listener.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not listener.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield Served(base, signer, audience)
    finally:
        listener.should_exit = True
        thread.join(30)
        sock.close()
        runtime.close()


def test_a_request_without_a_token_gets_401_pointing_at_the_metadata(served: Served) -> None:
    reply = httpx.post(served.base + "/mcp", json={})
    assert reply.status_code == 401
    metadata = f"{served.base}/.well-known/oauth-protected-resource/mcp"
    assert reply.headers["WWW-Authenticate"] == f'Bearer resource_metadata="{metadata}"'


BAD = {
    "expired": lambda served: served.token(exp=1_000_000_000, iat=999_999_000),
    "another audience": lambda served: served.signer.token(aud="https://other.example.com/mcp"),
    "another issuer": lambda served: served.token(iss="https://evil.example.com"),
    "a bad signature": lambda served: served.token(key=rsa_key()),
    "an unknown key id": lambda served: served.token(kid="rsa-9", key=rsa_key()),
    # {"alg":"none","kid":"rsa-1"}, a valid token's claims, no signature
    "alg none": lambda served: "eyJhbGciOiJub25lIiwia2lkIjoicnNhLTEifQ." + served.token().split(".")[1] + ".",
    "not a JWT": lambda served: "opaque",
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_request_with_a_bad_token_gets_401_with_invalid_token(served: Served, case: str) -> None:
    token = BAD[case](served)
    reply = httpx.get(served.base + "/health", headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 401
    challenge = reply.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="invalid_token"')
    assert f'resource_metadata="{served.base}/.well-known/oauth-protected-resource/mcp"' in challenge


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"])
def test_the_protected_resource_metadata_is_served_without_a_token(served: Served, path: str) -> None:
    reply = httpx.get(served.base + path)
    assert reply.status_code == 200
    assert reply.json() == {
        "resource": served.audience,
        "authorization_servers": [served.signer.url],
        "scopes_supported": ["chronograph:write"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Chronograph",
    }


def test_a_valid_token_opens_the_probes(served: Served) -> None:
    reply = httpx.get(served.base + "/ready", headers={"Authorization": f"Bearer {served.token()}"})
    assert reply.status_code == 200


@pytest.mark.anyio
async def test_an_access_token_s_grants_decide_what_its_calls_may_do(served: Served) -> None:
    """alice's map entry grants admin on `audit` alone; carol's token maps to nothing."""
    for subject, workspace, allowed in (("alice", "audit", True), ("alice", "default", False),
                                        ("carol", "audit", False), ("carol", "default", False)):
        headers = {"Authorization": f"Bearer {served.token(sub=subject, scope=None)}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http, Client(
                streamable_http_client(served.base + "/mcp", http_client=http)) as client:
            arguments = {"workspace": workspace, "entities": [entity(f"Ada {subject}", "person", "wrote")]}
            result = await client.call_tool("create_entities", arguments)
            assert result.is_error is not allowed, (subject, workspace)
            if not allowed:
                said = result.content[0].text  # type: ignore[union-attr]
                assert "Forbidden" in said and repr(workspace) in said and f"oauth:{subject}" in said


@pytest.mark.anyio
async def test_the_access_token_s_principal_reaches_the_tool_call(served: Served) -> None:
    for subject in ("alice", "bob"):
        headers = {"Authorization": f"Bearer {served.token(sub=subject)}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http, Client(
                streamable_http_client(served.base + "/mcp", http_client=http)) as client:
            result = await client.call_tool("whoami", {})
            assert not result.is_error
            assert result.content[0].text == f"oauth:{subject}"  # type: ignore[union-attr]


def test_no_token_appears_in_any_log_line(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    tokens = [served.token(), served.token(exp=1_000_000_000, iat=999_999_000), served.token(iss="https://x.example")]
    with caplog.at_level(logging.DEBUG):
        for token in tokens:
            httpx.get(served.base + "/ready", headers={"Authorization": f"Bearer {token}"})
    assert caplog.records  # the refusals were logged
    for token in tokens:
        assert all(part not in caplog.text for part in token.split("."))


@pytest.mark.parametrize(("argv", "says"), [
    (["--http", "--auth-issuer", "https://id.example.com"], "--audience"),
    (["--auth-issuer", "https://id.example.com", "--audience", "https://m.example.com/mcp"], "--http"),
    (["--http", "--audience", "https://m.example.com/mcp"], "--auth-issuer"),
    (["--http", "--auth-issuer", "http://id.example.com", "--audience", "https://m.example.com/mcp"], "https"),
])
def test_serve_refuses_oauth_options_that_do_not_fit(tmp_path: Path, argv: list[str], says: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--store", str(tmp_path / "store"), *argv]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "store").exists()  # refused before anything was opened


@pytest.mark.wire
@pytest.mark.anyio
async def test_serve_takes_an_issuer_s_tokens_with_its_keys_file_and_grant_map(tmp_path: Path) -> None:
    signer = issuer()
    (tmp_path / "jwks.json").write_text(json.dumps(signer.jwks()))
    (tmp_path / "grants.toml").write_text('[subjects]\nalice = { "*" = "write" }\n')
    for _ in range(5):  # the audience names the port, so it is chosen first; taken meanwhile, try another
        base = f"http://127.0.0.1:{free_port()}"
        process = subprocess.Popen(
            [sys.executable, "-m", "chronograph", "--http", "--port", base.rsplit(":", 1)[1], "--store",
             str(tmp_path / "store"), "--auth-issuer", signer.url, "--audience", base + "/mcp", "--jwks",
             str(tmp_path / "jwks.json"), "--auth-map", str(tmp_path / "grants.toml"), "--log-level", "DEBUG"],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )
        try:
            said = announced_port(process)[1]
            break
        except AssertionError as error:
            process.wait(timeout=30)
            assert process.stderr is not None
            process.stderr.close()
            if "cannot listen on" not in str(error):
                raise
    else:
        pytest.fail("five ports in a row were taken before the server could bind them")
    token = signer.token(aud=base + "/mcp", scope=None)
    try:
        deadline = time.monotonic() + 60
        while True:  # the metadata needs no token: it is how a client learns where to get one
            try:
                if request(base + "/.well-known/oauth-protected-resource")[0] == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.1)
        assert request(base + "/health")[0] == 401
        assert request(base + "/health", headers={"Authorization": f"Bearer {signer.token()}"})[0] == 401
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http, Client(
                streamable_http_client(base + "/mcp", http_client=http)) as client:
            await call(client, "create_entities", {"entities": [entity("Ada", "person", "wrote the notes")]})
            assert names(await call(client, "read_graph")) == ["Ada"]
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert process.stderr is not None
        said += process.stderr.read()
        process.stderr.close()
    assert "accepting access tokens of" in said
    assert all(part not in said for part in token.split("."))


@pytest.mark.anyio
async def test_the_server_s_own_token_keeps_working_beside_the_issuer_s(tmp_path: Path) -> None:
    signer = issuer()
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(signer.jwks()))
    authenticator, resource = oauth_authenticator(signer.url, "http://x/mcp", jwks=jwks, grants=GRANTS)

    async def who(request: Request) -> PlainTextResponse:
        principal = request.scope.get(PRINCIPAL_KEY)
        return PlainTextResponse(principal.name if principal is not None else "-")

    app = Guard(Starlette(routes=[Route("/", who)]), token="s3cret", hosts={"x"}, authenticators=[authenticator],
                resource=resource)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as client:
        own = await client.get("/", headers={"Authorization": "Bearer s3cret"})
        theirs = await client.get("/", headers={"Authorization": f"Bearer {signer.token(aud='http://x/mcp')}"})
        wrong = await client.get("/", headers={"Authorization": "Bearer s3cre7"})
    assert (own.status_code, theirs.status_code, wrong.status_code) == (200, 200, 401)
    assert theirs.text == "oauth:alice"


@pytest.mark.anyio
async def test_a_401_names_the_scope_the_map_asks_clients_to_request(tmp_path: Path) -> None:
    signer = issuer()
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(signer.jwks()))
    authenticator, resource = oauth_authenticator(signer.url, "http://x/mcp", jwks=jwks)  # the default map

    async def ok(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Guard(Starlette(routes=[Route("/", ok)]), token=None, hosts={"x"}, authenticators=[authenticator],
                resource=resource)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as client:
        missing = await client.get("/")
    assert missing.headers["WWW-Authenticate"] == (
        'Bearer scope="chronograph:write", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp"')
