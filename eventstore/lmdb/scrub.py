"""Scrubbing an LMDB data file: zeroing every byte that no snapshot can read any more.

LMDB never overwrites a committed page: a changed page is written elsewhere and the old
copy joins the free list, bytes intact, until a later transaction reuses it. Within a
live page, a deleted or shrunk entry leaves its old bytes in the gap between the node
pointers and the nodes. And a branch page keeps, as a separator, a copy of a key that
was the first of its child when the child split, even after that key is deleted. So an
erased value survives in the file three ways. A scrub pass, holding the writer lock:

* zeroes every free page that was freed by a transaction older than the last commit and
  than every live reader's snapshot (LMDB's own rule before it reuses a page,
  `mdb_find_oldest`), and anything past the last page in use;
* zeroes the gap of every page in use (no reader looks there);
* reports the databases whose branch pages hold one of the `needles`, so the caller can
  repack them (rewrite them whole: their separators become keys that exist).

LMDB has no call for any of this, so the file's own structures are read: the newest meta
page, the free database (transaction id -> the pages it freed) and the main database
(each named database's root and page counts). Before a byte is written, the pages in use
plus the free ones must add up to the file's pages exactly (LMDB's `mdb_audit` check);
if they do not, nothing is written. Pages already zero are only read.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import lmdb
from chronograph.eventstore.errors import StoreCorruptError
from chronograph.eventstore.log import Scrubbed

if TYPE_CHECKING:
    from chronograph.eventstore.lmdb.env import LmdbEnv

__all__ = ["FreeList", "Pass", "branch_keys", "oldest_reader", "read_free_list", "scrub_pass", "scrub_rounds"]

_PAGE_HEADER = 16
_BRANCH, _LEAF, _OVERFLOW, _META = 0x01, 0x02, 0x04, 0x08
_LEAF2 = 0x20
"""A leaf of a tree of sorted duplicates of fixed size (`MDB_DUPFIXED`): its values lie packed
after the header, with no node pointers, so its gap is the page's end, `upper - lower` long."""
_BIGDATA, _SUBDATA = 0x01, 0x02
_DB = struct.Struct("<IHHQQQQQ")
"""MDB_db: pad, flags, depth, branch pages, leaf pages, overflow pages, entries, root."""
_META_AT = _PAGE_HEADER + 4 + 4 + 8 + 8
"""Offset of the two MDB_db records (free, main) in a meta page."""
_NO_PAGE = 0xFFFFFFFFFFFFFFFF
_U64 = struct.Struct("<Q")
_HEADER = struct.Struct("<QHHHH")
"""A page header: number, pad, flags, lower, upper (pb_pages of an overflow page is lower | upper << 16)."""


class FreeList(NamedTuple):
    """The free list and the databases of the last commit, as the file holds them."""

    page_size: int
    last_page: int
    """The highest page number in use; pages after it are not part of the store yet."""
    txnid: int
    """The id of the last committed transaction."""
    freed: dict[int, list[int]]
    """transaction id -> the pages it freed"""
    used: int
    """Pages every database (free list and main database included) reports in use."""
    roots: dict[bytes, int]
    """named database -> its root page"""


class Pass(NamedTuple):
    """What one scrub pass did."""

    zeroed: int
    """Pages written (a free page zeroed whole, or a gap in a page in use)."""
    held: int
    """Free pages left alone because a reader or the previous commit may still read them."""
    tainted: list[bytes]
    """Named databases whose branch pages hold a needle: repack them, then scrub again."""


class _Pages:
    def __init__(self, data: mmap.mmap | bytes, page_size: int) -> None:
        self.data = data
        self.size = page_size

    def page(self, number: int, count: int = 1) -> bytes:
        start = number * self.size
        if start + count * self.size > len(self.data):
            raise StoreCorruptError(f"page {number} lies past the end of the data file")
        return self.data[start : start + count * self.size]


def _nodes(page: bytes) -> Iterator[int]:
    """The offset of each node of a branch or leaf page."""
    lower = _HEADER.unpack_from(page)[3]
    return iter(struct.unpack_from(f"<{(lower - _PAGE_HEADER) // 2}H", page, _PAGE_HEADER))


def _tree(pages: _Pages, root: int, *, leaves: bool) -> Iterator[tuple[int, bytes]]:
    """(number, page) of every branch page of the tree at `root`, and of every leaf page if `leaves`."""
    if root == _NO_PAGE:
        return
    stack = [root]
    while stack:
        number = stack.pop()
        page = pages.page(number)
        own, _, flags, _, _ = _HEADER.unpack_from(page)
        if own != number:
            raise StoreCorruptError(f"page {number} of a B-tree does not carry its own number")
        if flags & _BRANCH:
            yield number, page
            for offset in _nodes(page):
                lo, hi, top = struct.unpack_from("<HHH", page, offset)
                child = lo | hi << 16 | top << 32
                if leaves or pages.page(child)[10] & _BRANCH:
                    stack.append(child)
        elif flags & _LEAF:
            yield number, page
        else:
            raise StoreCorruptError(f"page {number} is neither a branch nor a leaf (flags {flags:#x})")


