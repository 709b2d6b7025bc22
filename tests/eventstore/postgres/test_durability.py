"""A PostgreSQL log releases its lock before the commit is flushed; nothing may depend on a
commit before it is: what a write acknowledges, and what any server's cache folds, survives a
database crash at once after it. And a store whose database is gone still closes.

Each test runs a cluster of its own whose WAL writer sleeps 10 s, so a commit nobody waits to
be flushed stays unflushed until the crash, and the crash loses it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.eventstore.postgres.log import PgLog
from chronograph.eventstore.postgres.writer import PgTransaction
from chronograph.projections import verify
from support.cluster import Cluster, cluster

pytest.importorskip("psycopg")

LAZY_FLUSH = {"wal_writer_delay": "10000ms", "wal_writer_flush_after": "0"}


def entity(name: str) -> dict[str, object]:
    return {"name": name, "entityType": "t", "observations": [f"{name} was written"]}


def names_after_a_restart(db: Cluster, tmp_path: Path) -> set[str]:
    with Memory(db.url, cache=tmp_path / "after") as memory:
        return {e.name for e in memory.read("read_graph", {}).entities}


def test_every_acknowledged_write_survives_a_database_crash_right_after_it(tmp_path: Path) -> None:
    with cluster(**LAZY_FLUSH) as db:
        with Memory(db.url, cache=tmp_path / "cache") as memory:
            for n in range(20):
                memory.write("create_entities", {"entities": [entity(f"E{n}")]}, actor="a")
            db.crash()  # at once after the last acknowledgement, before the server does anything else
            db.start()  # (and up again before it closes)
        assert names_after_a_restart(db, tmp_path) == {f"E{n}" for n in range(20)}


def test_no_cache_folds_another_servers_write_before_it_is_flushed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with cluster(**LAZY_FLUSH) as db:
        with Memory(db.url, cache=tmp_path / "writer") as writer, Memory(db.url, cache=tmp_path / "reader") as reader:
            writer.write("create_entities", {"entities": [entity("before")]}, actor="w")
            reader.views.catch_up()

            def commit_unflushed(tx: PgTransaction) -> None:  # a writer caught between its commit and the flush
                tx.send("SET LOCAL synchronous_commit TO off", "COMMIT")

            monkeypatch.setattr(writer.log, "commit", commit_unflushed)
            writer.write("create_entities", {"entities": [entity("committed, not yet flushed")]}, actor="w")
            folded = reader.views.catch_up()  # sees the commit: may fold it only once it is on disk
        db.crash()
        db.start()
        log = PgLog(db.url, create=False)
        try:
            head = log.head()
        finally:
            log.close()
        assert folded <= head
        with Memory(db.url, cache=tmp_path / "reader") as again:  # the cache kept, against the recovered log
            assert verify(again.views) == []
        assert names_after_a_restart(db, tmp_path) == {"before", "committed, not yet flushed"}


def test_a_store_whose_database_is_gone_still_closes_without_an_error(tmp_path: Path) -> None:
    with cluster() as db:
        alone = Memory(db.url, cache=tmp_path / "alone")  # a command's store: no follower
        served = Memory(db.url, cache=tmp_path / "served")
        served.follow()  # a server's: its follower is looking when the database goes
        for memory in (alone, served):
            memory.write("create_entities", {"entities": [entity("before")]}, actor="w")
        db.crash()
        alone.close()  # waited ten seconds for a connection, then raised StoreUnavailableError
        served.close()
        db.start()
        assert names_after_a_restart(db, tmp_path) == {"before"}


def test_the_lock_goes_before_the_flush_only_where_a_commit_waits_for_its_own_flush_alone() -> None:
    import psycopg
    from chronograph.eventstore.postgres.durability import EARLY
    from support.postgres import SERVER

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
        assert connection.execute(f"SELECT {EARLY}").fetchone() == (True,)
        connection.execute("SET synchronous_commit = off")  # commits that never wait: nothing to release early
        assert connection.execute(f"SELECT {EARLY}").fetchone() == (False,)
    with cluster(synchronous_standby_names="standby") as db, psycopg.connect(db.url, autocommit=True) as connection:
        assert connection.execute(f"SELECT {EARLY}").fetchone() == (False,)  # a commit waits for its standby too
