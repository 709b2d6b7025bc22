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
is no memory file at all (most of its lines are not JSON) is refused whole. The file is read
twice, never held: once to check it (its names noted in a temporary index on disk), once to
write it, a batch of 1,000 items per transaction.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.stores import store_exists
from chronograph.application.errors import ChronographError
from chronograph.application.lifecycle.importing import NOT_JSON, FileImport, ImportReport
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.lmdb import resident
from chronograph.projections import ProjectionError
from chronograph.tools.common.parsing import add_store_argument, script_main
from chronograph.tools.common.progress import Progress
from chronograph.tools.common.startup import keep_startup_state

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `import`."""
    parser.add_argument("file", type=Path, help="memory.jsonl, memory.json, or a fork's file")
    add_store_argument(parser)
    parser.add_argument("--workspace", default="default", help='workspace to import into (default: "default")')
    parser.add_argument("--strict", action="store_true", help="abort, writing nothing, on any bad line")


def run(args: argparse.Namespace) -> int:
    """Carry out `import`; return the exit code."""
    progress = Progress()
    with FileImport(args.file, args.workspace, progress=progress) as job:
        try:
            job.survey()
        except OSError as error:
            progress.finish()
            print(f"chronograph import: cannot read {args.file}: {error.strerror}", file=sys.stderr)
            return 2
        progress.finish()
        if job.foreign:
            bad = job.problems.count_of(NOT_JSON)
            print(f"chronograph import: {args.file} is not a memory file (JSONL or JSON): {bad:,} of its "
                  f"{job.lines:,} lines are not JSON; nothing was written", file=sys.stderr)
            _report_problems(job)
            return 1
        store = resolve_store(args.store)
        existed = store_exists(store)
        if not existed:  # nothing is stored yet: decide before creating anything
            job.check_ends(None)
            if job.empty or (job.problems and args.strict):
                return _refuse(job, args)
        try:
            with Memory(store, cache=args.cache) as memory:
                if existed:
                    job.check_ends(memory)
                    if job.problems and args.strict:
                        return _refuse(job, args)
                reports = job.write(memory)
                progress.finish()
                finish(memory)
        except (EventStoreError, ProjectionError, ChronographError) as error:
            progress.finish()
            print(f"chronograph import: {error}", file=sys.stderr)
            return 2
        except OSError as error:
            progress.finish()
            print(f"chronograph import: cannot read {args.file} again: {error.strerror}", file=sys.stderr)
            return 2
    for workspace, report in reports:
        _say(args, workspace, report)
    print(f"{len(job.problems)} error(s)")
    if job.problems:
        _report_problems(job)
        return 1
    return 0


def finish(memory: Memory) -> None:
    """The last step of an import, with the store still open: leave it ready for the next server
    (the search images and the SDK's opening answers: its first answers come from the store)."""
    resident.release()  # what the import read of the store is not the search's to keep
    keep_startup_state(memory)


def _say(args: argparse.Namespace, workspace: str, report: ImportReport) -> None:
    print(f"imported {args.file} into workspace {workspace!r}: {report.created} entities, "
          f"{report.related} relations, {report.observations} observations; {report.skipped} already present "
          f"(skipped); {report.conflicted} conflict(s) (the store's kept)"
          + ("; the workspace context merged" if report.context else ""))
    for conflict in report.conflicts:
        print(f"  conflict: {conflict}", file=sys.stderr)


def _refuse(job: FileImport, args: argparse.Namespace) -> int:
    _report_problems(job)
    if job.problems and args.strict:
        print(f"--strict: {len(job.problems)} problem(s); nothing was imported", file=sys.stderr)
    else:
        print(f"chronograph import: {args.file} holds nothing to import; nothing was written", file=sys.stderr)
    return 1


def _report_problems(job: FileImport) -> None:
    """One line per kind of problem: a kind met once with its line and detail, a kind met more
    often with its count and its first line numbers."""
    for kind, count, first in job.problems.kinds():
        if count == 1:
            print(f"  {first[0]}", file=sys.stderr)
            continue
        lines = ", ".join(str(problem.line) for problem in first)
        more = f" and {count - len(first):,} more" if count > len(first) else ""
        print(f"  {kind}: {count:,} lines ({lines}{more})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """`python tools/import_graph.py FILE ...` (see the module docstring)."""
    return script_main("chronograph import", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