def _data(pages: _Pages, page: bytes, offset: int) -> tuple[bytes, int]:
    """A leaf node's (key, flags) and its data."""
    lo, hi, flags, ksize = struct.unpack_from("<HHHH", page, offset)
    size = lo | hi << 16
    start = offset + 8 + ksize
    if not flags & _BIGDATA:
        return page[start : start + size], flags
    first = _U64.unpack_from(page, start)[0]
    count = -(-(_PAGE_HEADER + size) // pages.size)
    return pages.page(first, count)[_PAGE_HEADER : _PAGE_HEADER + size], flags


def _count(db: tuple[int, ...]) -> int:
    return db[3] + db[4] + db[5]


def read_free_list(data: mmap.mmap | bytes) -> FreeList:
    """The free list and databases of the last commit recorded in `data` (a data file's bytes).

    Read it holding the environment's write lock, so that no commit moves them meanwhile.

    Raises:
        StoreCorruptError: If the pages do not read as LMDB writes them.
    """
    page_size = _DB.unpack_from(data, _META_AT)[0]  # the free database's md_pad holds it
    if page_size < 512 or page_size & (page_size - 1):
        raise StoreCorruptError("the data file does not start with an LMDB meta page")
    pages = _Pages(data, page_size)
    meta = max((pages.page(0), pages.page(1)), key=lambda p: _U64.unpack_from(p, _META_AT + 2 * _DB.size + 8)[0])
    free_db = _DB.unpack_from(meta, _META_AT)
    main_db = _DB.unpack_from(meta, _META_AT + _DB.size)
    last_page, txnid = struct.unpack_from("<QQ", meta, _META_AT + 2 * _DB.size)
    used = 2 + _count(free_db) + _count(main_db)
    roots: dict[bytes, int] = {}
    for _, page in _tree(pages, main_db[7], leaves=True):
        if page[10] & _LEAF:
            for offset in _nodes(page):
                value, flags = _data(pages, page, offset)
                if flags & _SUBDATA:
                    ksize = struct.unpack_from("<H", page, offset + 6)[0]
                    db = _DB.unpack(value)
                    used += _count(db)
                    roots[bytes(page[offset + 8 : offset + 8 + ksize])] = db[7]
    freed: dict[int, list[int]] = {}
    for _, page in _tree(pages, free_db[7], leaves=True):
        if page[10] & _LEAF:
            for offset in _nodes(page):
                ksize = struct.unpack_from("<H", page, offset + 6)[0]
                value, _ = _data(pages, page, offset)
                count = _U64.unpack_from(value, 0)[0] if len(value) >= 8 else -1
                if ksize != 8 or count < 0 or len(value) < 8 * (count + 1):
                    raise StoreCorruptError("the data file has a free-list record that does not read as one")
                freed[_U64.unpack_from(page, offset + 8)[0]] = list(struct.unpack_from(f"<{count}Q", value, 8))
    return FreeList(page_size, last_page, txnid, freed, used, roots)


def oldest_reader(env: lmdb.Environment) -> int | None:
    """The oldest snapshot a live reader holds (a transaction id), or None without readers."""
    oldest = None
    for line in env.readers().splitlines()[1:]:
        fields = line.split()
        if len(fields) == 3 and fields[2].isdigit():
            txnid = int(fields[2])
            oldest = txnid if oldest is None else min(oldest, txnid)
    return oldest


def scrub_pass(
    env: lmdb.Environment,
    path: str | os.PathLike[str],
    txn: lmdb.Transaction,
    *,
    through: int | None = None,
    needles: Sequence[bytes] = (),
) -> Pass:
    """One pass over the data file at `path`; `txn`, a write transaction of `env`, holds the lock.

    `held` counts the free pages not zeroable yet among those freed by transaction `through`
    or earlier (every one, when None). The file is synced before this returns.

    Raises:
        StoreCorruptError: If the pages cannot be accounted for (nothing is written then).
    """
    del txn  # held by the caller: no other writer runs while pages are zeroed
    env.reader_check()
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        with mmap.mmap(fd, size, prot=mmap.PROT_READ) as data:
            free = read_free_list(data)
            every = [page for pages in free.freed.values() for page in pages]
            if free.used + len(every) != free.last_page + 1 or len(set(every)) != len(every):
                raise StoreCorruptError(
                    f"{path}: {free.used} pages in use and {len(every)} free do not add up to the "
                    f"{free.last_page + 1} pages of the file; nothing was scrubbed"
                )
            if any(page < 2 or page > free.last_page for page in every):
                raise StoreCorruptError(f"{path}: the free list names a page outside the file; nothing was scrubbed")
            readers = oldest_reader(env)
            horizon = free.txnid if readers is None else min(free.txnid, readers)
            safe = {page for txnid, pages in free.freed.items() if txnid < horizon for page in pages}
            held = sum(len(pages) for txnid, pages in free.freed.items()
                       if txnid >= horizon and (through is None or txnid <= through))
            writes = _zero_free(data, safe, free.page_size) + _zero_gaps(data, set(every), free)
            tail = (free.last_page + 1) * free.page_size
            if tail < size and data[tail:size].count(0) != size - tail:
                writes.append((tail, size - tail))
            tainted = _tainted(data, free, needles) if needles else []
        for offset, length in writes:
            _write_zeros(fd, offset, length)
        if writes:
            os.fsync(fd)
    finally:
        os.close(fd)
    return Pass(len(writes), held, tainted)


_ZEROS = bytes(1 << 20)


def _write_zeros(fd: int, offset: int, length: int) -> None:
    while length > 0:
        written = os.pwrite(fd, memoryview(_ZEROS)[: min(length, len(_ZEROS))], offset)
        offset, length = offset + written, length - written


def _zero_free(data: mmap.mmap, safe: set[int], page_size: int) -> list[tuple[int, int]]:
    """(offset, length) of the free pages that are not zero already."""
    zero = _ZEROS[:page_size]
    writes = []
    for page in sorted(safe):
        start = page * page_size
        if data[start : start + page_size] != zero:
            writes.append((start, page_size))
    return writes


def _zero_gaps(data: mmap.mmap, free: set[int], layout: FreeList) -> list[tuple[int, int]]:
    """The gap of every branch and leaf page in use, where it is not zero already (a `_LEAF2`
    page's is at its end: zeroing from `lower` there wiped the adjacency's duplicates)."""
    size, writes = layout.page_size, []
    number = 2
    while number <= layout.last_page:
        if number in free:
            number += 1
            continue
        start = number * size
        own, _, flags, lower, upper = _HEADER.unpack_from(data, start)
        if own == number and flags & _OVERFLOW:
            number += max(1, lower | upper << 16)
            continue
        if own == number and flags & (_BRANCH | _LEAF) and _PAGE_HEADER <= lower <= upper <= size:
            gap = start + (size - (upper - lower) if flags & _LEAF2 else lower)
            if data[gap : gap + upper - lower] != _ZEROS[: upper - lower]:
                writes.append((gap, upper - lower))
        number += 1
    return writes


def branch_keys(data: mmap.mmap | bytes, layout: FreeList, name: bytes) -> Iterator[bytes]:
    """The keys the branch pages of the named database `name` hold (separators; the first of
    each page is empty, as LMDB keeps it)."""
    pages = _Pages(data, layout.page_size)
    for _, page in _tree(pages, layout.roots[name], leaves=False):
        if page[10] & _BRANCH:
            for offset in _nodes(page):
                ksize = struct.unpack_from("<H", page, offset + 6)[0]
                yield bytes(page[offset + 8 : offset + 8 + ksize])


def _tainted(data: mmap.mmap, layout: FreeList, needles: Sequence[bytes]) -> list[bytes]:
    """The named databases with a branch key that holds one of `needles`."""
    return [name for name in layout.roots
            if any(needle in key for key in branch_keys(data, layout, name) for needle in needles)]


def scrub_rounds(env: LmdbEnv, marker: bytes, needles: Sequence[bytes] = (), timeout: float = 10.0) -> Scrubbed:
    """Zero every byte of `env`'s data file that no snapshot can read: free pages, the gaps inside
    pages, and branch pages holding one of `needles` (their databases are repacked first).

    It starts by reopening the environment (`LmdbEnv.reopen`): this process's page buffers may
    hold what was erased, and the commits below would write them into the gaps of pages. Call
    it with no transaction open in this process. A pass zeroes only the pages freed before the
    last commit (the previous meta page still reaches the others), so each round first makes two
    small commits (a key in the database `marker`). The first round zeroes what was freed up to
    now and every gap; the second, what the first had to leave to the previous meta page. Pages
    a reader may still see are waited for, up to `timeout` seconds; those left are `held`.
    """
    deadline = time.monotonic() + timeout

    def mark(txn: lmdb.Transaction) -> None:  # the handle is looked up each time: a write may reopen
        txn.put(b"scrubbed", struct.pack(">Q", time.time_ns()), db=env.env.open_db(marker, txn=txn))

    zeroed = 0
    repacked: set[bytes] = set()
    rounds = 0
    env.reopen()
    through = env.env.info()["last_txnid"]
    while True:
        for _ in range(2):
            env.write(mark)
        done = env.scrub_pass(through, needles, deadline)
        zeroed += done.zeroed
        fresh = [name for name in done.tainted if name not in repacked]
        for name in fresh:  # stale separators: rewrite those trees; the next round scrubs what they left
            env.write(partial(_repack, env.env, name))
        repacked.update(fresh)
        rounds += 1
        if done.held or (rounds >= 2 and not fresh):
            return Scrubbed(zeroed, done.held)
        through = env.env.info()["last_txnid"]


def _repack(env: lmdb.Environment, name: bytes, txn: lmdb.Transaction) -> None:
    """Rewrite the database `name` whole, in key order: every branch key is a key it holds."""
    db = env.open_db(name, txn=txn, create=False)
    with txn.cursor(db) as cursor:
        items = list(cursor.iternext())
    txn.drop(db, delete=False)
    with txn.cursor(db) as cursor:
        cursor.putmulti(items, append=True)
