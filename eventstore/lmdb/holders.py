"""Who holds a store: a shared lock every opening takes, and the exclusive one replacing takes.

Every process that opens an environment (a server, a command, a PostgreSQL store's cache)
holds a shared `flock` on its `lock.mdb` for as long as it is open, taken before LMDB
opens it and kept across reopenings. A command that replaces a store (`restore
--replace`) takes that lock exclusively, without waiting: it is refused while anyone,
this process included, has the store open. LMDB's own locks are probed too (on Linux),
so a process that opened the store without this code (an older server, `mdb_stat`) is
found, with its process id. An opening that starts while the store is being replaced
waits for the replacement, then opens the store put in place, never the one set aside.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chronograph.eventstore.errors import StoreOpenError
from chronograph.eventstore.files import LOCK_FILE

__all__ = ["LOCK_BYTES", "StoreBusyError", "exclusively", "hold", "release", "sole", "unheld"]

_FLOCK = struct.Struct("hhqqi4x")
"""struct flock on 64-bit Linux: type, whence, start, length, pid."""
_OFD = sys.platform.startswith("linux") and struct.calcsize("P") == 8 and hasattr(fcntl, "F_OFD_SETLK")


class StoreBusyError(StoreOpenError):
    """A store cannot be replaced while a process has it open; nothing was replaced."""


def hold(folder: Path) -> int | None:
    """Take the shared lock of the environment in `folder`; return what `release` takes
    (None where the lock file cannot be opened: LMDB's own locking still applies)."""
    lock = folder / LOCK_FILE
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            try:
                fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits while the store is being replaced
            held, now = os.fstat(fd), os.stat(lock)
        except OSError:
            os.close(fd)
            return None
        if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
            try:
                _reserve(fd, held.st_size, lock)
            except BaseException:
                os.close(fd)
                raise
            return fd
        os.close(fd)  # replaced while this waited: hold the store now in place


LOCK_BYTES = 16_512
"""What LMDB makes the lock file for 256 readers on 64-bit Linux: (256 - 1) slots of 64 bytes after
its 192-byte header."""
_fallocate = getattr(os, "posix_fallocate", None)


def _reserve(fd: int, size: int, lock: Path) -> None:
    """Give the lock file its disk blocks before LMDB maps it. LMDB sizes it with `ftruncate`, which
    allocates nothing, and writes into the map: on a full disk, the first write to a page without
    a block killed the process with SIGBUS. Allocated first, a full disk is an error said in words.
    A lock file LMDB sized already is only completed, and a failure there is not refused (its
    first page, all a few readers touch, has its block)."""
    if _fallocate is None:
        return
    try:
        _fallocate(fd, 0, max(size, LOCK_BYTES))
    except OSError as error:
        if size < LOCK_BYTES and error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StoreOpenError(f"cannot make the store at {lock.parent}: the disk holding it is full "
                                 f"({error.strerror}); nothing was written. Free some space and retry") from None
        # (a read-only descriptor, a filesystem without it: LMDB sizes the file as it always did)


def unheld(folder: Path) -> bool:
    """Whether no process has the environment in `folder` open (neither this code's shared lock
    nor, on Linux, LMDB's own is held on its lock file); its lock file is opened, never made."""
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if _lmdb_holder(fd) is not None:
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def release(held: int | None) -> None:
    """Give back what `hold` took."""
    if held is not None:
        os.close(held)


@contextmanager
def sole(held: int | None) -> Iterator[bool]:
    """For the `with` block, turn the shared lock `hold` took into the exclusive one if no other
    process holds the store (yields whether it did): openings that start meanwhile wait.

    A failed attempt leaves the shared lock held again (on Linux, converting a `flock` lets go
    of the old lock first, so it is taken anew; LMDB's own lock on the file is held throughout).
    """
    if held is None:
        yield False
        return
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fcntl.flock(held, fcntl.LOCK_SH)
        yield False
        return
    try:
        yield True
    finally:
        fcntl.flock(held, fcntl.LOCK_SH)


@contextmanager
def exclusively(folder: Path) -> Iterator[None]:
    """Hold the environment in `folder` against every other opening for the `with` block.

    Raises:
        StoreBusyError: If a process (this one included) has it open.
    """
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:  # never opened as an environment: nobody can hold it
        yield
        return
    try:
        pid = _lmdb_holder(fd)
        if pid is not None:
            raise StoreBusyError(_busy(folder, pid or None))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreBusyError(_busy(folder, None)) from None
        yield
    finally:
        os.close(fd)


def _busy(folder: Path, pid: int | None) -> str:
    who = "this process" if pid == os.getpid() else f"process {pid}" if pid else "another process"
    return (f"the store at {folder} is open in {who}; stop the servers and commands using it, then run this "
            "again (nothing was replaced)")


def _lmdb_holder(fd: int) -> int | None:
    """The id of a process holding LMDB's own lock on the file (byte 0, shared by every process
    with the environment open; 0 when it cannot be told), or None; the probe, an open-file-description lock, conflicts
    with this process's own LMDB locks too, and is kept until `fd` is closed."""
    if not _OFD:
        return None
    wanted = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, wanted)
        return None
    except OSError as error:
        if error.errno not in (errno.EAGAIN, errno.EACCES):
            return None
    found = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_OFD_GETLK, wanted))
    return max(found[4], 0)
