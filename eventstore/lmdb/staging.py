"""A store built beside its place and put there only when it is whole: how a restore lands.

`staging(store)` is a new private folder beside the store's place, named for its process
(removed at the end unless its store was put in place; one a killed restore left, which holds
two whole copies of a store, is removed by the next restore or forget there, a store it
holds set aside first: `sweep`);
`extract` writes a backup's environment into a folder of it (created exclusively, never
followed) and checks its length; `put_in_place` moves a store
from it to the store's place, refusing a place that lies inside another store, that holds
something unless asked to replace a store there, or that any process (this one included) has open. The
replaced store is kept beside, renamed `<store>.replaced-N`; where the kernel can, the two
are exchanged in one step, so no opening ever finds the place empty.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import lmdb
from chronograph.eventstore.errors import EventStoreError
from chronograph.eventstore.files import DATA_FILE, STORE_FILES, orphans, store_of
from chronograph.eventstore.lmdb.backup import CHUNK, BackupError, BackupInfo
from chronograph.eventstore.lmdb.datafile import check_data_file, database_names
from chronograph.eventstore.lmdb.holders import exclusively
from chronograph.eventstore.lmdb.log import LOG_DATABASES

__all__ = ["BUILT", "STAGED", "built", "check_place", "extract", "make_durable", "put_in_place", "set_aside", "staging",
           "sweep"]

BUILT = "built"
"""The folder of a staging folder a restore builds its store in (a sweep removes what it holds)."""
STAGED = "store"
"""The folder the built store is renamed to once whole, and put in place from; after the exchange
it holds the store that was there, which a sweep sets aside."""

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def check_place(store: Path, *, replace: bool) -> bool:
    """Whether something is at `store` (to be set aside), after refusing a place a restore may not use.

    Raises:
        BackupError: If `store` lies inside another store, or below a file, or is a mount point,
            or holds something and `replace` is not set, or holds something other than a store.
    """
    outer = store_of(store.parent)
    if outer is not None or store.name in (DATA_FILE, "lock.mdb"):
        raise BackupError(f"{store} lies inside the store at {outer or store.parent}; restore into a folder of its "
                          "own")
    above = next(folder for folder in store.parents if os.path.exists(folder))
    if not above.is_dir():
        raise BackupError(f"{store} cannot be made: {above} is a file, not a folder; restore into a folder")
    if os.path.ismount(store):  # a restore renames the store it puts in place, which a mount point refuses (EBUSY)
        raise BackupError(f"{store} is a mount point, which a restore cannot set aside or fill by renaming; restore "
                          f"into a folder inside it ({store / 'store'}) and point --store there")
    occupied = os.path.lexists(store) and (not store.is_dir() or store.is_symlink() or any(store.iterdir()))
    if occupied and not replace:
        raise BackupError(f"{store} is not empty; restore into a new folder, or pass --replace to keep the current "
                          "store beside it and restore in its place")
    if occupied and not (store / DATA_FILE).is_file() or occupied and not _a_store(store):
        raise BackupError(f"{store} holds no Chronograph store (--replace sets a store aside, not other files); "
                          "restore into a new folder")
    return occupied


def _a_store(folder: Path) -> bool:
    """Whether `folder` holds a Chronograph store, sound or damaged, not another program's files.

    A readable LMDB environment is a store when its log's databases are there. One too damaged
    to list them (a failing disk zeroed its root page, cut the file short, spoiled its meta
    pages: what `replay --verify` sends to a backup for) is one when its folder holds an
    environment's files and nothing else: setting it aside keeps it whole, and a folder with
    anything more in it stays refused. Read without a lock (a restore holds the place exclusively).
    """
    try:
        names = database_names(folder)
    except (lmdb.Error, EventStoreError):
        names = None
    if names is not None and set(LOG_DATABASES) <= names:
        return True
    damaged = names is None or not names.isdisjoint(LOG_DATABASES)  # some of the log's names, not all
    return damaged and _only_store_files(folder)


def _only_store_files(folder: Path) -> bool:
    """Whether `folder` holds an LMDB environment's files (regular files) and nothing else."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    return all(entry.name in STORE_FILES and entry.is_file(follow_symlinks=False) for entry in entries)


