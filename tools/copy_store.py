"""Copy a store's log into another store, between LMDB and PostgreSQL either way, and check it.

    chronograph copy --from ~/.local/share/chronograph/store --to postgresql://db.example/team
    chronograph copy --from postgresql://db.example/team --to ./team-store

Every event goes across exactly as it is (positions, versions, times, actors, calls), with
the idempotency keys and the erasure count; then both logs are compared event for event,
byte for byte (exit 1 on any difference). The target must be empty, or hold the first
events of the source (a copy that was cut off resumes). Views are not copied: a store
folder gets its own built at the end; a server on a database builds its local ones.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import closing

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.stores import is_database_url, open_log, shown, store_exists
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.copying import copy_log, verify_copy
from chronograph.eventstore.errors import advised
from chronograph.eventstore.lmdb import resident
from chronograph.projections import ProjectionError
from chronograph.tools.common.parsing import script_main, store_location
from chronograph.tools.common.progress import Progress
from chronograph.tools.common.startup import keep_startup_state

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `copy`."""
    parser.add_argument("--from", dest="source", required=True, metavar="PATH|URL", type=store_location,
                        help="the store to copy: a directory or a postgresql:// URL")
    parser.add_argument("--to", dest="target", required=True, metavar="PATH|URL", type=store_location,
                        help="where to copy it: an empty (or new) directory or database schema")


def run(args: argparse.Namespace) -> int:
    """Carry out `copy`; return the exit code."""
    source, target = resolve_store(args.source), resolve_store(args.target)
    if str(source) == str(target):
        print("chronograph copy: --from and --to name the same store", file=sys.stderr)
        return 2
    if not store_exists(source):
        print(f"chronograph copy: there is no store at {shown(source)}", file=sys.stderr)
        return 2
    began = time.perf_counter()
    progress = Progress()
    phase = ""
    try:
        with closing(open_log(source, readonly=True, create=False)) as src, closing(open_log(target)) as dst, \
                dst.exclusive():  # no other process writes it until it is checked
            phase = "the copy stopped: "
            copied = copy_log(src, dst, lambda done, total: _step(progress, "copy", done, total), kept=True)
            progress.finish()
            phase = "the log was copied, but checking it failed: "
            problems = verify_copy(src, dst, lambda done, total: _step(progress, "check", done, total))
            progress.finish()
            head = dst.head()
    except (EventStoreError, ProjectionError) as error:
        progress.finish()
        again = " (what it copied stays: run it again once that is remedied, and it goes on from there)" \
            if phase.startswith("the copy") else " (run it again to check it)" if phase else ""
        print(f"chronograph copy: {phase}{error}{again}", file=sys.stderr)
        return 2
    for problem in problems[:50]:
        print(f"  {problem}", file=sys.stderr)
    if problems:
        print(f"chronograph copy: the copy differs from the source in {len(problems)} place(s)", file=sys.stderr)
        return 1
    done = (f"copied {copied:,} events ({head:,} in all) from {shown(source)} to {shown(target)} in "
            f"{time.perf_counter() - began:.1f} s; checked event for event: identical")
    if not is_database_url(target):  # a store folder keeps its views beside the log
        try:
            with Memory(target, progress=progress) as memory:
                keep_startup_state(memory)
            progress.finish()
        except (EventStoreError, ProjectionError) as error:  # the log is whole: only what is derived from it failed
            progress.finish()
            print(f"chronograph copy: {done}; but its views could not be built: {error}. "
                  f"{advised('replay --rebuild', str(target))} builds them (so does the first server)", file=sys.stderr)
            return 2
    print(done)
    return 0


def _step(progress: Progress, stage: str, done: int, total: int) -> None:
    """A batch is done: say so, and give back the pages of the stores it read (see `resident`)."""
    resident.release()
    progress(stage, done, total)


def main(argv: list[str] | None = None) -> int:
    """`python tools/copy_store.py --from SRC --to DST` (see the module docstring)."""
    return script_main("chronograph copy", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
