"""The data file: zeros kept past its last page, which a damaged page's reader may reach."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.eventstore import EventStoreError, LmdbLog, StreamWrite
from chronograph.eventstore.events import EntityCreated
from chronograph.eventstore.lmdb.datafile import TAIL
from chronograph.projections.streams import new_entity_stream


def test_a_writer_keeps_zeros_past_the_last_page_and_counts_only_the_pages(store: LmdbLog) -> None:
    for batch in range(3):
        store.append([StreamWrite(new_entity_stream(), [EntityCreated(workspace="w", name=f"n{batch}-{i}",
                                                                       entity_type="t")]) for i in range(300)],
                     actor="t")
        env = store.environment.env
        end = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
        data = (store.path / "data.mdb").read_bytes()
        assert len(data) >= end + TAIL // 2 and data[end:].count(0) == len(data) - end
        assert store.stored_bytes() == end


def test_a_database_name_that_is_not_text_is_damage(store_path: Path) -> None:
    with LmdbLog(store_path) as log:
        log.environment.env.open_db(b"views.\xff")  # as a flipped byte in the main database would leave it
    with pytest.raises(EventStoreError, match="damaged"), LmdbLog(store_path) as log:
        log.environment.database_names()
