"""The MCP prompts `recall` and `remember`: a session's start and end, as commands a client shows.

Claude Code lists them as `/mcp__<server>__recall` and `/mcp__<server>__remember`. Both are
adapters over queries of the core (`core/recall.py`, `surfaces/recalling.py`) in the
profile's words; neither writes.
"""

from __future__ import annotations

from typing import Annotated, Any

from chronograph.application import ChronographError
from chronograph.application.core.recall import BUDGET, recall, render
from chronograph.application.errors import ForbiddenError, InvalidArgumentsError
from chronograph.application.surfaces.recalling import (
    PROMPTED,
    VOCABULARIES,
    remember_text,
    seen_by,
    session_writes,
    workspace_of,
)
from chronograph.server.config import Settings
from chronograph.server.resources import forbidden
from chronograph.server.runtime import Runtime
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, GetPromptRequestParams
from pydantic import Field

__all__ = ["add_prompts"]

PROJECT = ("Whose memory: a workspace name or a project's folder (absolute path, as n2n's projectPath); "
           "on the kuzu profile, a database")
QUERY = "What the session is about (picks the entities shown)"
TOKENS = f"Tokens at most (default {BUDGET})"


def add_prompts(server: MCPServer, runtime: Runtime, settings: Settings) -> None:
    """Offer `recall` and `remember` on the profiles that have them (every profile with
    `settings.prompts`)."""
    name = settings.profile
    if name not in PROMPTED and not settings.prompts:
        return
    vocabulary = VOCABULARIES.get(name, VOCABULARIES["chronograph"])

    def client(ctx: Context) -> str:
        params = ctx.session.client_params
        return runtime.actor(params.client_info.name if params is not None else None)

    def where(project: str | None, ctx: Context, prompt: str) -> str:
        """The workspace a prompt reads, once the request's principal may read it (the core's check)."""
        try:
            principal = runtime.principal_of(ctx.request_context.request)
            workspace = workspace_of(name, project, seen_by(runtime.memory, principal),
                                     lambda found: principal.may(found, "read"))
            principal.check(workspace, "read", tool=prompt)
        except ForbiddenError as error:
            raise forbidden(error) from None
        except ChronographError as error:  # an MCPError passes the SDK's rendering as it is, its code kept
            asked = error.code in ("invalid", "not_found", "awaiting_confirmation")
            said = f"the prompt {prompt!r}: {error.problem}" if isinstance(error, InvalidArgumentsError) else str(error)
            raise MCPError(INVALID_PARAMS if asked else INTERNAL_ERROR, said, data={"code": error.code}) from None
        return workspace

    def recall_prompt(
        ctx: Context,
        query: Annotated[str | None, Field(description=QUERY)] = None,
        project: Annotated[str | None, Field(description=PROJECT)] = None,
        budget: Annotated[str | None, Field(description=TOKENS)] = None,
    ) -> str:
        """What memory holds for this session: the hot context, the entities most relevant to
        the query or project, and what changed since your previous session."""
        workspace = where(project, ctx, "recall")
        memory = runtime.memory
        found = recall(memory, workspace, query=query or None, client=client(ctx),
                       before=runtime.began(runtime.connection(ctx)))
        text = render(found, vocabulary, _tokens(budget))
        return text or f"Memory holds nothing yet for the {vocabulary.place} {workspace!r}.\n"

    def remember_prompt(
        ctx: Context,
        project: Annotated[str | None, Field(description=PROJECT)] = None,
        budget: Annotated[str | None, Field(description=TOKENS)] = None,
    ) -> str:
        """Before the session ends: what is worth saving, with which tools, and what this
        session already saved (so nothing is saved twice)."""
        workspace = where(project, ctx, "remember")
        wrote = session_writes(runtime.memory, workspace, client(ctx), runtime.began(runtime.connection(ctx)))
        return remember_text(vocabulary, workspace, wrote, _tokens(budget))

    server.add_prompt(Prompt.from_function(recall_prompt, name="recall", title="Recall", description=(
        "What memory holds for this session: the hot context, the entities most relevant to the query "
        "or project, and what changed since your previous session")))
    server.add_prompt(Prompt.from_function(remember_prompt, name="remember", title="Remember", description=(
        "Before the session ends: what is worth saving, with which tools, and what this session "
        "already saved (so nothing is saved twice)")))
    _refuse_unknown_names(server)


def _refuse_unknown_names(server: MCPServer) -> None:
    """Answer a prompt or an argument that does not exist with invalid params (-32602, as the
    protocol asks) naming what there is: the SDK answered both with code 0 and a bare 'Error
    rendering prompt', and logged a traceback."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (the SDK checks neither before rendering)
    entry = lowlevel.get_request_handler("prompts/get")
    assert entry is not None, "the SDK serves prompts/get"
    sdk_get = entry.handler

    async def get_prompt(ctx: Any, params: GetPromptRequestParams) -> Any:
        prompts = {p.name: tuple(a.name for a in p.arguments or ()) for p in await server.list_prompts()}
        takes = prompts.get(params.name)
        if takes is None:
            raise MCPError(INVALID_PARAMS, f"there is no prompt named {params.name!r}; the prompts are: "
                                           f"{', '.join(prompts)}", data={"code": "not_found"})
        unknown = sorted(set(params.arguments or {}) - set(takes))
        if unknown:
            raise MCPError(INVALID_PARAMS, f"the prompt {params.name!r} takes no argument {unknown[0]!r}; it takes: "
                                           f"{', '.join(takes)}", data={"code": "invalid"})
        return await sdk_get(ctx, params)

    lowlevel.add_request_handler("prompts/get", GetPromptRequestParams, get_prompt)


def _tokens(budget: str | None) -> int:
    """The budget a prompt was given: prompt arguments are strings, and a client may send any;
    what is not a whole number of tokens leaves the default, and no budget is under 100."""
    text = (budget or "").strip()
    if not text.isdecimal():
        return BUDGET
    return max(100, int(text) if len(text) <= 18 else 10**18)  # more digits than int() reads: as good as no limit
