"""Restore a store from a backup file (`chronograph backup`).

    chronograph restore team.chronograph --store ~/team/restored
    chronograph restore team.chronograph --store ~/team/store --replace
    chronograph restore team.chronograph --store ~/team/restored --key-file ~/.chronograph.key

Nothing reaches the store's place before the whole restore has been checked: the file
against its seal (with --key-file, its keyed seal: nobody without the key can have altered
it); then, beside the target, every event's checksum and the head, the log copied event by
event into a fresh store and compared back, and that store's views folded from its log (the
backup's own views and free pages are never used, so damage hiding there cannot come back).
Only then is it moved into place. The target must be a new or empty folder; --replace keeps
the store that was there beside it, renamed `<store>.replaced-N`, and is refused while any
process (a server, a command) has that store open.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application.engine.config import resolve_store
from chronograph.eventstore import EventStoreError, LmdbLog, StorageFullError
from chronograph.eventstore.files import DATA_FILE
from chronograph.eventstore.lmdb.backup import BackupInfo, key_of, read_backup
from chronograph.eventstore.lmdb.holders import exclusively
from chronograph.eventstore.lmdb.staging import BUILT, built, check_place, extract, put_in_place, staging
from chronograph.tools.common.parsing import add_store_argument, given_file, script_main

__all__ = ["add_arguments", "main", "run"]

REBUILD = "--rebuild-staged"
"""How this script is started as the process that reads an extracted backup (not a user flag)."""
DAMAGED = 3
"""The rebuilding process's exit code when the backup's store failed a check."""
STOPPED = 4
"""Its exit code when it could not finish for a reason of its own (a full disk, no memory)."""
_CRASHES = {signal.SIGBUS, signal.SIGSEGV, signal.SIGILL, signal.SIGFPE, signal.SIGABRT, signal.SIGSYS}
"""Signals a reader dies of when a crafted page leads it astray; any other stopped it from outside."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `restore`."""
    parser.add_argument("backup", metavar="FILE", help="a file written by chronograph backup")
    add_store_argument(parser)
    parser.add_argument("--replace", action="store_true",
                        help="restore over a store that exists (it is kept beside, renamed); refused while a process "
                             "has it open")
    parser.add_argument("--key-file", metavar="FILE", type=given_file,
                        help="the key the backup was sealed with (backup --key-file): refuse a backup that is not "
                             "sealed with it")


def run(args: argparse.Namespace) -> int:
    """Carry out `restore`; return the exit code."""
    began = time.perf_counter()
    store = resolve_store(args.store)
    if isinstance(store, str):
        print("chronograph restore: a backup is restored into a store folder; to put it into a database, restore "
              "it into a folder, then `chronograph copy --from FOLDER --to URL`", file=sys.stderr)
        return 2
    store = Path(os.path.abspath(store))  # `.` and `a/..` name a folder, as its parent sees it
    try:
        key = key_of(Path(args.key_file).expanduser()) if args.key_file else None
        backup = Path(args.backup).expanduser()
        info, start = read_backup(backup, key)
        aside_possible = check_place(store, replace=args.replace)
        if aside_possible:
            with exclusively(store):  # refused now, before the long work, if a process has it open
                pass
        with staging(store) as folder:
            extract(backup, info, start, folder / "extracted")
            problem = _rebuild_apart(folder / "extracted", folder / BUILT, info)
            if problem and problem[1]:
                print(f"chronograph restore: {backup}: {problem[0]}; nothing was written", file=sys.stderr)
                return 2
            if problem:
                print(f"chronograph restore: {problem[0]}; {backup} was not found faulty, and nothing was written",
                      file=sys.stderr)
                return 2
            lost = _erasures(store) - _erasures(folder / BUILT) if aside_possible else 0
            aside = put_in_place(built(folder), store, replace=args.replace)
    except EventStoreError as error:
        print(f"chronograph restore: {error}; nothing was written", file=sys.stderr)
        return 2
    except OSError as error:  # the file system refused a step: say where, not only why
        print(f"chronograph restore: {error.filename or store}: {error.strerror or error}; nothing was written",
              file=sys.stderr)
        return 2
    if lost > 0:
        print(f"chronograph restore: the store replaced ({aside}) had {lost} erasure(s) (forget) the backup was made "
              f"before: what they erased is in {store} again. Forget it again there (`chronograph audit --store "
              f"{aside}` lists the erasures), and delete {aside} once it is no longer needed", file=sys.stderr)
    sealed = "its keyed seal" if key else "its seal"
    was = f"; the store that was there is now {aside}" if aside else ""
    print(f"restored {store} as of log position {info['head']:,} in {time.perf_counter() - began:.1f} s: {sealed}, "
          f"every event's checksum and the head verified, the views rebuilt from the log{was}", file=sys.stderr)
    return 0


def _erasures(store: Path) -> int:
    """How many erasures the log of the store at `store` has had (0 when there is no store, or
    one that cannot be read: a damaged store is what a restore is often for)."""
    if not (store / DATA_FILE).is_file():
        return 0
    try:
        with LmdbLog(store, readonly=True) as log, log.read() as reader:
            return reader.erasures()
    except EventStoreError:
        return 0


def _rebuild_apart(extracted: Path, fresh: Path, info: BackupInfo) -> tuple[str, bool] | None:
    """Run `rebuild_from_log` in a process of its own; what went wrong and whether the backup's
    own data is to blame for it, or None."""
    child = subprocess.run([sys.executable, os.path.abspath(__file__), REBUILD, str(extracted), str(fresh),
                            str(info["head"])], stdout=subprocess.PIPE, text=True, check=False)
    if child.returncode == 0:
        return None
    said = child.stdout.strip().splitlines()
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        if -child.returncode in _CRASHES:
            return f"reading its store crashed the check ({name}): the backup is damaged", True
        memory = " (the system kills for want of memory with SIGKILL)" if name == "SIGKILL" else ""
        return f"the check was stopped by {name} before it finished{memory}: restore again", False
    return (said[-1] if said else f"the check failed (exit code {child.returncode})"), child.returncode != STOPPED


def _rebuild(argv: list[str]) -> int:
    """The process that reads an extracted backup: rebuild it; say what was wrong on stdout."""
    from chronograph.application.lifecycle.restoring import rebuild_from_log  # noqa: PLC0415
    from chronograph.tools.common.progress import Progress  # noqa: PLC0415
    from chronograph.tools.common.startup import keep_startup_state  # noqa: PLC0415

    extracted, fresh, head = argv
    progress = Progress()
    try:
        rebuild_from_log(Path(extracted), Path(fresh), int(head), progress, then=keep_startup_state)
    except (StorageFullError, OSError, MemoryError) as error:  # where it was built, not what it was built from
        progress.finish()
        print(f"{error.filename}: {error.strerror}; retry once that is remedied"
              if isinstance(error, OSError) and error.filename else str(error) or f"{type(error).__name__}; retry")
        return STOPPED
    except Exception as error:  # noqa: BLE001 (whatever reading a damaged file raises is one line, never a traceback)
        progress.finish()
        kind = "" if isinstance(error, EventStoreError) else f"{type(error).__name__}: "
        print(f"its store is damaged: {kind}{error}")
        return DAMAGED
    progress.finish()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python tools/restore.py ...` (see the module docstring)."""
    return script_main("chronograph restore", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    if sys.argv[1:2] == [REBUILD]:
        raise SystemExit(_rebuild(sys.argv[2:]))
    raise SystemExit(main())
