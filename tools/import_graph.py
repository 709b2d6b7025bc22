"""Import a memory file of the official server (or the itseasy21 fork) into a store.

    chronograph import memory.jsonl                     the official JSONL file
    chronograph import memory.json                      its legacy file (JSONL, or {entities, relations})
    chronograph import --workspace lab --strict FILE    all or nothing

Everything becomes ordinary events, recorded as actor "import" under one correlation id.
Importing the same file again changes nothing: existing entities only gain observations
they lack, existing relations are skipped. The fork's createdAt/version are kept in each
entity's metadata (importedCreatedAt, importedVersion). Bad lines are reported with their
line numbers (one line per kind of problem: its count and first lines), relations whose
ends exist nowhere are reported, not dropped in silence, and an entity whose type differs
from the stored one is reported as a conflict (the stored type is kept, its observations
merged). Without --strict the good lines are
imported (exit code 1 if any line was bad); with --strict, any problem aborts the import
before anything is written. A file with nothing to import creates no store, and one that
is no memory file at all (most of its lines are not JSON) is refused whole.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.stores import store_exists
from chronograph.application.errors import ChronographError
from chronograph.application.lifecycle.importing import (
    NOT_JSON,
    Plan,
    Problem,
    check,
    import_plan,
    read_file,
    stored_types,
)
from chronograph.eventstore import EventStoreError
from chronograph.projections import ProjectionError
from chronograph.tools.common.parsing import add_store_argument, script_main
from chronograph.tools.common.progress import Progress
from chronograph.tools.common.startup import keep_startup_state

__all__ = ["add_arguments", "main", "run"]

FIRST = 5
"""Line numbers a report names for a kind of problem met on many lines."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `import`."""
    parser.add_argument("file", type=Path, help="memory.jsonl, memory.json, or a fork's file")
    add_store_argument(parser)
    parser.add_argument("--workspace", default="default", help='workspace to import into (default: "default")')
    parser.add_argument("--strict", action="store_true", help="abort, writing nothing, on any bad line")


def run(args: argparse.Namespace) -> int:
    """Carry out `import`; return the exit code."""
    try:
        plan = read_file(args.file)
    except OSError as error:
        print(f"chronograph import: cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return 2
    if plan.foreign:
        bad = sum(problem.kind == NOT_JSON for problem in plan.problems)
        print(f"chronograph import: {args.file} is not a memory file (JSONL or JSON): {bad:,} of its "
              f"{plan.lines:,} lines are not JSON; nothing was written", file=sys.stderr)
        _report_problems(plan)
        return 1
    parts = [(args.workspace, plan), *plan.sections.items()]  # an export of every workspace has sections
    store = resolve_store(args.store)
    if not store_exists(store):  # nothing is stored yet: decide before creating anything
        for _, part in parts:
            check(part, {})
        _gather(plan, parts)
        if plan.empty or (plan.problems and args.strict):
            return _refuse(plan, args)
    try:
        with Memory(store, cache=args.cache) as memory:
            stored = {workspace: stored_types(memory, part, workspace) for workspace, part in parts}
            for workspace, part in parts:
                check(part, stored[workspace])
            _gather(plan, parts)
            if plan.problems and args.strict:
                return _refuse(plan, args)
            progress = Progress()
            reports = [(workspace, import_plan(memory, part, workspace, stored[workspace], progress))
                       for workspace, part in parts if not part.empty]
            progress.finish()
            keep_startup_state(memory)  # the next server's first answers come from the store
    except (EventStoreError, ProjectionError, ChronographError) as error:
        print(f"chronograph import: {error}", file=sys.stderr)
        return 2
    for workspace, report in reports:
        print(f"imported {args.file} into workspace {workspace!r}: {report.created} entities, "
              f"{report.related} relations, {report.observations} observations; {report.skipped} already present "
              f"(skipped); {len(report.conflicts)} conflict(s) (the store's kept)"
              + ("; the workspace context merged" if report.context else ""))
        for conflict in report.conflicts[:100]:
            print(f"  conflict: {conflict}", file=sys.stderr)
    print(f"{len(plan.problems)} error(s)")
    if plan.problems:
        _report_problems(plan)
        return 1
    return 0


def _gather(plan: Plan, parts: list[tuple[str, Plan]]) -> None:
    """Every section's problems, said by the plan of the whole file."""
    for workspace, part in parts:
        if part is not plan:
            plan.problems += [replace(problem, kind=f"workspace {workspace!r}: {problem.kind}")
                              for problem in part.problems]
            part.problems = []


def _refuse(plan: Plan, args: argparse.Namespace) -> int:
    _report_problems(plan)
    if plan.problems and args.strict:
        print(f"--strict: {len(plan.problems)} problem(s); nothing was imported", file=sys.stderr)
    else:
        print(f"chronograph import: {args.file} holds nothing to import; nothing was written", file=sys.stderr)
    return 1


def _report_problems(plan: Plan) -> None:
    """One line per kind of problem: a kind met once with its line and detail, a kind met more
    often with its count and its first line numbers."""
    kinds: dict[str, list[Problem]] = {}
    for problem in plan.problems:
        kinds.setdefault(problem.kind, []).append(problem)
    for kind, problems in kinds.items():
        if len(problems) == 1:
            print(f"  {problems[0]}", file=sys.stderr)
            continue
        lines = ", ".join(str(problem.line) for problem in problems[:FIRST])
        more = f" and {len(problems) - FIRST:,} more" if len(problems) > FIRST else ""
        print(f"  {kind}: {len(problems):,} lines ({lines}{more})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """`python tools/import_graph.py FILE ...` (see the module docstring)."""
    return script_main("chronograph import", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
