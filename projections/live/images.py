"""Every workspace's search image brought to the head and kept in the store, so that the next
process loads it rather than index every entity (after an import, a copy, a restore, a rebuild).

An index this process holds, or a small one whose image is behind, is brought to the head and
kept whole. Any other workspace whose image is missing or behind is indexed from its entities a
part at a time into a temporary file, then kept a part per transaction (`SearchIndex.spool`,
`keep`): the memory is a part's whatever the workspace's size, so an import, a copy or a restore
never hold a whole index.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from chronograph.projections.search import indexes
from chronograph.projections.search.indexes import SearchIndex

__all__ = ["prepare"]


def prepare(search: SearchIndex, snapshot: Callable[[], AbstractContextManager[Any]],
            between: Callable[[], object] | None = None) -> int:
    """Bring every workspace's image to the head; return how many were saved. `snapshot()` opens a
    `Views.snapshot`; `between` runs after each part."""
    with search.lock:
        with snapshot() as taken:
            graph, behind = taken.graph, []
            for record in graph.workspaces():
                kept = search.kept_at(graph, record.name)
                if record.name in search.loaded() or (0 <= kept and record.entities <= indexes.PART_DOCS):
                    search.current(taken.log, graph, record.name)  # held, or small: caught up, kept whole
                elif kept != graph.position:
                    behind.append(record.name)
        saved = search.save(every=1)
        for workspace in behind:
            with tempfile.TemporaryFile(prefix="chronograph-search-") as spool:
                with snapshot() as taken:
                    spooled = search.spool(taken.graph, workspace, spool, between=between)
                saved += search.keep(spooled, spool)
            if between is not None:
                between()
        return saved
