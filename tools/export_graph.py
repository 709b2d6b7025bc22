"""Export the graph: the official memory.jsonl, JSON, Markdown, Mermaid or Graphviz DOT.

    chronograph export --format markdown -o memory.md
    chronograph export --format jsonl --workspace lab --at 2026-11-01 -o lab-then.jsonl
    chronograph export --format mermaid | mmdc -i - -o graph.svg

Read-only: safe beside a running server. Without -o, the export goes to stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.config import resolve_store
from chronograph.application.errors import ChronographError
from chronograph.application.export import FORMATS
from chronograph.eventstore import EventStoreError
from chronograph.projections import ProjectionError
from chronograph.tools.parsing import add_store_argument, script_main

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `export`."""
    add_store_argument(parser)
    parser.add_argument("--format", choices=FORMATS, default="jsonl", help="output format (default: jsonl)")
    parser.add_argument("--workspace", default="default", help='workspace (default: "default")')
    parser.add_argument("--at", metavar="TIME", help="the graph as of this ISO-8601 time or log position")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")


def run(args: argparse.Namespace) -> int:
    """Carry out `export`; return the exit code."""
    arguments: dict[str, object] = {"format": args.format, "workspace": args.workspace}
    if args.at:
        arguments["asOf"] = int(args.at) if args.at.isdigit() else args.at
    try:
        with Memory(resolve_store(args.store), readonly=True) as memory:
            exported = memory.read("export_graph", arguments)
    except (EventStoreError, ProjectionError, ChronographError) as error:
        print(f"chronograph export: {error}", file=sys.stderr)
        return 2
    content = exported.content  # type: ignore[attr-defined]
    if args.output:
        try:
            Path(args.output).write_text(content, encoding="utf-8")
        except OSError as error:
            print(f"chronograph export: cannot write {args.output}: {error.strerror}", file=sys.stderr)
            return 2
        print(f"wrote {exported.entities:,} entities and {exported.relations:,} relations "  # type: ignore[attr-defined]
              f"({args.format}) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(content if content.endswith("\n") or not content else content + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python tools/export_graph.py ...` (see the module docstring)."""
    return script_main("chronograph export", __doc__, add_arguments, run, argv)

if __name__ == "__main__":
    raise SystemExit(main())
