"""Back a store up into one file, while a server keeps using it.

    chronograph backup -o memory-2026-11-23.chronograph
    chronograph backup --store ~/team/store -o /backups/team.chronograph --key-file ~/.chronograph.key

The file is a consistent, compacted copy of the whole store (every workspace, the whole
log, the views) as of one log position, sealed with a BLAKE2b digest (which detects damage),
or with --key-file a keyed one (which also proves that nobody without the key altered it:
use it for backups that travel). It is written whole or not at all, readable by its owner
only, never inside a store, through a symbolic link or over an existing file (unless
--force). `chronograph restore FILE --store DIR` brings it back. A PostgreSQL store's log
(every event, idempotency key and erasure count, as of one snapshot) is backed up the same
way: it restores as a store folder, which `chronograph copy` takes back into a database.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
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
from chronograph.eventstore.files import STORE_FILES, check_target, sweep_orphans
from chronograph.eventstore.lmdb.backup import BackupInfo, key_of, write_backup
from chronograph.tools.common.parsing import add_store_argument, given_file, script_main

import chronograph

__all__ = ["add_arguments", "main", "run"]

SCRATCH = f".chronograph-backup-{hashlib.blake2b(socket.gethostname().encode(), digest_size=6).hexdigest()}-"
"""The prefix of the folder a database store is copied into beside the output (this host's name:
a folder shared with other machines holds their live backups' too; a digest, as names cut to
what a file name takes could be one for two hosts), then its process id."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `backup`."""
    add_store_argument(parser)
    parser.add_argument("-o", "--output", metavar="FILE", required=True, type=given_file,
                        help="the backup file to write")
    parser.add_argument("--force", action="store_true", help="replace the output file if it exists")
    parser.add_argument("--key-file", metavar="FILE", type=given_file,
                        help="seal with the key in FILE (at least 16 secret bytes: head -c 32 /dev/urandom > FILE); "
                             "restore then needs the same --key-file")


def run(args: argparse.Namespace) -> int:
    """Carry out `backup`; return the exit code."""
    output = Path(args.output).expanduser()
    began = time.perf_counter()
    store = resolve_store(args.store)
    writer = f"chronograph {chronograph.__version__}"
    try:
        check_target(output, overwrite=args.force)  # before the copy, however long
        sweep_orphans(output.parent, SCRATCH, holds={"store": STORE_FILES})  # what killed backups left
        key = key_of(Path(args.key_file).expanduser()) if args.key_file else None
        if isinstance(store, str):
            info = _backup_database(store, output, writer, args.force, key)
        else:
            with LmdbLog(store, readonly=True, create=False) as log:
                info = write_backup(log, output, writer=writer, overwrite=args.force, key=key)
    except EventStoreError as error:
        print(f"chronograph backup: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"chronograph backup: cannot write {output}: {error.strerror or error}; no backup was written",
              file=sys.stderr)
        return 2
    sealed = ", sealed with the key" if args.key_file else ""
    print(f"wrote {output}: the store as of log position {info['head']:,} ({info['bytes'] / 2**20:.1f} MiB{sealed}) "
          f"in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    return 0


def _backup_database(url: str, output: Path, writer: str, overwrite: bool, key: bytes | None) -> BackupInfo:
    """A database log is copied, as of one snapshot, into a store folder beside the output,
    which is then sealed: restoring it gives a store folder (`copy` takes it back to a database).

    The folder is named for this process, like the guarded writer's `.partial` files: one a
    killed backup left (a whole copy of the log, which no `forget` reaches) is removed by the
    next backup into that folder (`run`)."""
    with closing(open_log(url, readonly=True, create=False)) as source, \
            tempfile.TemporaryDirectory(prefix=f"{SCRATCH}{os.getpid()}-", dir=output.parent) as scratch:
        with LmdbLog(Path(scratch) / "store") as copy:
            copy_log(source, copy)
        with LmdbLog(Path(scratch) / "store", readonly=True, create=False) as copy:
            return write_backup(copy, output, writer=writer, overwrite=overwrite, key=key)


def main(argv: list[str] | None = None) -> int:
    """`python tools/backup.py ...` (see the module docstring)."""
    return script_main("chronograph backup", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
