"""Giving back the pages of the stores' maps that a long job read: its RSS stays its own.

LMDB reads through a shared, read-only map of `data.mdb`. Every page a process reads stays
in its resident set until the kernel needs the memory, so a job that reads and writes a whole
store (an import of a million entities) shows the store's size as its RSS (3 GB), although
those pages are clean page cache, shared and reclaimable. `release` advises the kernel that
this process no longer needs them (`MADV_DONTNEED`): they leave its resident set, stay in the
page cache, and a later read faults them back in from there. Nothing is written or lost: the
map is read-only (writes go through `write(2)`), and no transaction holds a buffer into it
(values are copied out as `bytes`). A no-op where `/proc/self/maps` or `madvise` is missing.

A job calls `release` between its steps, or runs inside `bounded`, which watches from a thread
of its own: a step of random reads in a large store (a batch of relations at a million
entities) faults in hundreds of megabytes before it ends. Advising from another thread is
safe: the map is shared and never written through, so a page dropped under a read that is
using it is faulted back in from the page cache with the same bytes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chronograph.eventstore.files import DATA_FILE

__all__ = ["bounded", "mapped", "release"]

_MAPS = Path("/proc/self/maps")
_STATM = Path("/proc/self/statm")
_PAGE = mmap.PAGESIZE
_DONTNEED = getattr(mmap, "MADV_DONTNEED", 4)
_libc: ctypes.CDLL | None = None
_statm: tuple[int, int] | None = None
_opening = threading.Lock()


def mapped() -> int:
    """The bytes of file-backed (and shared) pages this process has resident (0 if unknown).

    Read from a descriptor kept open (`bounded` asks 200 times a second: opening the file
    each time took 16 us of the interpreter, reading it again 1.6), opened again in a child
    process (whose own pages /proc/self then names) and after any failure to read it."""
    global _statm  # noqa: PLW0603 (opened once per process)
    with _opening:
        try:
            if _statm is None or _statm[0] != os.getpid():
                _statm = (os.getpid(), os.open(_STATM, os.O_RDONLY | os.O_CLOEXEC))  # a parent's copy is left open
            return int(os.pread(_statm[1], 256, 0).split()[2]) * _PAGE
        except (OSError, IndexError, ValueError):
            _statm = None  # opened again at the next look (not closed: the number may be another's now)
            return 0


def release(above: int = 0) -> int:
    """Drop the resident pages of every store map of this process, if this process has more
    than `above` bytes of mapped pages resident; return the bytes advised.

    A job that calls it after each batch with a limit pays for pages read again only when the
    limit is passed (read again, a page costs a minor fault: with no limit, a batch of a
    thousand relations read ~25,000 pages again, 10 s of an import of 300k entities).
    Call it between transactions (never while a value read as a buffer is alive).
    """
    global _libc  # noqa: PLW0603 (loaded once, on first use)
    if above and mapped() <= above:
        return 0
    try:
        lines = _MAPS.read_text().splitlines()
    except OSError:
        return 0
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        _libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    advised = 0
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or not fields[5].endswith("/" + DATA_FILE):
            continue
        start, end = (int(part, 16) for part in fields[0].split("-"))
        if _libc.madvise(start, end - start, _DONTNEED) == 0:
            advised += end - start
    return advised


@contextmanager
def bounded(above: int, every: float = 0.005) -> Iterator[None]:
    """Keep this process's mapped store pages near `above` bytes while the block runs: a thread
    looks every `every` seconds and gives them back once they pass it (see `release`).

    Minor faults on cached pages map them at gigabytes a second (each with its neighbours), so
    the thread looks often: every 50 ms, an import of 300k entities still peaked at 415 MB
    between two looks; every 5 ms, at 321 MB (a look reads `/proc/self/statm`, ~10 µs).
    """
    done = threading.Event()

    def watch() -> None:
        while not done.wait(every):
            release(above)

    watcher = threading.Thread(target=watch, name="chronograph-resident", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
