"""Checksums of the stored envelopes: a bit flipped on disk is found, never served.

Each event's stored bytes get a 32-bit digest (XXH3, truncated; 0 means "none recorded",
as for events written before checksums or by a version without them). Digests are kept
in pages of `PAGE` positions, one LMDB value per page, so a scan reads one value per 256
events and an append rewrites only the last page: the log's own database is untouched,
which keeps old stores readable by old and new versions alike.

XXH3 rather than CRC-32: measured on 250-byte envelopes, 0.04 us per digest against
0.20 us for zlib.crc32, which would have cost a full log scan about a third of its speed.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import lmdb
import xxhash
from chronograph.eventstore.keys import Stored, pack_u64

__all__ = ["PAGE", "digest", "read", "record"]

PAGE = 256
"""Positions per page of digests."""
_FULL = 4 * PAGE
"""A page's size. A page is written whole from its first digest, positions without one yet read
as 0 ("none recorded"), and appended at the end of its B-tree: three to a 4 KB page, where pages
that grew a digest at a time split where they grew and kept two (24 -> 16 bytes an entity)."""

_hash = xxhash.xxh3_64_intdigest


def digest(data: Stored) -> int:
    """The digest of stored bytes: 32 bits, never 0 (0 marks a position without one)."""
    return (_hash(data) & 0xFFFFFFFF) or 1


def _page(position: int) -> tuple[bytes, int]:
    return pack_u64(position // PAGE), (position % PAGE) * 4


def record(txn: lmdb.Transaction, db: lmdb._Database, first: int, digests: Sequence[int]) -> None:
    """Store the digests of positions `first`, `first + 1`, ... in their pages."""
    done = 0
    while done < len(digests):
        position = first + done
        key, offset = _page(position)
        take = min(len(digests) - done, PAGE - offset // 4)
        stored = txn.get(key, db=db)
        page = bytearray(stored or b"")
        if len(page) < _FULL:
            page.extend(bytes(_FULL - len(page)))
        page[offset : offset + 4 * take] = struct.pack(f"<{take}I", *digests[done : done + take])
        txn.put(key, bytes(page), db=db, append=stored is None and _last(txn, db) < key)
        done += take


def _last(txn: lmdb.Transaction, db: lmdb._Database) -> bytes:
    with txn.cursor(db) as cursor:
        return bytes(cursor.key()) if cursor.last() else b""


def read(txn: lmdb.Transaction, db: lmdb._Database, first: int, count: int) -> list[int]:
    """The digests recorded for `count` positions from `first` (0 where none was)."""
    out: list[int] = []
    while len(out) < count:
        position = first + len(out)
        key, offset = _page(position)
        take = min(count - len(out), PAGE - offset // 4)
        page = txn.get(key, db=db)
        chunk = b"" if page is None else bytes(page)[offset : offset + 4 * take]
        out.extend(struct.unpack(f"<{len(chunk) // 4}I", chunk))
        out.extend([0] * (take - len(chunk) // 4))
    return out
