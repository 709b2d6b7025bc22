"""Whether a folder holds a store, may become one, or is refused, before LMDB opens it.

A store is made by the first process that opens its folder to write: LMDB makes its lock file,
then its data file, and the log commits its databases at once. Another process may look at
the folder at any moment of that, and a making may be cut off (killed, a full disk): what is
left holds nothing, and is made again rather than refused for good.
"""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

from chronograph.eventstore.errors import StoreOpenError
from chronograph.eventstore.files import DATA_FILE, LOCK_FILE, STORE_FILES, store_of
from chronograph.eventstore.lmdb.datafile import MAGIC, half_made, never_committed
from chronograph.eventstore.lmdb.holders import LOCK_BYTES, unheld

__all__ = ["MAKING", "being_made", "check_path"]

MAKING = 60.0
"""Seconds a lock file alone is taken for another process making a store (see `being_made`)."""


def check_path(path: Path, *, create: bool) -> bool:
    """Whether opening the folder `path` makes the store there (True), or opens the one it holds
    (False); a new folder is created.

    Raises:
        StoreOpenError: If `path` is a file, lies inside a store, holds something else, or holds no
            store and `create` is false.
    """
    if path.exists() and not path.is_dir():
        raise StoreOpenError(f"{path} is a file; a store is a directory")
    if not (path / DATA_FILE).exists() and create:
        outer = store_of(path.parent)
        if outer is not None:
            raise StoreOpenError(f"{path} lies inside the store at {outer}; a store goes in a folder of its own")
        if path.exists() and not being_made(path):
            if not (path / DATA_FILE).exists():  # (another process made it meanwhile: looked at below)
                raise StoreOpenError(f"{path} is not empty and holds no Chronograph store; choose an empty or new "
                                     "directory")
        else:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise StoreOpenError(f"cannot create the store at {path}: {error.strerror}") from None
            return True
    if (path / DATA_FILE).exists():
        if not never_committed(path / DATA_FILE):
            return False
        if not create:
            raise StoreOpenError(f"there is no store at {path}: its creation was cut off before its first commit, or "
                                 "is under way (a command that writes, such as serve or import, makes it there)")
        if set(os.listdir(path)) - set(STORE_FILES):
            return False  # not only LMDB's own files: not a folder to take over (refused as before)
        if half_made(path / DATA_FILE) and unheld(path):  # (another process may be writing its meta pages)
            os.truncate(path / DATA_FILE, 0)
        return True  # made again: nothing was ever in it
    raise StoreOpenError(f"there is no store at {path}")


def being_made(folder: Path) -> bool:
    """Whether `folder` may become a store: it is empty, or holds only an LMDB lock file that is
    either made in the last `MAKING` seconds (empty, zeros or LMDB's), as another process opening a
    new store there has made it before its data file, or holds nothing (zeros: LMDB never set it up,
    as when a full disk stopped the making) and no process has it open. A user's file of that name,
    or one LMDB set up and a store left when its data file went, is not taken over (its absence is
    what to notice)."""
    entries = os.listdir(folder)
    if not entries:
        return True
    if entries != [LOCK_FILE]:
        return False
    try:
        with (folder / LOCK_FILE).open("rb") as file:
            stat = os.fstat(file.fileno())
            content = file.read(_LOOKED_AT)
    except OSError:
        return False
    zeros = content.count(0) == len(content) and stat.st_size <= _LOOKED_AT
    lmdbs = len(content) >= 4 and struct.unpack_from("=I", content)[0] == MAGIC
    if time.time() - stat.st_mtime < MAKING and (zeros or lmdbs):
        return True
    return zeros and unheld(folder)


_LOOKED_AT = 4 * LOCK_BYTES
"""The most of a lock file alone `being_made` reads (LMDB's is `LOCK_BYTES`)."""
