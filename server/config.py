"""How one server runs: its store, its profile, its limits."""

from __future__ import annotations

from pathlib import Path

import msgspec
from chronograph.application.engine.exportdir import DEFAULT_BUDGET, DEFAULT_MAX_EXPORT
from chronograph.application.profiles import DEFAULT_PROFILE

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_MAX_REPLY", "MAX_MESSAGE", "Settings"]

DEFAULT_MAX_REPLY = 9 << 20
"""The TypeScript SDK's stdio client (the Inspector's, and other clients built on it) drops
the connection on a message over 10 MiB; a refused read with a paging hint is better than
a dead session."""
DEFAULT_MAX_BODY = 4 << 20
"""Largest HTTP request body accepted."""
MAX_MESSAGE = 32 << 20
"""Longest JSON-RPC message read from stdin."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """How one server runs."""

    store: Path | str
    """A store folder, or a postgresql:// URL."""
    cache: Path | None = None
    """Where the views of a database store live on this machine (None: the per-user cache)."""
    actor: str | None = None
    """Who the events are recorded as; None: the MCP client's name from its handshake."""
    profile: str = DEFAULT_PROFILE
    """Which tools to present (see `chronograph.application.profiles`)."""
    sync: bool = True
    """Synchronous commits (an acknowledged write survives power loss)."""
    max_size: int | None = None
    """Ceiling on the store's size in bytes; None: as large as the disk allows."""
    export_dir: Path | None = None
    project_files: bool = True
    """Whether n2n's export may write inside a client's project root (off over HTTP unless allowed)."""
    mirror_projects: bool = False
    """--project-files: keep every n2n project's graph and hot context in its `.mcp/memory.json`
    and `.mcp/context.json` too, and fold what those files gain (a git pull) into the log.
    Without it, only projects whose `.mcp/chronograph.json` says `"projectFiles": true`."""
    """Where export_graph may write files; None: it only returns the content."""
    export_max: int = DEFAULT_MAX_EXPORT
    """Largest file one export may write."""
    export_budget: int = DEFAULT_BUDGET
    """Bytes all exports of this server may write together."""
    max_reply: int | None = DEFAULT_MAX_REPLY
    """Largest read reply in bytes; None: no limit (see DEFAULT_MAX_REPLY)."""
    prompts: bool = False
    """Offer the `recall` and `remember` prompts on every profile (they are offered unasked on
    chronograph, n2n, kuzu and full; the others keep their reference server's capabilities)."""
    embeddings: str = "auto"
    """Semantic search: auto (the bundled model if the semantic extra is installed), local, off,
    or the URL of an OpenAI-compatible embeddings endpoint."""
    embeddings_model: str | None = None
    """The model to ask an embeddings endpoint for."""
    term_weights: bool = True
    """Let the semantic extra's term weights reorder the nearest (when it is installed)."""
    embeddings_key: str | None = None
    """The endpoint's API key (sent as a bearer token)."""
