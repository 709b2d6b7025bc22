"""Streamable HTTP: the MCP endpoint at /mcp, /health and /ready, behind one guard.

The guard refuses, before anything else runs: requests without a valid bearer token once
one is required (401; the scheme is case-insensitive, RFC 7235): when `$CHRONOGRAPH_TOKEN`
is set, the store has any token (`chronograph token create`) or another authenticator is
configured. It asks its authenticators (server/authentication.py) in turn and puts the
principal of the token in the request's scope (`PRINCIPAL_KEY`); without a token required,
the principal is the local user's, as over stdio. It refuses a Host or Origin
that is not this server's (DNS rebinding: 421 and 403, saying how to allow a name),
bodies over the size limit (413). It covers every route, the health probes included, and
counts the MCP sessions each address holds (server/sessions.py): at its share, a new one
takes the place of the least recently used idle one (429 only when all are busy). The
explorer's page (/ui) may present the token as a cookie, or as a `token` query on the link
that opens it (a browser sends no Authorization header for a page). A bearer token that is
not the server's own is asked of its authenticators (an OAuth issuer's: server/oauth.py),
whose principal then rides the request's scope under PRINCIPAL_KEY.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Principal
from chronograph.eventstore.errors import StoreUnavailableError
from chronograph.server.addresses import LOOPBACK, WILDCARDS, is_ip, is_loopback, served_names
from chronograph.server.app import Runtime
from chronograph.server.authentication import PRINCIPAL_KEY, Authenticator, Authenticators, principal_name
from chronograph.server.config import DEFAULT_MAX_BODY
from chronograph.server.logfilters import NoTokenInLinks, OncePerMinute
from chronograph.server.revocation import cut_when_invalid, revoked
from chronograph.server.sessions import Sessions
from chronograph.server.tokens import EnvToken, store_tokens
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

if TYPE_CHECKING:
    from chronograph.server.oauth import ProtectedResource

__all__ = ["LOOPBACK", "TOKEN_COOKIE", "UI_PATH", "Guard", "http_app", "page_token"]

MCP_PATH = "/mcp"
UI_PATH = "/ui"
TOKEN_COOKIE = "chronograph_token"
SESSION_HEADER = "mcp-session-id"
READY_WAIT = 5.0
"""Seconds a write may wait for the log's lock (a database store's) before /ready says the server
is not ready: its other calls wait behind it."""
READY_SILENCE = 5.0
"""Seconds the database may leave a request of this server's unanswered (a wait for the log's lock
aside) before /ready says the server is unavailable: a working database answers in milliseconds,
a loaded one within a second or two (the follower gives up on a look after as long:
`background.LOOK_ANSWER`)."""
_BEARER = "chronograph.bearer"
"""Where `_refusal` leaves a request's valid token for `__call__` (which takes it out of the scope)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_log = logging.getLogger("chronograph.http")


