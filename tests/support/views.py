"""The view tables as stored: what rebuilds are compared by, byte for byte."""

from __future__ import annotations

from chronograph.eventstore import LmdbLog
from chronograph.eventstore.lmdb import LmdbEnv
from chronograph.projections.tables import table_names


def raw_tables(store: LmdbLog | LmdbEnv, generation: int) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every key and value of every view table of `generation` but the checkpoint, byte for byte."""
    tables = {}
    env = (store.environment if isinstance(store, LmdbLog) else store).env
    with env.begin() as txn:
        for name in table_names(generation):
            rows = list(txn.cursor(env.open_db(name.encode(), create=False)))
            tables[name.rsplit(".", 1)[1]] = [row for row in rows if row[0] != b"checkpoint"]
    return tables
