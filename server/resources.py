"""The resources a server lists, and how a read that fails says so.

Only what can be read is listed: the knowledge graph, the workspaces, Kuzu's databases and
n2n's project graph (a template: it needs the project's path). A read that fails is a
JSON-RPC error, never a success whose body is an error message, with the code the
negotiated protocol asks for:

- a URI that names no resource: -32002 (resource not found) up to 2025-11-25, -32602 from
  2026-07-28, which retired -32002 for it (SEP-2164; the SDK's own choice for every version);
- a resource's argument that is wrong (a relative project path): -32602 (invalid params);
- a principal without the grant to read what the resource shows: -32600 (invalid request),
  with the code `forbidden` (the same check as the tools', `engine/access.py`);
- anything else (an answer too large to send, a damaged store): -32603 (internal error).

Each error's `data` carries the URI and our machine-readable `code`, as tool errors do.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import anyio
from chronograph.application import ChronographError, ReplyTooLargeError, profile
from chronograph.application.engine.access import calling
from chronograph.application.engine.outputs import official_shape
from chronograph.application.engine.principal import Principal
from chronograph.application.engine.turns import encoded
from chronograph.application.errors import ForbiddenError
from chronograph.application.surfaces.kuzu import databases
from chronograph.application.surfaces.n2n import N2N
from chronograph.projections import paused_gc
from chronograph.server.config import Settings
from chronograph.server.results import check_text_size, pretty
from chronograph.server.runtime import GRAPH_URI, Runtime
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, ReadResourceRequestParams
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

__all__ = ["RESOURCE_NOT_FOUND", "WORKSPACES_URI", "add_resources", "forbidden"]

WORKSPACES_URI = "memory://workspaces"
PROJECT_GRAPH_URI = "mcp://memory/graph"
"""n2n's project graph: read with ?path=<absolute project root>."""

_PRINCIPAL: ContextVar[Principal | None] = ContextVar("chronograph_resource_principal", default=None)
"""Whom the resources/read being answered is for (set where the request is seen: static
resources get no context of their own)."""

RESOURCE_NOT_FOUND = -32002
"""What the handshake-era specifications (up to 2025-11-25) ask a missing resource to be answered with."""

HINTS = {
    PROJECT_GRAPH_URI: f"{PROJECT_GRAPH_URI} needs a project: read {PROJECT_GRAPH_URI}?path=<absolute project root> "
                       "(the project must have been set up through a tool: resources cannot confirm a new root)",
}
"""What to say instead of "Unknown resource" for a URI a client may expect from the server we mirror."""