class Guard:
    """ASGI middleware: token, Host, Origin, body-size and session checks for every HTTP request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        hosts: set[str],
        max_body: int = DEFAULT_MAX_BODY,
        sessions: Sessions | None = None,
        any_ip: bool = False,
        authenticators: Sequence[Authenticator] = (),
        resource: ProtectedResource | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.authenticators = Authenticators([*([EnvToken(token)] if token else []), *authenticators])
        """Asked in turn for a request's principal; `token` ($CHRONOGRAPH_TOKEN) first."""
        self.resource = resource
        """This server as an OAuth protected resource: its metadata is public, and a 401 points at it."""
        self.hosts = {h.lower() for h in hosts}
        self.any_ip = any_ip
        """Answer to any IP address as Host (a server listening on every address)."""
        self.max_body = max_body
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = await self._refusal(headers, scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if "content-length" not in headers and scope.get("method") in ("POST", "PUT", "PATCH"):
            # A chunked body has announced no size: read it (up to the limit) before the app does.
            body, whole = await self._read_at_most(receive)
            if not whole:
                refused = _error(413, f"request bodies are limited to {self.max_body} bytes", scope)
                await refused(scope, receive, send)
                return
            receive = _replay(body, receive)
        bearer = scope.pop(_BEARER, None)
        if bearer is not None:  # a stream it opens lives only as long as its token
            send = cut_when_invalid(send, partial(self.authenticators.still_valid, bearer))
        try:
            if self.sessions is not None and scope.get("path", "").rstrip("/") == MCP_PATH:
                await self._with_sessions(self.sessions, scope, headers, receive, send)
                return
            await self.app(scope, receive, send)
        except BaseException as error:
            if not revoked(error):
                raise
            _log.info("closed a response stream: its token was revoked or has expired")

    async def _with_sessions(
        self, sessions: Sessions, scope: Scope, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        """Serve an MCP request, keeping `sessions` current (see server/sessions.py)."""
        session = headers.get(SESSION_HEADER)
        owner = principal_name(scope)
        named = sum(1 for key, _ in scope["headers"] if key.decode("latin-1").lower() == SESSION_HEADER)
        if named > 1:  # the SDK reads the first, this guard the last: one request, one session
            await _error(400, f"a request names one session: {named} {SESSION_HEADER} headers", scope)(
                scope, receive, send)
            return
        if session is not None:
            if not sessions.owned_by(session, owner):  # said as the SDK says it of a session it does not know
                await _error(404, "Session not found", scope)(scope, receive, send)
                return
            sessions.began(session)
            try:
                await self.app(scope, receive, send)
            finally:
                sessions.ended(session)
                if scope.get("method") == "DELETE":
                    sessions.closed(session)
            return
        version = headers.get("mcp-protocol-version")
        if scope.get("method") != "POST" or (version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS):
            await self.app(scope, receive, send)  # opens no session (the stateless protocol has none)
            return
        body, whole = await self._read_at_most(receive)
        if not whole:
            await _error(413, f"request bodies are limited to {self.max_body} bytes", scope)(scope, receive, send)
            return
        receive = _replay(body, receive)
        if not _initializes(body):
            await self.app(scope, receive, send)  # the SDK refuses it: only `initialize` opens a session
            return
        address = (scope.get("client") or ("unknown", 0))[0]
        admission = sessions.admit(address)  # counted and reserved in one step: no await in between
        if not admission.admitted:
            response = _error(429 if "address" in admission.reason else 503,
                              f"{admission.reason}; close one (DELETE /mcp) or retry later", scope)
            response.headers["Retry-After"] = "5"
            await response(scope, _nothing, send)
            return
        opened: list[str] = []

        async def counting(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.decode("latin-1").lower() == SESSION_HEADER and not opened:
                        opened.append(value.decode("latin-1"))
                        sessions.opened(address, opened[0], owner)
            await send(message)

        try:
            for victim in admission.evict:
                await self._close_session(scope, victim)
            await self.app(scope, receive, counting)
        finally:
            if opened:
                sessions.ended(opened[0])
            else:
                sessions.abandoned(address)

    async def _close_session(self, scope: Scope, session: str) -> None:
        """Close `session` as its client would: DELETE /mcp with its id (the SDK forgets it at once)."""
        headers = [(b"host", b"127.0.0.1"), (SESSION_HEADER.encode(), session.encode("latin-1"))]
        closing = {**scope, "method": "DELETE", "headers": headers, "query_string": b""}
        _log.info("closing MCP session %s, the least recently used idle one, for a new session", session[:12])

        async def discard(_: Message) -> None:
            return None

        await self.app(closing, _nothing, discard)

    def required(self) -> bool:
        """Whether a request must present a valid token (see `Authenticators.required`)."""
        return self.authenticators.required()

    def vouches(self, headers: Iterable[tuple[bytes, bytes]]) -> bool:
        """Whether a request's raw headers carry a valid bearer token (see `Authenticators.vouches`)."""
        return self.authenticators.vouches(headers)

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

    def _public(self, scope: Scope) -> bool:
        """Whether the request is for the protected-resource metadata (which tells a client
        where to get a token, so it cannot need one)."""
        return self.resource is not None and scope.get("path", "") in self.resource.paths

    def _unauthorized(self, scope: Scope, *, invalid: bool) -> Response:
        response = _error(401, "a valid bearer token is required (Authorization: Bearer ...); a revoked or "
                               "expired one is not", scope)
        response.headers["WWW-Authenticate"] = self.resource.challenge(invalid=invalid) if self.resource else "Bearer"
        return response

    def _serves(self, name: str, peer: str) -> bool:
        """Whether a request from `peer` may call this server `name` (see server/addresses.py)."""
        if name in LOOPBACK or (name and name in WILDCARDS):
            return is_loopback(peer)  # this machine's names, from this machine only
        return name in self.hosts or (self.any_ip and is_ip(name))

    async def _refusal(self, headers: dict[str, str], scope: Scope) -> Response | None:
        host = headers.get("host", "").lower()
        peer = str((scope.get("client") or ("", 0))[0])
        if not self._serves(_hostname(host), peer):
            if _hostname(host) in LOOPBACK:
                return _error(421, f"host {host!r} names the server's own machine, but this request came from "
                                   f"{peer or 'elsewhere'}; use the server's name or address", scope)
            return _error(421, f"host {host!r} is not served here; start the server with --allow-host "
                               f"{_hostname(host) or 'NAME'} to serve it", scope)
        origin = headers.get("origin")
        if origin is not None and not self._serves(_hostname(origin.split("://", 1)[-1].lower()), peer):
            return _error(403, f"origin {origin!r} is not allowed; --allow-host adds a name", scope)
        principal: Principal | None = LOCAL_PRINCIPAL
        if not self._public(scope):
            bearer = False
            try:
                required = bool(self.authenticators) and self.required()
                if required:
                    scheme, _, given = headers.get("authorization", "").strip().partition(" ")
                    if scheme.lower() != "bearer" and str(scope.get("path", "")).startswith(UI_PATH):
                        given, scheme = page_token(headers, scope), "bearer"  # a browser cannot send the header
                    bearer = scheme.lower() == "bearer" and bool(given.strip())
                    principal = await self.authenticators.authenticated(given.strip()) if bearer else None
            except Exception as error:  # the store's tokens cannot be read (its database is gone): let nobody in
                _log.warning("cannot read the store's tokens: %s", error)
                why = " (its database cannot be reached)" if isinstance(error, StoreUnavailableError) else ""
                return _error(503, f"the store's tokens cannot be read now{why}; nobody is let in until they can: "
                                   "retry later", scope)
            if required and principal is None:
                return self._unauthorized(scope, invalid=bearer)
            scope[PRINCIPAL_KEY] = principal
            if bearer:
                scope[_BEARER] = given.strip()  # taken out again at once (see __call__)
        length = headers.get("content-length")
        if length is not None and (not (length.isascii() and length.isdigit()) or int(length) > self.max_body):
            return _error(413, f"request bodies are limited to {self.max_body} bytes", scope)
        return None


async def _nothing() -> Message:
    return {"type": "http.disconnect"}


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def page_token(headers: dict[str, str], scope: Scope) -> str:
    """The token a browser presents to the explorer: the cookie the page's first link set, or
    that link's `token` query."""
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == TOKEN_COOKIE:
            return value
    for pair in scope.get("query_string", b"").decode("latin-1").split("&"):
        name, _, value = pair.partition("=")
        if name == "token":
            return unquote(value)
    return ""


def _initializes(body: bytes) -> bool:
    """Whether `body` is an `initialize` request (the one request that opens a session)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("method") == "initialize" and "id" in message


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


REFUSALS = {401: "unauthorized", 403: "forbidden", 413: "limit", 421: "misdirected", 429: "limit",
            503: "unavailable"}
"""The machine-readable code of each status a request is refused with before it reaches the app
(the codes of refused tool calls where one means the same)."""


def _error(status: int, message: str, scope: Scope) -> Response:
    """A request refused before it reaches the app. On the MCP endpoint the body is a JSON-RPC
    error (the request's id is not read yet: null), which MCP clients show with its words
    whatever the status; a body of another shape reaches a tool caller as "Server returned an
    error response". Elsewhere (the explorer, health) it is `{"error": message, "code": code}`,
    as the explorer's own refusals are. Either way the code is `REFUSALS`'s (in the JSON-RPC
    error's data)."""
    code = REFUSALS.get(status, "invalid" if status < 500 else "unavailable")
    if str(scope.get("path", "")).rstrip("/") == MCP_PATH:
        error = {"code": INVALID_REQUEST if status < 500 else INTERNAL_ERROR, "message": message,
                 "data": {"status": status, "code": code}}
        return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=status)
    return JSONResponse({"error": message, "code": code}, status_code=status)


def http_app(
    server: MCPServer,
    runtime: Runtime,
    *,
    host: str,
    token: str | None,
    allowed_hosts: list[str] | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    max_sessions: int = 1000,
    sessions_per_address: int = 100,
    session_idle: float = 300.0,
    authenticators: Sequence[Authenticator] | None = None,
    resource: ProtectedResource | None = None,
) -> Any:
    """The ASGI app: MCP at /mcp, /health and /ready (also under /api/), the explorer at /ui, all
    behind the `Guard`, which asks `authenticators` (default: the store's tokens) after `token`;
    with a `resource`, its metadata document at the well-known paths (server/oauth.py)."""

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    last: list[tuple[int, int, int]] = []
    """(behind, head, size) of the last probe that could take the store: a probe that finds it
    busy with a tool call answers from it rather than wait or read beside the call."""

    async def ready(_: Request) -> Response:
        try:
            memory = runtime.memory
            if memory.reachable is not None:  # the follower found the database of the store gone
                return JSONResponse({"status": "unavailable", "reason": memory.reachable}, status_code=503)
            silent = memory.log.unanswered()
            if silent > READY_SILENCE:  # a database that takes connections and answers nothing (hung, its disk stuck)
                return JSONResponse({"status": "unavailable", "reason": (
                    f"the database of {memory.log.location} has not answered a request of this server for "
                    f"{silent:.0f} s: it hangs, or the network holds what it sends")}, status_code=503)
            rebuilding = memory.views.rebuilding
            if rebuilding is not None:  # a cache whose log went back: the calls wait for its new views
                return JSONResponse({"status": "rebuilding", "reason": (
                    f"the cache is being rebuilt from the log at {memory.log.location}, which went back under it "
                    f"({rebuilding}); this server's calls wait until it is done")}, status_code=503)
            waited = memory.log.waiting()
            if waited > READY_WAIT:  # the calls of this server queue behind the write
                return JSONResponse({"status": "waiting", "reason": (
                    f"a write has waited {waited:.0f} s for the lock of the log at {memory.log.location}, which "
                    "another process holds; this server's calls wait behind it")}, status_code=503)
            if memory.cache is not None:  # a database store: the follower keeps the views current
                return JSONResponse({"status": "ready", "position": memory.followed})
            if memory.lock.acquire(blocking=False):
                try:
                    last[:] = [(memory.views.behind(), memory.log.head(), memory.store_bytes())]
                finally:
                    memory.lock.release()
            if not last:
                return JSONResponse({"status": "catching up", "behind": None}, status_code=503)
            behind, head, size = last[0]
        except Exception as error:  # the store is closed or unreadable
            return JSONResponse({"status": "unavailable", "reason": str(error)}, status_code=503)
        if behind:
            return JSONResponse({"status": "catching up", "behind": behind, "storeBytes": size}, status_code=503)
        return JSONResponse({"status": "ready", "position": head, "storeBytes": size})

    server.custom_route("/ready", methods=["GET"])(ready)
    from chronograph.server.explorer import explorer_routes  # noqa: PLC0415 (explorer imports this module)

    for route in explorer_routes(runtime, token=token):  # the graph explorer, read-only, behind the same guard
        server.custom_route(route.path, methods=["GET"])(route.endpoint)
    # the workspace server's clients probe these
    server.custom_route("/api/health", methods=["GET"])(health)
    server.custom_route("/api/ready", methods=["GET"])(ready)
    if resource is not None:
        for path in resource.paths:
            server.custom_route(path, methods=["GET"])(resource.document)  # public: the guard lets it through

    hosts = served_names(host, allowed_hosts or [])
    # The guard checks Host and Origin for every route; the SDK's own check would only
    # know the MCP endpoint, so it is told to let through what the guard let through.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    # Each answer is one JSON body, not an event stream of one event: the stream cost the event
    # loop a task, a memory stream and SSE framing per call, a third of a short call's CPU, and
    # every other call waited for it (open_nodes' p99 beside a long search at 300k entities: 72-76
    # ms as streams, 42-45 ms as bodies). Nothing rides on a call's own stream here: what a write
    # tells subscribers goes on their sessions' streams, and no tool asks the client anything.
    app = server.streamable_http_app(
        transport_security=security, host=host, max_request_body_size=max_body,
        session_idle_timeout=session_idle, max_sessions=max_sessions, json_response=True,
    )
    logging.getLogger("mcp.server.streamable_http_manager").addFilter(OncePerMinute())
    logging.getLogger("uvicorn.access").addFilter(NoTokenInLinks())
    _log.addFilter(OncePerMinute())
    sessions = Sessions(sessions_per_address, max_sessions, session_idle)
    if authenticators is None:
        authenticators = [store_tokens(runtime)]
    return Guard(app, token=token, hosts=hosts, max_body=max_body, sessions=sessions, any_ip=host in WILDCARDS,
                 authenticators=authenticators, resource=resource)

