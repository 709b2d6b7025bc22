"""A database that takes connections and never answers (hung, its disk stuck; here a proxy that
holds what it is sent): a request of the log gives its connection up once the database has been
silent for its bound, fails as unavailable (a commit as of unknown outcome), is said while it
waits (`unanswered`), and the log finds the database again once it answers: the silent
connection is not reused."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from chronograph.eventstore import CommitUnconfirmedError, EntityCreated, StoreUnavailableError, StreamWrite
from support.postgres import SERVER, Database, database
from support.tcpproxy import TcpProxy

psycopg = pytest.importorskip("psycopg")
pglog = pytest.importorskip("chronograph.eventstore.postgres.log")


@contextmanager
def proxied(db: Database | None = None) -> Iterator[tuple[TcpProxy, Any]]:
    """A log of this run's database (or of `db`) reached through a proxy, and the proxy."""
    host, port = SERVER.rsplit("@", 1)[-1].rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    log = pglog.PgLog((db or database()).log_url().replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}"))
    try:
        yield proxy, log
    finally:
        proxy.mend()
        log.close()
        proxy.close()


def write(name: str) -> StreamWrite:
    return StreamWrite(f"entity-{name}", [EntityCreated(workspace="w", name=name, entity_type="t")])


def test_a_read_the_database_leaves_unanswered_fails_as_unavailable_and_the_log_reads_again_once_it_answers() -> None:
    with proxied() as (proxy, log):
        assert log.head() == 0
        proxy.hang()
        heard: list[float] = []
        stop = threading.Event()

        def watch() -> None:  # what /ready asks while the read waits
            while not stop.wait(0.1):
                heard.append(log.unanswered())

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            with pytest.raises(StoreUnavailableError, match="stopped answering during a read"), log.answering(1.5):
                log.head()
        finally:
            stop.set()
            watcher.join()
        assert max(heard) >= 1.0, heard  # said while it waited
        assert log.unanswered() == 0.0  # and no more once given up
        proxy.mend()
        with log.answering(5.0):
            assert log.head() == 0  # not on the connection that went silent


def test_a_commit_whose_answer_never_comes_is_of_unknown_outcome() -> None:
    with proxied() as (proxy, log), log.answering(1.5):
        with pytest.raises(CommitUnconfirmedError, match="may or may not have been stored"), log.transaction() as tx:
            tx.append([write("Ada")], actor="test")
            proxy.hang()
            log.commit(tx)
        proxy.mend()
        with log.answering(5.0):
            log.head()  # the log reads again (what the commit did is the database's to say)


def test_a_write_the_database_leaves_unanswered_before_its_commit_fails_having_written_nothing() -> None:
    with proxied() as (proxy, log), log.answering(1.5):
        with pytest.raises(StoreUnavailableError, match="stopped answering during a write.*nothing was written"), \
                log.transaction() as tx:
            tx.append([write("Ada")], actor="test")
            proxy.hang()
            tx.stream_version("entity-Grace")
        proxy.mend()
        assert log.head() == 0


def test_a_commit_whose_answer_never_comes_says_the_database_did_not_answer_rather_than_went_away() -> None:
    with proxied() as (proxy, log), log.answering(1.5):
        with pytest.raises(CommitUnconfirmedError, match="did not answer the commit") as failed, \
                log.transaction() as tx:
            tx.append([write("Ada")], actor="test")
            proxy.hang()
            log.commit(tx)
        assert "went away" not in str(failed.value)


def test_a_scrub_the_database_leaves_unanswered_while_it_waits_for_older_snapshots_fails_as_unavailable() -> None:
    own = Database()  # (of its own: the old snapshot it holds would hold other tests' scrubs)
    try:
        scrub_while_hung(own)
    finally:
        own.drop()


