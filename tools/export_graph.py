"""Export the graph: the official memory.jsonl, JSON, Markdown, Mermaid or Graphviz DOT.

    chronograph export -o memory.md                       the format follows the suffix
    chronograph export --format jsonl --workspace lab --at 2026-11-01 -o lab-then.jsonl
    chronograph export --format mermaid | mmdc -i - -o graph.svg

Read-only: safe beside a running server. Without -o, the export goes to stdout. Without
--format, a file's suffix says it (.jsonl, .json, .md, .mmd/.mermaid, .dot/.gv), else jsonl.
A file is written whole or not at all, never inside a store, through a symbolic link or
over an existing file (unless --force).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.application.errors import ChronographError
from chronograph.application.lifecycle.export import FORMATS
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.files import check_target, write_file
from chronograph.projections import ProjectionError
from chronograph.tools.common.parsing import add_store_argument, explain, missing_workspace, script_main

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `export`."""
    add_store_argument(parser)
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="output format (default: from the suffix of -o, else jsonl)")
    parser.add_argument("--workspace", default="default", help='workspace (default: "default")')
    parser.add_argument("--all-workspaces", action="store_true",
                        help="every workspace, in sections chronograph import reads back (jsonl or json)")
    parser.add_argument("--at", metavar="TIME", help="the graph as of this ISO-8601 time or log position")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    parser.add_argument("--force", action="store_true", help="replace the output file if it exists")


SUFFIXES = {".jsonl": "jsonl", ".json": "json", ".md": "markdown", ".markdown": "markdown",
            ".mmd": "mermaid", ".mermaid": "mermaid", ".dot": "dot", ".gv": "dot"}
FLAGS = {"asOf": "--at", "workspace": "--workspace", "format": "--format"}


def format_of(args: argparse.Namespace) -> str:
    """--format, else what the output file's suffix says, else jsonl."""
    if args.format:
        return str(args.format)
    return SUFFIXES.get(Path(args.output).suffix.lower(), "jsonl") if args.output else "jsonl"


def run(args: argparse.Namespace) -> int:
    """Carry out `export`; return the exit code."""
    fmt = format_of(args)
    arguments: dict[str, object] = {"format": fmt, "workspace": args.workspace}
    if args.at:
        arguments["asOf"] = int(args.at) if args.at.isdigit() else args.at
    if args.all_workspaces and fmt not in ("jsonl", "json"):
        print("chronograph export: --all-workspaces writes jsonl or json (what import reads back)", file=sys.stderr)
        return 2
    try:
        if args.output:
            check_target(Path(args.output).expanduser(), overwrite=args.force)  # before reading the store
        with Memory(resolve_store(args.store), readonly=True, cache=args.cache) as memory:
            known = [w.name for w in memory.read("list_workspaces", {}).workspaces]  # type: ignore[attr-defined]
            if args.all_workspaces:
                exported = _every_workspace(memory, known, arguments, fmt)
            else:
                missing = missing_workspace(args.workspace, known)
                if missing:
                    print(f"chronograph export: {missing}", file=sys.stderr)
                    return 2
                exported = memory.read("export_graph", arguments)
            note = memory.timeline.past_the_end(arguments["asOf"]) if "asOf" in arguments else None  # type: ignore[arg-type]
            if note:
                print(f"chronograph export: {note}", file=sys.stderr)
    except (EventStoreError, ProjectionError, ChronographError) as error:
        print(f"chronograph export: {explain(error, FLAGS)}", file=sys.stderr)
        return 2
    content = exported.content
    if args.output:
        try:
            write_file(Path(args.output).expanduser(), content.encode("utf-8"), overwrite=args.force)
        except EventStoreError as error:
            print(f"chronograph export: {error}", file=sys.stderr)
            return 2
        except OSError as error:
            print(f"chronograph export: cannot write {args.output}: {error.strerror}", file=sys.stderr)
            return 2
        print(f"wrote {exported.entities:,} entities and {exported.relations:,} relations "
              f"({fmt}) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(content if content.endswith("\n") or not content else content + "\n")
    return 0


def _every_workspace(memory: Memory, known: list[str], arguments: dict[str, object], fmt: str) -> Any:
    """One export of every workspace: JSONL in sections opened by {"type": "workspace"} lines,
    JSON as {"workspaces": {name: export}}."""
    parts = {name: memory.read("export_graph", {**arguments, "workspace": name}) for name in known}
    if fmt == "json":
        content = json.dumps({"workspaces": {n: json.loads(p.content) for n, p in parts.items()}},  # type: ignore[attr-defined]
                             indent=2, ensure_ascii=False)
    else:
        content = "\n".join(line for n, p in parts.items() for line in (
            json.dumps({"type": "workspace", "name": n}, ensure_ascii=False), p.content) if line)  # type: ignore[attr-defined]
    return SimpleNamespace(content=content, entities=sum(p.entities for p in parts.values()),  # type: ignore[attr-defined]
                           relations=sum(p.relations for p in parts.values()))  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """`python tools/export_graph.py ...` (see the module docstring)."""
    return script_main("chronograph export", __doc__, add_arguments, run, argv)

if __name__ == "__main__":
    raise SystemExit(main())
