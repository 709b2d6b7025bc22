"""Import a memory file of the official server (or the itseasy21 fork), or another memory
server's memory, into a store.

    chronograph import memory.jsonl                     the official JSONL file
    chronograph import memory.json                      its legacy file (JSONL, or {entities, relations})
    chronograph import --workspace lab --strict FILE    every line checked before the first write
    chronograph import ~/code/app                       an n2n project (.mcp/memory.json, context.json)
    chronograph import agent-memory.db                  Agent Memory's SQLite database (the team memory)
    chronograph import memory.kuzu                      a Kuzu memory graph (needs chronograph[kuzu])
    chronograph import mem0-export.json                 mem0's exported memories
    chronograph import ~/basic-memory                   a basic-memory folder of Markdown notes
    chronograph import --plan PATH                      what would be written; writes nothing
    chronograph import --from mem0 PATH                 the format named, not detected

The format is detected from the path (--from names it) and named in the report's first line.
Another server's memory is recorded as the actor "import:<format>", and each entity it brings
names its source in its metadata (importedFrom); importing it again writes nothing.

Everything becomes ordinary events under one correlation id (the official file's recorded as
actor "import").
Importing the same file again changes nothing: existing entities only gain observations
they lack, existing relations are skipped. The fork's createdAt/version are kept in each
entity's metadata (importedCreatedAt, importedVersion). Bad lines are reported with their
line numbers (one line per kind of problem: its count and first lines; another server's
records by their place in it: a memory's number and id, a note, a database's entity), relations whose
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
from chronograph.application.errors import ChronographError, InvalidArgumentsError, ScratchError
from chronograph.application.lifecycle.from_agentmemory import TeamReport
from chronograph.application.lifecycle.importing import NOT_JSON, FileImport, ImportReport
from chronograph.application.lifecycle.importwriter import context_changes
from chronograph.application.lifecycle.sources import SOURCES, Source, SourceError, Staged, choose, stage
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.lmdb import resident
from chronograph.projections import ProjectionError
from chronograph.tools.common.parsing import add_store_argument, script_main, workspace_flag
from chronograph.tools.common.progress import Progress
from chronograph.tools.common.startup import keep_startup_state

__all__ = ["add_arguments", "ignored", "main", "not_written", "report_problems", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `import`."""
    parser.add_argument("file", type=Path, help="memory.jsonl, memory.json, a fork's file, or another server's "
                        "memory (an n2n project folder, Agent Memory's database, a Kuzu database, mem0's export, "
                        "a basic-memory folder)")
    add_store_argument(parser)
    parser.add_argument("--workspace", type=workspace_flag, help='workspace to import into (default: "default"; a '
                        "file exported with --all-workspaces goes into the workspaces it names)")
    parser.add_argument("--strict", action="store_true", help="abort, writing nothing, on any bad line")
    parser.add_argument("--from", dest="source", metavar="FORMAT",
                        help=f"the source's format, not detected: {', '.join(SOURCES)}")
    parser.add_argument("--plan", action="store_true", help="print what would be written, per workspace; write "
                        "nothing")


