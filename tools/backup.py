"""Back a store up into one file, while a server keeps using it.

    chronograph backup -o memory-2026-11-23.chronograph
    chronograph backup --store ~/team/store -o /backups/team.chronograph

The file is a consistent, compacted copy of the whole store (every workspace, the whole
log, the views) as of one log position, sealed with a BLAKE2b digest; it is written whole
or not at all. `chronograph restore FILE --store DIR` brings it back. A PostgreSQL store's log
(every event, idempotency key and erasure count, as of one snapshot) is backed up the same
way: it restores as a store folder, which `chronograph copy` takes back into a database.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.stores import open_log
from chronograph.eventstore import EventStoreError, LmdbLog
from chronograph.eventstore.copying import copy_log
from chronograph.eventstore.lmdb.backup import BackupInfo, write_backup
from chronograph.tools.common.parsing import add_store_argument, script_main

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
    store = resolve_store(args.store)
    writer = f"chronograph {chronograph.__version__}"
    try:
        if isinstance(store, str):
            info = _backup_database(store, output, writer)
        else:
            with LmdbLog(store, readonly=True, create=False) as log:
                info = write_backup(log, output, writer=writer)
    except (EventStoreError, OSError) as error:
        print(f"chronograph backup: {getattr(error, 'strerror', None) or error}", file=sys.stderr)
        return 2
    print(f"wrote {output}: the store as of log position {info['head']:,} ({info['bytes'] / 2**20:.1f} MiB) "
          f"in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    return 0


def _backup_database(url: str, output: Path, writer: str) -> BackupInfo:
    """A database log is copied, as of one snapshot, into a store folder beside the output,
    which is then sealed: restoring it gives a store folder (`copy` takes it back to a database)."""
    with closing(open_log(url, readonly=True, create=False)) as source, \
            tempfile.TemporaryDirectory(prefix=".chronograph-backup-", dir=output.parent) as scratch:
        with LmdbLog(Path(scratch) / "store") as copy:
            copy_log(source, copy)
        with LmdbLog(Path(scratch) / "store", readonly=True, create=False) as copy:
            return write_backup(copy, output, writer=writer)


def main(argv: list[str] | None = None) -> int:
    """`python tools/backup.py ...` (see the module docstring)."""
    return script_main("chronograph backup", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