@contextmanager
def staging(store: Path) -> Iterator[Path]:
    """A new private folder beside `store`'s place, removed afterwards with whatever is left in it."""
    store.parent.mkdir(parents=True, exist_ok=True)
    sweep(store)
    folder = Path(tempfile.mkdtemp(prefix=f".{store.name}.restoring-{os.getpid()}-", dir=store.parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep(store: Path) -> int:
    """Remove the staging folders beside `store` whose restore's process is gone; return how many.

    A store left in one (`STAGED`) is kept, set aside beside `store` like a replaced one: a
    restore killed between the exchange and the rename (`put_in_place`) left the store it
    replaced there. What it was building (`BUILT`) goes with the folder: it was never the user's.
    """
    swept = 0
    for folder in orphans(store.parent, f".{store.name}.restoring-"):
        if (folder / STAGED / DATA_FILE).exists():
            os.rename(folder / STAGED, _free_name(store))
        shutil.rmtree(folder, ignore_errors=True)
        swept += not os.path.lexists(folder)
    return swept


def built(folder: Path) -> Path:
    """The store built whole in the staging `folder` (`BUILT`), renamed to where it is put in place
    from (`STAGED`): what a sweep sets aside there is never half a store; return its path."""
    os.rename(folder / BUILT, folder / STAGED)
    return folder / STAGED


def set_aside(store: Path) -> list[Path]:
    """The stores restores set aside from `store`'s place (`<store>.replaced-N`), oldest first."""
    found = [path for path in store.parent.glob(f"{store.name}.replaced-*")
             if path.name.rpartition("-")[2].isdigit()]
    return sorted(found, key=lambda path: int(path.name.rpartition("-")[2]))


def extract(backup: Path, info: BackupInfo, start: int, folder: Path) -> None:
    """Write the environment the backup at `backup` holds into `folder` (a new folder) and check
    that it is as long as its own meta pages say.

    Raises:
        StoreCorruptError: If it is not (nothing else is read of it here).
    """
    folder.mkdir(mode=0o700)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with Path(backup).open("rb") as source, os.fdopen(os.open(folder / DATA_FILE, flags, 0o600), "wb") as target:
        source.seek(start)
        remaining = info["bytes"]
        while remaining:
            chunk = source.read(min(CHUNK, remaining))
            if not chunk:
                raise BackupError(f"{backup} ended before its data did")
            target.write(chunk)
            remaining -= len(chunk)
        target.flush()
        os.fsync(target.fileno())
    check_data_file(folder / DATA_FILE)


def make_durable(folder: Path) -> None:
    """Flush a store built without synchronous commits to the disk, files and folder, before it
    is put in place (one flush instead of one per transaction)."""
    for name in (DATA_FILE, "lock.mdb"):
        fd = os.open(folder / name, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    _sync_folder(folder)


def put_in_place(built: Path, store: Path, *, replace: bool) -> Path | None:
    """Move the store in `built` to `store`; return where the store that was there was set aside.

    Raises:
        BackupError: See `check_place`.
        StoreBusyError: If a process has the store at `store` open; nothing was moved.
    """
    with exclusively(store):
        occupied = check_place(store, replace=replace)
        aside = None
        if occupied:
            aside = _free_name(store)
            if _exchange(built, store):
                os.rename(built, aside)
            else:
                os.rename(store, aside)
                os.rename(built, store)
        else:
            if store.exists():
                store.rmdir()
            os.rename(built, store)
        _sync_folder(store.parent)
    return aside


def _exchange(a: Path, b: Path) -> bool:
    """Swap two names in one step (Linux renameat2); False where the kernel or libc cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _free_name(store: Path) -> Path:
    n = 1
    while os.path.lexists(candidate := store.with_name(f"{store.name}.replaced-{n}")):
        n += 1
    return candidate


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with suppress(OSError):  # some file systems cannot sync a folder
            os.fsync(fd)
    finally:
        os.close(fd)
