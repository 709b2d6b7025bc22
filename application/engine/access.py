"""The one place that decides whether a principal may make a call: which workspaces the call
touches, the grant it needs in each, and the check.

A call's workspaces come from its parsed arguments (`Args.touches`: the `workspace`, n2n's
project, Kuzu's database, the workspace server's `workspaceName`); the team memory (the
Agent Memory surface) is one space of the store, granted as the workspace `TEAM_WORKSPACE`.
A read across workspaces (`list_workspaces`, the audit log of every workspace, Kuzu's
summary of every database) touches none: it shows only what its principal may read
(`Memory.readable`). The level comes from the tool's declaration: read for a query or an
export that writes no file, write for a command, admin for what cannot be undone by another
call (erasure, the team memory's reset).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from chronograph.application.engine.principal import ANY_WORKSPACE, LOCAL_PRINCIPAL, Level, Principal
from chronograph.application.engine.registry import TEAM
from chronograph.application.errors import ChronographError, ForbiddenError
from msgspec import UNSET

if TYPE_CHECKING:
    from chronograph.application.engine.registry import Tool

__all__ = ["ADMIN", "TEAM_WORKSPACE", "administers_all", "caller", "calling", "check", "granted_as", "level", "needs",
           "readable", "touched"]

TEAM_WORKSPACE = "agent-memory"
"""The workspace a grant names for the team memory (Agent Memory's things: scopes, sessions,
entries, locks): one space of the store, beside the graph's workspaces."""

ADMIN: dict[str, frozenset[str] | None] = {
    "forget_entity": None,
    "memory_forget": None,
    "memory_init": frozenset({"reset"}),
}
"""The tools (or their actions; None: every action) that need admin: erasing for real what the
log would otherwise keep, and emptying the team memory. Deleting an entity, an observation or
a relation is a write: the log keeps it, and revert_entity brings it back."""


def level(tool: Tool, args: Any) -> Level:
    """The grant `tool` needs with `args` in each workspace it touches."""
    if tool.name in ADMIN:
        actions = ADMIN[tool.name]
        if actions is None or getattr(args, "action", None) in actions:
            return "admin"
    if tool.writes and getattr(args, "action", None) not in tool.reads:
        return "write"
    if getattr(args, "output_path", UNSET) is not UNSET or tool.name == "n2n_export_markdown":
        return "write"  # a file written on the server's disk: not a read any more
    if getattr(args, "confirm_new_project_root", UNSET) is not UNSET:
        return "write"  # adopting a project root writes its .mcp marker
    return "read"


def touched(tool: Tool, args: Any) -> tuple[str, ...]:
    """The workspaces `tool` with `args` reads or writes (none: it reads across workspaces and
    shows only the readable ones, or touches no workspace)."""
    if tool.name in TEAM and TEAM[tool.name] is tool:
        return (TEAM_WORKSPACE,)
    return tuple(args.touches())


def needs(tool: Tool, args: Any) -> list[tuple[str, Level]]:
    """(workspace, level) for every workspace the call touches.

    Raises:
        ChronographError: If the arguments name no workspace that can be (an n2n project path
            that is no project root); nothing was read or written.
    """
    need = level(tool, args)
    return [(workspace, need) for workspace in touched(tool, args)]


def check(principal: Principal, tool: Tool, args: Any) -> tuple[str, ...]:
    """Refuse the call unless `principal` holds what it needs in every workspace it touches;
    return those workspaces.

    A call that names its workspace by a project path (n2n) and is refused is told only that it
    is forbidden, unless the principal administers every workspace: whether the path exists, is
    a project root, or resolves elsewhere, and the workspace it stands for, are the server's file
    system's. (A principal granted every workspace passes, and the tool answers it as any other.)

    Raises:
        ForbiddenError: If a grant is missing (checked before anything is read or written).
        ChronographError: If the arguments name no workspace that can be (an n2n project path
            that is no project root, to a principal that administers every workspace).
    """
    try:
        wanted = needs(tool, args)
        for workspace, need in wanted:
            principal.check(workspace, need, tool=tool.name)
    except ChronographError:
        project = getattr(args, "project_path", None)
        if not isinstance(project, str) or principal.may(ANY_WORKSPACE, "admin"):
            raise
        raise ForbiddenError(principal.name, "", level(tool, args), tool.name, project=project) from None
    return tuple(workspace for workspace, _ in wanted)


def granted_as(workspace: str) -> str:
    """The workspace a grant names for what the log records in `workspace` (the team memory's
    events belong to no graph workspace)."""
    return workspace or TEAM_WORKSPACE



_CALLER = threading.local()
"""The principal of the call this thread answers (reads run in several threads at once over HTTP)."""


@contextmanager
def calling(principal: Principal) -> Iterator[None]:
    """Answer this thread's call for `principal` until the block ends (what `readable` allows)."""
    outer = getattr(_CALLER, "principal", None)
    _CALLER.principal = principal
    try:
        yield
    finally:
        _CALLER.principal = outer


def administers_all() -> bool:
    """Whether the principal of this thread's call administers every workspace (`*`), as the
    local user does: the one who may see the store's tokens (who may do what, where)."""
    principal = getattr(_CALLER, "principal", None) or LOCAL_PRINCIPAL
    return principal.may(ANY_WORKSPACE, "admin")


def caller() -> Principal:
    """The principal of this thread's call (the local user outside one)."""
    return getattr(_CALLER, "principal", None) or LOCAL_PRINCIPAL


def readable(workspace: str) -> bool:
    """Whether the principal of this thread's call (the local user outside one) may read
    `workspace`, as the log names it: a read across workspaces shows only those."""
    principal = getattr(_CALLER, "principal", None) or LOCAL_PRINCIPAL
    return principal.may(granted_as(workspace), "read")
