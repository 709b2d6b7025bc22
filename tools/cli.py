"""The `chronograph` command: one entry point over the operator tools and the server."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version


def _version() -> str:
    try:
        return version("chronograph")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `chronograph` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="chronograph",
        description="An event-sourced knowledge-graph memory for MCP agents.",
    )
    parser.add_argument("--version", action="version", version=f"chronograph {_version()}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `chronograph` with `argv` (default: the process arguments); return the exit code."""
    build_parser().parse_args(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
