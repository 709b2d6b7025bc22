"""An LMDB data file's own account of its length, and zeros kept past its end.

LMDB maps the file and would die of SIGBUS reading a page past its end (a file cut short by a
bad copy or a full disk), so a store's data file is checked against its newest meta page first.
A page damaged where it lists its nodes' offsets (LMDB does not check them) sends a reader up to
64 KiB past the page, and a key's length up to 64 KiB beyond: a writer keeps `TAIL` bytes of
zeros past the last page (`Tail`), so that such a read finds a node of zeros, which the
checksums refuse, instead of the end of the file.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import lmdb
from chronograph.eventstore.errors import StoreCorruptError, StoreOpenError

__all__ = ["MAGIC", "TAIL", "Tail", "check_data_file", "database_names", "half_made", "never_committed"]


_META = struct.Struct("<II8xQI44x48xQQ")
"""An LMDB meta page after its 16-byte page header (64-bit builds): magic, version,
(address), map size, page size (the free database's md_pad), (the rest of both
databases), last page number, transaction id."""
MAGIC = 0xBEEFC0DE


def database_names(folder: Path) -> set[bytes]:
    """The names in the main database of the LMDB environment in `folder` (read without its lock:
    what its newest committed meta page says).

    Raises:
        StoreCorruptError: If its data file is cut short or is not LMDB's.
        lmdb.Error: If LMDB cannot open it or read its main database.
    """
    check_data_file(folder / "data.mdb")
    env = lmdb.open(str(folder), readonly=True, lock=False, max_dbs=0, subdir=True)
    try:
        with env.begin() as txn:
            return {bytes(key) for key, _ in txn.cursor()}
    finally:
        env.close()


def never_committed(path: Path) -> bool:
    """Whether the data file at `path` holds no commit: empty (LMDB had just made it), or its meta
    pages at transaction 0 (as LMDB writes them when it makes the file), both or the first alone
    (a full disk took the second: see `half_made`). A store's creation commits its databases at
    once, so such a file is a creation cut off before it did: nothing was ever in it."""
    try:
        with path.open("rb") as file:
            if os.fstat(file.fileno()).st_size == 0:
                return True
            first = file.read(16 + _META.size)
            magic, _, _, page_size, _, txnid = _META.unpack_from(first, 16)
            if magic != MAGIC or page_size < 512 or page_size & (page_size - 1) or txnid:
                return False
            file.seek(page_size)
            second = file.read(16 + _META.size)
    except (OSError, struct.error):
        return False
    if len(second) < 16 + _META.size:
        return True  # the first meta page alone
    other = _META.unpack_from(second, 16)
    return other[0] == MAGIC and other[5] == 0


def half_made(path: Path) -> bool:
    """Whether the data file at `path` holds LMDB's first meta page, at transaction 0, and not the
    whole second: its making was cut short (a full disk). LMDB refuses such a file as not its own;
    emptied, it makes it anew."""
    try:
        with path.open("rb") as file:
            first = file.read(16 + _META.size)
            magic, _, _, page_size, _, txnid = _META.unpack_from(first, 16)
            size = os.fstat(file.fileno()).st_size
    except (OSError, struct.error):
        return False
    return magic == MAGIC and txnid == 0 and 512 <= page_size and size < page_size + 16 + _META.size


def check_data_file(path: Path) -> None:
    """Refuse a data file shorter than its own newest meta page says it is.

    LMDB maps the file and would die of SIGBUS reading a page past its end (a file cut
    short by a bad copy or a full disk), so the length is checked before it is mapped.

    Raises:
        StoreCorruptError: If the file is truncated or its meta pages are unreadable.
    """
    try:
        with path.open("rb") as file:
            first = file.read(16 + _META.size)
            magic, _, _, page_size, last_page, txnid = _META.unpack_from(first, 16)
            if magic != MAGIC or page_size < 512 or page_size & (page_size - 1):
                raise StoreCorruptError(f"{path} is not an LMDB data file (its first page is not a meta page)")
            file.seek(page_size)
            second = file.read(16 + _META.size)
            size = os.fstat(file.fileno()).st_size
    except OSError as error:
        raise StoreOpenError(f"cannot read {path}: {error.strerror}") from None
    except struct.error:
        raise StoreCorruptError(f"{path} is truncated: {len(first)} bytes, shorter than its meta pages") from None
    if len(second) == 16 + _META.size:
        other = _META.unpack_from(second, 16)
        if other[0] == MAGIC and other[5] > txnid:
            last_page = other[4]
    needed = (last_page + 1) * page_size
    if size < needed:
        raise StoreCorruptError(
            f"{path} is truncated: {size:,} bytes where its last commit needs {needed:,}; "
            "restore the store from a backup"
        )


TAIL = 256 << 10
"""Bytes of zeros a writer keeps past the data file's last page: more than a damaged node offset
(16 bits) and key length (16 bits) can reach past a page's start together."""


_fallocate = getattr(os, "posix_fallocate", None)
"""Absent where the system has none (macOS): there the file keeps no tail."""


class Tail:
    """Keeps `TAIL` bytes of zeros past the last page of the data file at `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._through = 0
        """The end of the file as last extended (or found) by this process."""

    def keep(self, last_page: int, page_size: int) -> None:
        """After a commit: make the file reach `TAIL` past page `last_page` when it reaches less
        than half of that. `posix_fallocate` only ever lengthens a file, so another process
        extending it at the same moment loses nothing; the new bytes read as zeros."""
        end = (last_page + 1) * page_size
        if end + TAIL // 2 <= self._through or _fallocate is None:
            return
        try:
            fd = os.open(self.path, os.O_RDWR)
            try:
                size = os.fstat(fd).st_size
                if size < end + TAIL // 2:
                    _fallocate(fd, size, end + TAIL - size)
                    size = end + TAIL
                self._through = size
            finally:
                os.close(fd)
        except OSError:  # a full disk, a filesystem without it: the tail is a guard, not a need
            self._through = end + TAIL
