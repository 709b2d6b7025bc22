"""The core without MCP: tools declared once, commands that decide events, queries, errors.

`Memory` runs any tool of the registry on a store; the MCP server (`chronograph.server`),
the command line (`chronograph.tools`) and, later, the web page are adapters over it.
Importing this package registers every tool of Chronograph's own surface in `CORE`, and
the team memory's (the Agent Memory surface) in `TEAM`.
"""

from chronograph.application import core, lifecycle, surfaces, team  # noqa: F401 (they declare the tools)
from chronograph.application.engine.arguments import Limits, parse
from chronograph.application.engine.outputs import Out
from chronograph.application.engine.registry import CORE, Files, Kind, Registry, Tool
from chronograph.application.engine.service import Memory, Written
from chronograph.application.errors import (
    ChronographError,
    ConflictError,
    InvalidArgumentsError,
    NotFoundError,
    ReplyTooLargeError,
    RequestReplayError,
    StorageError,
    UnavailableError,
)
from chronograph.application.profiles import DEFAULT_PROFILE, PROFILES, Profile, profile

__all__ = [
    "CORE",
    "DEFAULT_PROFILE",
    "PROFILES",
    "ChronographError",
    "ConflictError",
    "InvalidArgumentsError",
    "Files",
    "Kind",
    "Limits",
    "Memory",
    "NotFoundError",
    "Out",
    "Profile",
    "Registry",
    "ReplyTooLargeError",
    "RequestReplayError",
    "StorageError",
    "UnavailableError",
    "Tool",
    "Written",
    "parse",
    "profile",
]
