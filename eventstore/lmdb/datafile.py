"""An LMDB data file's own account of its length: its meta pages, read before the file is mapped.

LMDB maps the file and would die of SIGBUS reading a page past its end (a file cut short by a
bad copy or a full disk), so a store's data file is checked against its newest meta page first.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from chronograph.eventstore.errors import StoreCorruptError, StoreOpenError

__all__ = ["check_data_file"]


_META = struct.Struct("<II8xQI44x48xQQ")
"""An LMDB meta page after its 16-byte page header (64-bit builds): magic, version,
(address), map size, page size (the free database's md_pad), (the rest of both
databases), last page number, transaction id."""
_MAGIC = 0xBEEFC0DE


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
            if magic != _MAGIC or page_size < 512 or page_size & (page_size - 1):
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
        if other[0] == _MAGIC and other[5] > txnid:
            last_page = other[4]
    needed = (last_page + 1) * page_size
    if size < needed:
        raise StoreCorruptError(
            f"{path} is truncated: {size:,} bytes where its last commit needs {needed:,}; "
            "restore the store from a backup"
        )
