"""Back a store up into one file, while a server keeps using it.

    chronograph backup -o memory-2026-11-23.chronograph
    chronograph backup --store ~/team/store -o /backups/team.chronograph

The file is a consistent, compacted copy of the whole store (every workspace, the whole
log, the views) as of one log position, sealed with a BLAKE2b digest; it is written whole
or not at all. `chronograph restore FILE --store DIR` brings it back.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application.config import resolve_store
from chronograph.eventstore import EventStoreError, LmdbLog
from chronograph.eventstore.backup import write_backup
from chronograph.tools.parsing import add_store_argument, script_main

import chronograph

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `backup`."""
    add_store_argument(parser)
    parser.add_argument("-o", "--output", metavar="FILE", required=True, help="the backup file to write")


def run(args: argparse.Namespace) -> int:
    """Carry out `backup`; return the exit code."""
    output = Path(args.output).expanduser()
    if output.is_dir():
        print(f"chronograph backup: {output} is a folder; name the file to write", file=sys.stderr)
        return 2
    began = time.perf_counter()
    try:
        with LmdbLog(resolve_store(args.store), readonly=True, create=False) as log:
            info = write_backup(log, output, writer=f"chronograph {chronograph.__version__}")
    except (EventStoreError, OSError) as error:
        print(f"chronograph backup: {getattr(error, 'strerror', None) or error}", file=sys.stderr)
        return 2
    print(f"wrote {output}: the store as of log position {info['head']:,} ({info['bytes'] / 2**20:.1f} MiB) "
          f"in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python tools/backup.py ...` (see the module docstring)."""
    return script_main("chronograph backup", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
