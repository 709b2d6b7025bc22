"""Restore a store from a backup file (`chronograph backup`).

    chronograph restore team.chronograph --store ~/team/restored
    chronograph restore team.chronograph --store ~/team/store --replace

The whole file is checked against its seal before anything is written; the restored log
is checked event by event (checksums) and must end where the backup says. The target must
be a new or empty folder; --replace keeps the store that was there beside it, renamed
`<store>.replaced-N`, and restores in its place (stop the servers using it first).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.lmdb.backup import restore_backup
from chronograph.projections import ProjectionError
from chronograph.tools.common.parsing import add_store_argument, script_main
from chronograph.tools.common.progress import Progress

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `restore`."""
    parser.add_argument("backup", metavar="FILE", help="a file written by chronograph backup")
    add_store_argument(parser)
    parser.add_argument("--replace", action="store_true",
                        help="restore over a store that exists (it is kept beside, renamed)")


def run(args: argparse.Namespace) -> int:
    """Carry out `restore`; return the exit code."""
    began = time.perf_counter()
    store = resolve_store(args.store)
    if isinstance(store, str):
        print("chronograph restore: a backup is restored into a store folder; to put it into a database, restore "
              "it into a folder, then `chronograph copy --from FOLDER --to URL`", file=sys.stderr)
        return 2
    try:
        info = restore_backup(Path(args.backup).expanduser(), store, replace=args.replace)
    except (EventStoreError, OSError) as error:
        print(f"chronograph restore: {getattr(error, 'strerror', None) or error}; nothing was written",
              file=sys.stderr)
        return 2
    try:  # a backup of a database log has no views: they are built here, not by the first reader
        progress = Progress()
        Memory(store, progress=progress).close()
        progress.finish()
    except (EventStoreError, ProjectionError) as error:
        print(f"chronograph restore: restored, but its views could not be built: {error}", file=sys.stderr)
        return 2
    aside = f"; the store that was there is now {info['replaced']}" if "replaced" in info else ""
    print(f"restored {store} as of log position {info['head']:,}, every event's checksum verified, in "
          f"{time.perf_counter() - began:.1f} s{aside}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python tools/restore.py ...` (see the module docstring)."""
    return script_main("chronograph restore", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
