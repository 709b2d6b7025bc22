"""Which databases of a store's environment hold what another version of Chronograph derived
from the log (other view formats, their snapshots, search images and vectors): an erasure
empties them too, and a rebuild may, since their version rebuilds them from the erased log."""

from __future__ import annotations

import re

from chronograph.projections.keys import VECTORS
from chronograph.projections.past.snapshots import Snapshots
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.tables import VIEWS_FORMAT

__all__ = ["foreign"]

_OURS = re.compile(rf"views(\.v{VIEWS_FORMAT}\.[ab]\..*)?|{re.escape(Snapshots.NAME)}|{re.escape(SearchIndex.NAME)}|"
                   rf"{re.escape(VECTORS)}")
_DERIVED = re.compile(r"(views|snapshots|search|vectors)(\..*)?")


def foreign(name: str) -> bool:
    """Whether the database `name` holds what another version derived from the log."""
    return bool(_DERIVED.fullmatch(name)) and not _OURS.fullmatch(name)
