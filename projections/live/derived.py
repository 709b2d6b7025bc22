"""Which databases of a store's environment hold what another version of Chronograph derived
from the log (other view formats, their snapshots, search images and vectors): an erasure
empties them too, and a rebuild may, since their version rebuilds them from the erased log.
Emptied, they are retired whole: that version's pointer to its live views goes with them."""

from __future__ import annotations

import re
from collections.abc import Iterable

import lmdb
from chronograph.projections.keys import VECTORS
from chronograph.projections.past.snapshots import Snapshots
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.tables import VIEWS_FORMAT, Pointer

__all__ = ["foreign", "retire"]

_OURS = re.compile(rf"views(\.v{VIEWS_FORMAT}\.[ab]\..*)?|{re.escape(Snapshots.NAME)}|{re.escape(SearchIndex.NAME)}|"
                   rf"{re.escape(VECTORS)}")
_DERIVED = re.compile(r"(views|snapshots|search|vectors)(\..*)?")
_POINTERS = re.compile(rb"(v\d+\.)?generation|v\d+\.erasures")
"""The keys of the `views` database saying where a format's live views are (format 1's had no
prefix) and the erasure count they were scrubbed at."""


def foreign(name: str) -> bool:
    """Whether the database `name` holds what another version derived from the log."""
    return bool(_DERIVED.fullmatch(name)) and not _OURS.fullmatch(name)


def retire(txn: lmdb.Transaction, databases: Iterable[lmdb._Database], pointer: Pointer) -> None:
    """Empty `databases` (what other versions derived) and delete those versions' pointers to their
    live views, in `txn`. A process of theirs still running then finds no views and says so, where
    it read the emptied slot its pointer named as an empty graph; one opened again builds them anew."""
    for database in databases:
        txn.drop(database, delete=False)
    if pointer.db is None:
        return
    with txn.cursor(pointer.db) as cursor:
        theirs = [bytes(key) for key in cursor.iternext(values=False)
                  if _POINTERS.fullmatch(key) and bytes(key) not in (pointer.KEY, pointer.ERASURES)]
    for key in theirs:
        txn.delete(key, db=pointer.db)