def scrub_while_hung(own: Database) -> None:
    with proxied(own) as (proxy, log):
        log.append([write("Ada")], actor="test")
        url = own.url  # (not through the proxy)
        outcome: list[BaseException | object] = []
        with psycopg.connect(url, autocommit=True) as reader, psycopg.connect(url, autocommit=True) as looker:
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            reader.execute("SELECT 1")  # a snapshot the scrub waits for, asking every 50 ms

            def scrub() -> None:
                try:
                    with log.answering(1.5):
                        outcome.append(log.scrub(timeout=600))
                except BaseException as error:  # noqa: BLE001 (said below)
                    outcome.append(error)

            scrubbing = threading.Thread(target=scrub, daemon=True)
            scrubbing.start()
            while not waiting_for_snapshots(looker):  # (the reader's transaction sees the statistics of its start)
                threading.Event().wait(0.05)
            proxy.hang()
            scrubbing.join(60)  # (without a bound it waits for the snapshot: ten minutes)
            reader.execute("ROLLBACK")
        assert len(outcome) == 1 and isinstance(outcome[0], StoreUnavailableError), outcome
        assert "stopped answering during a scrub" in str(outcome[0])


def waiting_for_snapshots(reader: Any) -> bool:
    """Whether another backend of the database runs the scrub's wait (its query of pg_stat_activity)."""
    row = reader.execute("SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                         "AND query LIKE '%%backend_xmin%%' AND datname = current_database()").fetchone()
    return bool(row and row[0])


def test_a_read_queued_on_a_table_lock_past_its_bound_waits_for_it_and_is_not_taken_for_silence() -> None:
    url = database().log_url()
    with pglog.PgLog(url) as log, psycopg.connect(url.split("?", 1)[0]) as locker:
        log.append([write("Ada")], actor="test")
        schema = url.rsplit("schema=", 1)[1]
        locker.execute(f'LOCK TABLE "{schema}".events IN ACCESS EXCLUSIVE MODE')  # as VACUUM FULL takes it
        heard: list[float] = []
        stop = threading.Event()

        def release() -> None:  # once the read has waited past its bound, and been looked at
            while not stop.wait(0.1) and len(heard) < 40:
                heard.append(log.unanswered())
            locker.rollback()

        releaser = threading.Thread(target=release, daemon=True)
        releaser.start()
        try:
            with log.answering(1.5):
                assert log.head() == 1  # waited for the lock: the database answered a look from outside
        finally:
            stop.set()
            releaser.join()
        assert len(heard) == 40 and heard[-1] == 0.0, heard  # once looked at, not counted as a silent database
        with psycopg.connect(url.split("?", 1)[0], autocommit=True) as looker:
            queued = looker.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                    "AND datname = current_database()").fetchone()
        assert queued is not None and queued[0] == 0


def test_a_seed_is_not_kept_while_another_writer_holds_the_logs_lock_and_nothing_waits_for_it() -> None:
    url = database().log_url()
    with pglog.PgLog(url) as log, psycopg.connect(url.split("?", 1)[0]) as holder:
        log.append([write("Ada")], actor="test")
        log.append([write("Grace")], actor="test")
        assert log.seeds.keep("tag", 1, 0, [b"x"])
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (log.schema.lock,))  # a copy into the log, say
        let_go = threading.Timer(3.0, holder.rollback)  # (a keep that waited for it would be kept)
        let_go.start()
        try:
            assert not log.seeds.keep("tag", 2, 0, [b"y"])  # a cache: kept another time
        finally:
            let_go.join()
        assert log.seeds.keep("tag", 2, 0, [b"y"])


def test_a_follower_whose_listening_connection_went_deaf_listens_on_a_new_one_once_a_read_finds_a_write() -> None:
    url = database().log_url()
    with pglog.PgLog(url) as log, pglog.PgLog(url) as other:
        log.watch(0, timeout=0.01)
        deaf = log._listener._listener  # noqa: SLF001
        assert deaf is not None
        deaf.execute("UNLISTEN *")  # as a connection the network held hears nothing more
        other.append([write("Ada")], actor="test")
        assert log.watch(0, timeout=5.0)[0] == 1  # read by the poll
        assert log._listener._listener is not deaf  # noqa: SLF001
