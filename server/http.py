"""Streamable HTTP: the MCP endpoint at /mcp, /health and /ready, behind one guard.

The guard refuses, before anything else runs: requests without the bearer token when
one is configured (401), a Host or Origin that is not this server's (DNS rebinding:
421 and 403), and bodies over the size limit (413). It covers every route, the health
probes included.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chronograph.server.app import Runtime
from chronograph.server.config import DEFAULT_MAX_BODY

__all__ = ["Guard", "http_app"]

LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Guard:
    """ASGI middleware: token, Host, Origin and body-size checks for every HTTP request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        hosts: set[str],
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.app = app
        self.token = token
        self.hosts = {h.lower() for h in hosts}
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if "content-length" not in headers and scope.get("method") in ("POST", "PUT", "PATCH"):
            # A chunked body has announced no size: read it (up to the limit) before the app does.
            body, whole = await self._read_at_most(receive)
            if not whole:
                await _error(413, f"request bodies are limited to {self.max_body} bytes")(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _read_at_most(self, receive: Receive) -> tuple[bytes, bool]:
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(parts), True
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return b"", False
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts), True

    def _refusal(self, headers: dict[str, str]) -> Response | None:
        host = headers.get("host", "").lower()
        if _hostname(host) not in self.hosts:
            return _error(421, f"host {host!r} is not served here")
        origin = headers.get("origin")
        if origin is not None and _hostname(origin.split("://", 1)[-1].lower()) not in self.hosts:
            return _error(403, f"origin {origin!r} is not allowed")
        if self.token is not None:
            given = headers.get("authorization", "")
            expected = f"Bearer {self.token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                response = _error(401, "a valid bearer token is required (Authorization: Bearer ...)")
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return _error(413, f"request bodies are limited to {self.max_body} bytes")
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def http_app(
    server: MCPServer,
    runtime: Runtime,
    *,
    host: str,
    token: str | None,
    allowed_hosts: list[str] | None = None,
    max_body: int = DEFAULT_MAX_BODY,
) -> Any:
    """The ASGI app: MCP at /mcp, /health, /ready, all behind the `Guard`."""

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @server.custom_route("/ready", methods=["GET"])
    async def ready(_: Request) -> Response:
        try:
            behind = runtime.memory.views.behind()
        except Exception as error:  # the store is closed or unreadable
            return JSONResponse({"status": "unavailable", "reason": str(error)}, status_code=503)
        if behind:
            return JSONResponse({"status": "catching up", "behind": behind}, status_code=503)
        return JSONResponse({"status": "ready", "position": runtime.memory.log.head()})

    hosts = set(LOOPBACK) | {host} | set(allowed_hosts or ())
    # The guard checks Host and Origin for every route; the SDK's own check would only
    # know the MCP endpoint, so it is told to let through what the guard let through.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(
        transport_security=security, host=host, max_request_body_size=max_body,
    )
    return Guard(app, token=token, hosts=hosts, max_body=max_body)

