"""The `chronograph` command: one entry point over the server and the operator tools.

    chronograph [serve] [--store PATH] ...   the MCP server (stdio by default)
    chronograph replay ...                   the graph at a past moment; diffs; rebuilds
    chronograph audit ...                    who changed what, when, in which call
    chronograph import FILE / export ...     move memories in and out

Each subcommand is a thin layer over a module with its own `main(argv)`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib.metadata import PackageNotFoundError, version

from server import cli as serve_cli
from tools.parsing import Parser

# name -> (module, one-line help); each module has add_arguments(parser) and run(args).
SUBCOMMANDS = {
    "replay": ("tools.replay", "the graph as of a time or position, diffs, rebuild and verify"),
    "audit": ("tools.audit", "inspect the audit log: who changed what, when, by which call"),
    "import": ("tools.import_graph", "import a memory.jsonl / memory.json file"),
    "export": ("tools.export_graph", "export the graph as JSONL, JSON, Markdown, Mermaid or DOT"),
}


def _version() -> str:
    try:
        return version("chronograph")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `chronograph` and its subcommands."""
    parser = Parser(
        prog="chronograph",
        description="An event-sourced knowledge-graph memory for MCP agents. "
        "Without a subcommand, serves MCP over stdio.",
    )
    parser.add_argument("--version", action="version", version=f"chronograph {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    serve = commands.add_parser("serve", help="serve the memory over MCP (stdio, or --http)",
                                description=serve_cli.__doc__)
    serve_cli.add_arguments(serve)
    for name, (module, summary) in SUBCOMMANDS.items():
        tool = importlib.import_module(module)
        sub = commands.add_parser(name, help=summary, description=tool.__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        tool.add_arguments(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `chronograph` with `argv` (default: the process arguments); return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["serve", *argv]
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve_cli.serve(args)
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    return int(module.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
