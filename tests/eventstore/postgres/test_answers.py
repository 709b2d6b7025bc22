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
from support.postgres import SERVER, database
from support.tcpproxy import TcpProxy

pglog = pytest.importorskip("chronograph.eventstore.postgres.log")


@contextmanager
def proxied() -> Iterator[tuple[TcpProxy, Any]]:
    """A log of this run's database reached through a proxy, and the proxy."""
    host, port = SERVER.rsplit("@", 1)[-1].rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    log = pglog.PgLog(database().log_url().replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}"))
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
