"""The log's lock in PostgreSQL when its holder misbehaves: a server cut off from the database
while it holds it lets it go (the database ends its idle transaction), a holder that keeps it
is named in the error of a write that waited too long, and a stopping process cuts its waits
short. (A wait that would never end fails the test instead of hanging it: `finished`.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from chronograph.eventstore import EntityCreated, StoreBusyError, StoreUnavailableError, StreamWrite
from support.postgres import database

pglog = pytest.importorskip("chronograph.eventstore.postgres.log")
import psycopg  # noqa: E402 (after the skip: the postgresql extra)
from chronograph.eventstore.postgres import connections, locking  # noqa: E402
from chronograph.eventstore.postgres.schema import Schema  # noqa: E402

BOUND = 20.0
"""Seconds a test lets a write take before it takes the write for one that would never end."""


def write(name: str) -> list[StreamWrite]:
    return [StreamWrite(f"s-{name}", [EntityCreated(workspace="w", name=name, entity_type="t")])]


def finished(work: Callable[[], Any]) -> Any:
    """What `work` returns (or raises), or a failure if it has not ended within BOUND seconds."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as error:  # noqa: BLE001 (raised again in the test's thread)
            outcome.append((False, error))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert outcome, f"still waiting after {BOUND} s"
    done, value = outcome[0]
    if not done:
        raise value
    return value


@contextmanager
def held(url: str, application: str) -> Iterator[psycopg.Connection[Any]]:
    """The log's lock, held by a session of its own (named `application`) until the block ends."""
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0], autocommit=True, application_name=application) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (Schema(schema).lock,))
        yield holder


def test_a_server_cut_off_while_it_holds_the_log_s_lock_loses_it_and_the_others_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its session sat idle in its transaction until the database's TCP keepalive (about two
    hours): every other server's writes waited as long."""
    monkeypatch.setattr(connections, "IDLE_IN_TRANSACTION", 0.5)
    url = database().log_url()
    with pglog.PgLog(url) as lost, pglog.PgLog(url) as other:
        with pytest.raises(StoreUnavailableError, match="ended this server's connection.*nothing was written"), \
                lost.transaction() as tx:  # its host gone: it never says another word
            other_wrote = finished(lambda: other.append(write("Bo"), actor="b"))
            assert other_wrote.last_position == 1
            tx.append(write("Ada"), actor="a")
            lost.commit(tx)
        assert finished(lambda: lost.append(write("Cy"), actor="a")).last_position == 2  # its pool found its feet


def test_a_write_that_waits_too_long_for_the_log_s_lock_is_refused_and_names_the_holder(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locking, "LOCK_WAIT", 0.5)
    url = database().log_url()
    with pglog.PgLog(url) as log:
        with held(url, "the copy into it"):
            with pytest.raises(StoreBusyError, match="locked by the database's process .*'the copy into it'.*nothing "
                                                     "was written. Retry"):
                finished(lambda: log.append(write("Ada"), actor="a"))
            with pytest.raises(StoreBusyError, match="the copy into it"):  # a copy's hold, too
                finished(lambda: log.exclusive().__enter__())
        assert finished(lambda: log.append(write("Ada"), actor="a")).last_position == 1


def test_a_write_waiting_for_the_log_s_lock_is_counted_and_cut_short_when_the_process_stops() -> None:
    url = database().log_url()
    with pglog.PgLog(url) as log, held(url, "another server"):
        assert log.waiting() == 0.0
        outcome: list[BaseException] = []

        def waiting_write() -> None:
            try:
                log.append(write("Ada"), actor="a")
            except BaseException as error:  # noqa: BLE001
                outcome.append(error)

        writer = threading.Thread(target=waiting_write, daemon=True)
        writer.start()
        deadline = time.monotonic() + BOUND
        while log.waiting() == 0.0:
            assert time.monotonic() < deadline, "the write's wait was never counted"
            time.sleep(0.01)
        log.interrupt()
        writer.join(BOUND)
        assert not writer.is_alive(), "the write went on waiting"
        assert isinstance(outcome[0], StoreUnavailableError) and "stopping" in str(outcome[0])
        assert "nothing was written" in str(outcome[0]) or "rolled back" in str(outcome[0])
        with pytest.raises(StoreUnavailableError, match="stopping"):
            log.append(write("Bo"), actor="a")  # refused before it waits
        assert log.waiting() == 0.0


def test_every_connection_asks_the_database_to_guard_it_and_the_url_s_own_options_win() -> None:
    given = "postgresql://h/db?options=-c%20idle_in_transaction_session_timeout%3D7s"
    assert connections.options(given)["options"].endswith("-c idle_in_transaction_session_timeout=7s")
    with pglog.PgLog(database().log_url()) as log, log.read() as reader:
        shown = {name: reader.connection.execute(f"SHOW {name}").fetchone()[0]
                 for name in ("idle_in_transaction_session_timeout", "tcp_keepalives_idle")}
    assert shown == {"idle_in_transaction_session_timeout": "20s", "tcp_keepalives_idle": "10"}
