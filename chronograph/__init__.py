"""Chronograph: a memory for MCP agents in which nothing is ever overwritten.

Every layer installs under this one import root, imported in one direction only:

    chronograph.tools         the command line (serve, replay, audit, import, export)
    chronograph.server        the MCP adapter: profiles of tools, stdio and HTTP transports
    chronograph.application   the core without MCP: arguments, commands, queries, errors
    chronograph.projections   views folded from the log: entities, relations, history, search
    chronograph.eventstore    the log: events, their encoding, the LMDB backend, the clock
"""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    if name == "__version__":  # read from the installed metadata only when asked for
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("chronograph")
        except PackageNotFoundError:
            return "0+unknown"
    raise AttributeError(f"module 'chronograph' has no attribute {name!r}")
