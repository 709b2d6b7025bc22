"""Stores that a checkout from before store format 3 opens too, for runs side by side.

A store is created in format 3 (stream keys of fixed size), which a checkout from before it
refuses. A benchmark that hands one store to both checkouts makes it here instead: empty, in
format 2 (stream keys as their text), which this checkout keeps reading and writing as such.
"""

from __future__ import annotations

from pathlib import Path

from chronograph.eventstore import LmdbLog
from chronograph.eventstore.keys import pack_u32

SHARED_FORMAT = 2


def shared(path: Path, **options: int | bool) -> Path:
    """Create an empty store at `path` that a checkout before format 3 opens too; return `path`."""
    with LmdbLog(path, **options) as log, log.environment.env.begin(write=True) as txn:
        txn.put(b"format", pack_u32(SHARED_FORMAT), db=log.dbs.meta)
    return path