def run(args: argparse.Namespace) -> int:
    """Carry out `import`; return the exit code."""
    try:
        source = choose(args.file, args.source)
    except SourceError as error:
        print(f"chronograph import: {error}", file=sys.stderr)
        return 2
    print(f"format: {source.name} ({source.title}): {args.file}")
    try:
        if source.team is not None:
            return _run_team(args, source)
        with stage(source, args.file, args.workspace or "default") as staged:
            return _run_file(args, staged, source.actor)
    except SourceError as error:
        print(f"chronograph import: {error}", file=sys.stderr)
        return 2
    except ScratchError as error:  # (met while writing, it is said with what was written: see `_run_file`)
        print(f"chronograph import: nothing was written: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"chronograph import: cannot read {args.file}: {error.strerror or error}", file=sys.stderr)
        return 2


def _run_file(args: argparse.Namespace, staged: Staged, actor: str) -> int:
    """Import the records of a file (the official one, or another server's memory as records)."""
    progress = Progress()
    with FileImport(staged.path, args.workspace or "default", progress=progress, actor=actor,
                    strict=args.strict) as job:
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
            report_problems(job, staged)
            return 1
        named = [section.workspace for section in job.sections.values() if section.named]
        if named and args.workspace is not None:
            print(f"chronograph import: {args.file} names its workspaces ({', '.join(named[:5])}"
                  f"{', ...' if len(named) > 5 else ''}) and goes into them; leave --workspace out (nothing was "
                  "written)", file=sys.stderr)
            return 2
        try:
            job.check_workspaces()
            job.unchanged(written=False)
        except (ChronographError, OSError) as error:  # a changed file's error says what was written
            said = "; nothing was written" if isinstance(error, InvalidArgumentsError) else ""
            print(f"chronograph import: {error}{said}", file=sys.stderr)
            return 2
        store = resolve_store(args.store)
        existed = store_exists(store)
        if args.plan:
            return _plan(args, job, staged, store if existed else None)
        if not existed:  # nothing is stored yet: decide before creating anything
            job.check_ends(None)
            if job.empty or (job.problems and args.strict):
                return _refuse(job, args, staged)
        try:
            with Memory(store, cache=args.cache) as memory:
                if existed:
                    job.check_ends(memory)
                    if job.problems and args.strict:
                        return _refuse(job, args, staged)
                reports = job.write(memory)
                for _, report in reports:  # they name lines of the file read: another server's are its records
                    report.conflicts = staged.retold(report.conflicts)
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
    if job.ignored:
        print(ignored(job))
    print(f"{len(job.problems)} error(s)")
    if job.problems:
        report_problems(job, staged)
        return 1
    return 0


def finish(memory: Memory) -> None:
    """The last step of an import, with the store still open: leave it ready for the next server
    (the search images and the SDK's opening answers: its first answers come from the store)."""
    resident.release()  # what the import read of the store is not the search's to keep
    keep_startup_state(memory)


def _plan(args: argparse.Namespace, job: FileImport, staged: Staged, store: Path | str | None) -> int:
    """Say what the import would write, per workspace, writing nothing (a store is only read)."""
    held: dict[int, tuple[int, int]] = {}
    same: set[int] = set()
    if store is None:
        job.check_ends(None)
    else:
        with Memory(store, cache=args.cache) as memory:
            job.check_ends(memory)
            held = {s.number: job.present(memory, s) for s in job.sections.values() if not s.empty}
            same = {s.number for s in job.sections.values() if s.context and not context_changes(memory, s)}
    for section in job.sections.values():
        if section.empty:
            continue
        counts = staged.counted(args.workspace or "default").get(section.workspace)
        observations = counts.observations if counts is not None else 0
        entities, relations = held.get(section.number, (0, 0))
        stored = (f"; in the store already: {entities} of the entities (given only the observations they lack) and "
                  f"{relations} of the relations") if entities or relations else ""
        context = "" if not section.context else "; the workspace context" + (
            " (the store's already)" if section.number in same else "")
        print(f"plan: workspace {section.workspace!r}: {section.entities} entities, {section.relations} relations, "
              f"{observations} observations{context}{stored}")
    if job.ignored:
        print(f"plan: {ignored(job)}")
    print(f"plan: nothing was written; {len(job.problems)} error(s)")
    report_problems(job, staged)
    return 1 if job.problems else 0


def _run_team(args: argparse.Namespace, source: Source) -> int:
    """Import a memory of the team surface (Agent Memory's database): checked and counted first,
    then written through the team memory's tools."""
    assert source.team is not None
    plan: TeamReport = source.team(None, args.file, source.actor)  # reads and checks it all, writes nothing
    held = ", ".join(f"{count} {kind}" for kind, count in {**plan.scopes, **plan.entries}.items())
    if args.plan:
        print(f"plan: the team memory: {held}; {plan.versions} versions, {plan.tags} tags on entries, "
              f"{plan.relations} relations, {plan.inactive} deactivated; nothing was written")
        return 0
    try:
        with Memory(resolve_store(args.store), cache=args.cache) as memory:
            before = memory.log.head()
            report: TeamReport = source.team(memory, args.file, source.actor)
            events = memory.log.head() - before
    except (EventStoreError, ProjectionError, ChronographError) as error:
        print(f"chronograph import: {error}", file=sys.stderr)
        return 2
    print(f"imported {args.file} into the team memory: {held}; {report.versions} versions; "
          f"{report.created['organizations']} organizations, {report.created['projects']} projects and "
          f"{report.created['entries']} entries created, {report.updated} updated; {events} events")
    return 0


def _say(args: argparse.Namespace, workspace: str, report: ImportReport) -> None:
    print(f"imported {args.file} into workspace {workspace!r}: {report.created} entities, "
          f"{report.related} relations, {report.observations} observations; {report.skipped} already present "
          f"(skipped){not_written(report)}; {report.conflicted} conflict(s) (what came first kept)"
          + ("; the workspace context merged" if report.context else ""))
    for conflict in report.conflicts:
        print(f"  conflict: {conflict}", file=sys.stderr)


def not_written(report: ImportReport) -> str:
    """What of the file the report's counts leave out, as the end of its line ("" if nothing)."""
    said = []
    if report.unwritten:
        said.append(f"{report.unwritten} observation(s) repeated in the file or held already")
    if report.repeated:
        said.append(f"{report.repeated} relation line(s) repeating another")
    return f"; not written again: {' and '.join(said)}" if said else ""


def ignored(job: FileImport) -> str:
    """The fields of the file the import did not read, as a sentence ("" if none)."""
    if not job.ignored:
        return ""
    fields = sorted(job.ignored.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{name!r} ({count} line(s))" for name, count in fields[:5])
    more = f" and {len(fields) - 5} more" if len(fields) > 5 else ""
    return f"ignored {len(fields)} field(s) the format does not name: {shown}{more}"


def _refuse(job: FileImport, args: argparse.Namespace, staged: Staged) -> int:
    report_problems(job, staged)
    if job.problems and args.strict:
        print(f"--strict: {len(job.problems)} problem(s); nothing was imported", file=sys.stderr)
    else:
        print(f"chronograph import: {args.file} holds nothing to import; nothing was written", file=sys.stderr)
    return 1


def report_problems(job: FileImport, staged: Staged | None = None) -> None:
    """One line per kind of problem: a kind met once with its line and detail, a kind met more
    often with its count and its first line numbers; for another server's memory (`staged` from
    it), the source's records instead of the lines of the file the import read."""
    kinds = job.problems.kinds()
    records = staged is not None and staged.places is not None
    places = staged.where({p.line for _, _, first in kinds for p in first}) if staged is not None and records else {}
    for kind, count, first in kinds:
        if count == 1:
            print(f"  {first[0].said(places.get(first[0].line, f'line {first[0].line}'))}", file=sys.stderr)
            continue
        shown = ", ".join(places.get(problem.line, str(problem.line)) for problem in first)
        more = f" and {count - len(first):,} more" if count > len(first) else ""
        print(f"  {kind}: {count:,} {'records' if records else 'lines'} ({shown}{more})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """`python tools/import_graph.py FILE ...` (see the module docstring)."""
    return script_main("chronograph import", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
