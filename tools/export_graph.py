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
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.sink import Sink
from chronograph.application.errors import ChronographError
from chronograph.application.lifecycle.export import FORMATS, checked, export, jsonl_line
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.files import check_target, guarded_file
from chronograph.projections import ProjectionError, written_position
from chronograph.tools.common.parsing import (
    add_store_argument,
    explain,
    given_file,
    missing_workspace,
    script_main,
    workspace_names,
)
from chronograph.tools.common.progress import Progress
from msgspec import UNSET

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
    parser.add_argument("-o", "--output", metavar="FILE", type=given_file, help="write here (default: stdout)")
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
    as_of: Any = UNSET if not args.at else written_position(args.at) or args.at
    if args.all_workspaces and fmt not in ("jsonl", "json"):
        print("chronograph export: --all-workspaces writes jsonl or json (what import reads back)", file=sys.stderr)
        return 2
    output = Path(args.output).expanduser() if args.output else None
    try:
        if output is not None:
            check_target(output, overwrite=args.force)  # before reading the store
        with Memory(resolve_store(args.store), readonly=True, cache=args.cache) as memory:
            known = workspace_names(memory)
            missing = None if args.all_workspaces else missing_workspace(args.workspace, known)
            if missing:
                print(f"chronograph export: {missing}", file=sys.stderr)
                return 2
            names = known if args.all_workspaces else [args.workspace]
            checked(memory, as_of)  # a bad --at is said before a line of the export is written
            progress = Progress()  # bars on stderr when it is a terminal
            if output is None:  # written as it is made; a line break ends it
                stdout = Prefixed(sys.stdout.write)
                try:
                    counts = _export(memory, names, fmt, as_of, stdout, progress, every=args.all_workspaces)
                finally:
                    progress.finish()
                if stdout.last not in ("", "\n"):
                    sys.stdout.write("\n")
            else:  # written whole or not at all
                try:
                    with guarded_file(output, overwrite=args.force) as file:
                        counts = _export(memory, names, fmt, as_of, lambda text: file.write(text.encode()),
                                         progress, every=args.all_workspaces)
                except OSError as error:
                    print(f"chronograph export: cannot write {args.output}: {error.strerror}", file=sys.stderr)
                    return 2
                finally:
                    progress.finish()
            note = None if as_of is UNSET else memory.timeline.past_the_end(as_of)
            if note:
                print(f"chronograph export: {note}", file=sys.stderr)
    except (EventStoreError, ProjectionError, ChronographError) as error:
        print(f"chronograph export: {explain(error, FLAGS)}", file=sys.stderr)
        return 2
    if output is not None:
        print(f"wrote {counts[0]:,} entities and {counts[1]:,} relations ({fmt}) to {args.output}", file=sys.stderr)
    return 0


class Prefixed:
    """A writer that puts `prefix` before the first text it is given, and remembers the last character."""

    def __init__(self, write: Callable[[str], object], prefix: str = "") -> None:
        self._write = write
        self._prefix = prefix
        self.last = ""

    def __call__(self, text: str) -> None:
        if text:
            self._write(self._prefix + text)
            self._prefix = ""
            self.last = text[-1]


def _export(memory: Memory, names: list[str], fmt: Any, as_of: Any, write: Callable[[str], object],
            progress: Progress, *, every: bool) -> tuple[int, int]:
    """Write the export of the workspace named, or of every one (JSONL in sections opened by
    {"type": "workspace"} lines, JSON as {"workspaces": {name: export}}), a piece at a time; how
    many entities and relations it holds."""
    if not every:
        return export(memory, names[0], fmt, as_of, Sink(write), progress)
    entities = relations = 0
    if fmt == "json":
        write('{\n  "workspaces": {')
    for number, name in enumerate(names):
        if fmt == "json":  # each document nested two levels deeper
            write(("\n" if number == 0 else ",\n") + f"    {json.dumps(name, ensure_ascii=False)}: ")
            sink = Sink(lambda text: write(text.replace("\n", "\n    ")))
        else:  # a section's lines follow its opening line
            write(("\n" if number else "") + jsonl_line({"type": "workspace", "name": name}))
            sink = Sink(Prefixed(write, "\n"))
        counted = export(memory, name, fmt, as_of, sink, progress)
        entities, relations = entities + counted[0], relations + counted[1]
    if fmt == "json":
        write("\n  }\n}" if names else "}\n}")
    return entities, relations


def main(argv: list[str] | None = None) -> int:
    """`python tools/export_graph.py ...` (see the module docstring)."""
    return script_main("chronograph export", __doc__, add_arguments, run, argv)

if __name__ == "__main__":
    raise SystemExit(main())
