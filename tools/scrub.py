"""Overwrite what erasures left in a store's file that no reader can see any more.

    chronograph scrub --store ~/memory

`chronograph forget` scrubs by itself; a reader that held an old snapshot longer than the
scrub waited (10 s) keeps some old pages from it, and this finishes the work. Zeroes the
free pages and the unused space inside pages; a server may keep running meanwhile. With a
PostgreSQL store, it rewrites the log's tables (VACUUM FULL), keeps the planner's statistics
free of what the log says, and scrubs this machine's cache; it exits 1 when something is
left for someone else (a reader, or the database's owner: it says what).
"""

from __future__ import annotations

import argparse
import sys

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.stores import shown, store_exists
from chronograph.eventstore import EventStoreError
from chronograph.projections import ProjectionError
from chronograph.tools.common.parsing import add_store_argument, script_main

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `scrub`."""
    add_store_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Carry out `scrub`; return the exit code (1 when a reader still holds pages)."""
    store = resolve_store(args.store)
    if not store_exists(store):
        print(f"chronograph scrub: there is no store at {shown(store)}", file=sys.stderr)
        return 2
    try:
        with Memory(store, cache=args.cache) as memory, memory.lock:
            done = memory.scrub()
    except (EventStoreError, ProjectionError) as error:
        print(f"chronograph scrub: {error}", file=sys.stderr)
        return 2
    print(f"scrubbed {shown(store)}: {done.zeroed} page(s) or gaps overwritten"
          + (f"; {done.held} old copies still visible to a reader: run it again later" if done.held else "")
          + (f"; {done.unreached}" if done.unreached else ""))
    return 1 if done.held or done.unreached else 0


def main(argv: list[str] | None = None) -> int:
    """`python tools/scrub.py --store S` (see the module docstring)."""
    return script_main("chronograph scrub", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
