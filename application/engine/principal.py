"""Who a call is made for: a principal, and what it may do in each workspace.

Adapters authenticate (stdio: the local user; HTTP: a token or an OAuth access token) and
hand the core a `Principal`; the core alone decides, from its grants, whether a call may
read, write or administer a workspace. `*` grants every workspace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import msgspec
from chronograph.application.errors import ForbiddenError

__all__ = ["ANY_WORKSPACE", "BUILT_IN", "ENV_PRINCIPAL", "LEVELS", "LOCAL_PRINCIPAL", "Level", "Principal"]

Level = Literal["read", "write", "admin"]
"""read: query; write: read and append events; admin: write, and erase, reset and grant."""

LEVELS: tuple[Level, ...] = ("read", "write", "admin")
"""The levels, each allowing what the ones before it allow."""

ANY_WORKSPACE = "*"
"""A grant's workspace that stands for every workspace."""


class Principal(msgspec.Struct, frozen=True):
    """An authenticated caller: its name (recorded on every event it writes) and its grants."""

    name: str
    grants: Mapping[str, Level] = msgspec.field(default_factory=dict)
    """workspace (or `*`) -> the highest level granted there"""

    def level(self, workspace: str) -> Level | None:
        """The highest level granted in `workspace` (its own grant or `*`'s), None if none."""
        levels = [self.grants[key] for key in (workspace, ANY_WORKSPACE) if key in self.grants]
        return max(levels, key=LEVELS.index) if levels else None

    def may(self, workspace: str, need: Level) -> bool:
        """Whether `need` is granted in `workspace`."""
        level = self.level(workspace)
        return level is not None and LEVELS.index(level) >= LEVELS.index(need)

    def check(self, workspace: str, need: Level, *, tool: str) -> None:
        """Refuse `tool` unless `need` is granted in `workspace`.

        Raises:
            ForbiddenError: If it is not (nothing was read or written).
        """
        if not self.may(workspace, need):
            raise ForbiddenError(self.name, workspace, need, tool)

    def readable(self, workspaces: Iterable[str]) -> list[str]:
        """The `workspaces` this principal may read, in their order."""
        return [workspace for workspace in workspaces if self.may(workspace, "read")]


LOCAL_PRINCIPAL = Principal("local", {ANY_WORKSPACE: "admin"})
"""The local user of a stdio server or a command: every grant."""
ENV_PRINCIPAL = "token"
"""The name of the principal `$CHRONOGRAPH_TOKEN` stands for (every grant)."""
BUILT_IN = frozenset({LOCAL_PRINCIPAL.name, ENV_PRINCIPAL})
"""The principals' names no store token may take: the audit's principal must mean one caller."""