def add_resources(server: MCPServer, runtime: Runtime, settings: Settings) -> None:
    """Register the resources of `settings.profile`, and answer their failures with the right codes."""
    surface = profile(settings.profile).name

    def principal() -> Principal:
        return _PRINCIPAL.get() or runtime.principal

    async def read(what: Callable[[], Any]) -> str:
        caller = principal()

        def work() -> str:
            with paused_gc(), calling(caller):
                value = what()
                return encoded(value).decode() if runtime.compact else pretty(value)  # as the tools print

        try:
            if runtime.offload:  # HTTP: in a worker thread, in turn with the tool calls
                return await anyio.to_thread.run_sync(runtime.serialised, work)
            return runtime.serialised(work)
        except ChronographError as error:
            raise _refusal(error) from None

    @server.resource(GRAPH_URI, name="knowledge-graph", title="Knowledge Graph",
                     description="The full knowledge graph with all entities and relations",
                     mime_type="application/json")
    async def knowledge_graph() -> str:
        what, hint = f"the {GRAPH_URI} resource", "Read the graph with the read_graph tool instead, a page at a time " \
            "(limit and offset)."
        shape = official_shape if runtime.exact else (lambda graph: graph)  # read as read_graph answers
        caller = principal()

        def whole() -> Any:
            try:  # the resource is the text alone: at most half of what the tool's reply bound counts
                limit = None if settings.max_reply is None else 2 * settings.max_reply
                return shape(runtime.memory.read("read_graph", {}, reply_limit=limit, principal=caller))
            except ReplyTooLargeError as error:  # refused before it was built: said for the resource
                raise ReplyTooLargeError(what, error.size // 2, error.limit // 2, hint, at_least=True) from None

        text = await read(whole)
        try:
            return check_text_size(what, text, settings.max_reply, hint)
        except ReplyTooLargeError as error:
            raise _refusal(error) from None

    @server.resource(WORKSPACES_URI, name="workspaces", title="Workspaces",
                     description="The workspaces of this memory, with their counts", mime_type="application/json")
    async def workspace_list() -> str:
        caller = principal()
        return await read(lambda: runtime.memory.read("list_workspaces", {}, principal=caller))

    if surface in ("kuzu", "full"):
        @server.resource("kuzu://databases/list", name="databases", title="Databases",
                         description="Lists all available Kuzu databases in the workspace with metadata",
                         mime_type="application/json")
        async def database_list() -> str:
            return await read(lambda: databases(runtime.memory))

    if surface in ("n2n", "full"):
        @server.resource(f"{PROJECT_GRAPH_URI}?path={{+path}}", name="project-graph", title="Project Graph",
                         mime_type="application/json",
                         description="The complete graph and active context of an established project",
                         security=ResourceSecurity(reject_absolute_paths=False))
        async def project_graph(path: str) -> str:
            caller = principal()
            return await read(lambda: runtime.memory.read(N2N["n2n_read_graph"], {"projectPath": path},
                                                          principal=caller).reply)  # type: ignore[attr-defined]

    _answer_failures_with_codes(server, runtime)


def forbidden(error: ForbiddenError) -> MCPError:
    """What a request a principal may not make raises outside a tool call (a tool answers isError)."""
    return MCPError(INVALID_REQUEST, str(error), data={"code": error.code, "workspace": error.workspace,
                                                       "need": error.need})


def _refusal(error: ChronographError) -> Exception:
    """What a refused read raises: not found, a bad argument, forbidden, or the server's own failure."""
    if isinstance(error, ForbiddenError):
        return forbidden(error)
    if error.code == "awaiting_confirmation":  # a project never set up is not there yet: no call to repeat
        root = error.details["detectedRoot"]  # type: ignore[attr-defined]
        return ResourceNotFoundError(f"{root} looks like a project root but has no .mcp folder yet: set it up "
                                     f"through a tool (n2n_add_entities with confirmNewProjectRoot {root!r}); "
                                     "resources cannot confirm a new root")
    if error.code == "not_found":
        return ResourceNotFoundError(str(error))
    return MCPError(INVALID_PARAMS if error.code == "invalid" else INTERNAL_ERROR, str(error),
                    data={"code": error.code})


def _answer_failures_with_codes(server: MCPServer, runtime: Runtime) -> None:
    """Wrap the SDK's resources/read so that it reads for the request's principal, and each
    failure carries the URI, our code, and the not-found code of the protocol the session speaks."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (the SDK answers not-found itself, with one code for all versions)
    entry = lowlevel.get_request_handler("resources/read")
    assert entry is not None, "the SDK serves resources/read"
    sdk_read = entry.handler

    async def read_resource(ctx: Any, params: ReadResourceRequestParams) -> Any:
        reset = _PRINCIPAL.set(runtime.principal_of(getattr(ctx, "request", None)))
        try:
            return await sdk_read(ctx, params)
        except MCPError as error:
            uri = str(params.uri)
            data = error.data if isinstance(error.data, dict) else {}
            if error.code == INVALID_PARAMS and "code" not in data:  # the SDK's ResourceNotFoundError
                code = RESOURCE_NOT_FOUND if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS else INVALID_PARAMS
                raise MCPError(code, HINTS.get(uri, error.message), data={"uri": uri, "code": "not_found"}) from None
            raise MCPError(error.code, error.message, data={"uri": uri, **data}) from None
        finally:
            _PRINCIPAL.reset(reset)

    lowlevel.add_request_handler("resources/read", ReadResourceRequestParams, read_resource)
