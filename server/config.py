"""Where the store lives and how the server runs: flags, then environment, then defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import msgspec
import platformdirs

__all__ = [
    "ACTOR_ENV",
    "DEFAULT_MAX_REPLY",
    "STORE_ENV",
    "TOKEN_ENV",
    "Settings",
    "default_store",
    "resolve_store",
]

STORE_ENV = "CHRONOGRAPH_STORE"
TOKEN_ENV = "CHRONOGRAPH_TOKEN"
ACTOR_ENV = "CHRONOGRAPH_ACTOR"


def default_store() -> Path:
    """The per-user default: e.g. ~/.local/share/chronograph/store on Linux."""
    return Path(platformdirs.user_data_dir("chronograph", appauthor=False)) / "store"


def resolve_store(flag: str | os.PathLike[str] | None) -> Path:
    """The store path: the flag if given, else $CHRONOGRAPH_STORE, else the per-user default."""
    if flag:
        return Path(flag).expanduser()
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV]).expanduser()
    return default_store()


DEFAULT_MAX_REPLY = 9 << 20
"""The TypeScript SDK's stdio client (the Inspector's, and other clients built on it) drops
the connection on a message over 10 MiB; a refused read with a paging hint is better than
a dead session."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """How one server runs."""

    store: Path
    actor: str | None = None
    """Who the events are recorded as; None: the MCP client's name from its handshake."""
    tools: Literal["all", "official"] = "all"
    """Which tools to expose: every one, or only the nine of the official memory server."""
    sync: bool = True
    """Synchronous commits (an acknowledged write survives power loss)."""
    max_size: int | None = None
    """Ceiling on the store's size in bytes; None: as large as the disk allows."""
    export_dir: Path | None = None
    """Where export_graph may write files; None: it only returns the content."""
    max_reply: int | None = DEFAULT_MAX_REPLY
    """Largest read reply in bytes; None: no limit (see DEFAULT_MAX_REPLY)."""
