"""A scrub of a PostgreSQL log rewrites its tables once no older snapshot can see what was erased:
it waits for the transactions that could, and says how many old row versions one still holds."""

from __future__ import annotations

import threading

import pytest
from chronograph.eventstore import ContentErased, EntityCreated, Envelope, StreamWrite
from support.postgres import database, server_bytes

psycopg = pytest.importorskip("psycopg")
from chronograph.eventstore.postgres.log import PgLog  # noqa: E402 (needs the driver)

SECRET = "Ignatius Fenwhistle-Oduya"


def holding(url: str) -> list[str]:
    return sorted(name for name, data in server_bytes(url).items() if SECRET.encode() in data)


def redact(envelope: Envelope) -> ContentErased:
    return ContentErased(erased=envelope.type, workspace="w")


def test_a_scrub_waits_for_older_snapshots_and_says_what_one_still_holds() -> None:
    url = database().log_url()
    with PgLog(url) as log, psycopg.connect(url.split("?", 1)[0], autocommit=True) as reader:
        log.append([StreamWrite("ada", [EntityCreated(workspace="w", name=SECRET, entity_type="p")])], actor="t")
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT 1")  # a snapshot from before the erasure, whatever it reads
        log.transact(lambda tx: tx.erase({"ada": "ada"}, redact))
        held = log.scrub(timeout=0.2)
        assert held.held > 0 and holding(url)  # the rewrite had to keep what that snapshot can see
        with log.read() as found:
            assert (found.erasures(), found.scrubbed_through()) == (1, 0)  # the next writable open scrubs again
        ended = threading.Timer(0.3, reader.execute, ("ROLLBACK",))
        ended.start()
        try:
            assert log.scrub().held == 0  # waited for the reader, then rewrote
        finally:
            ended.join()
        with log.read() as found:
            assert (found.erasures(), found.scrubbed_through()) == (1, 1)
    assert holding(url) == []


def test_a_scrub_beside_a_reader_of_the_log_gives_up_its_rewrite_rather_than_stall_every_reader() -> None:
    """VACUUM FULL waits for the lock of a table a transaction has read, and every later reader
    queues behind it: unbounded, one long report stalled the whole log until it ended."""
    url = database().log_url()
    schema = url.rsplit("schema=", 1)[1]
    with PgLog(url) as log, psycopg.connect(url.split("?", 1)[0], autocommit=True) as reader:
        log.append([StreamWrite("ada", [EntityCreated(workspace="w", name=SECRET, entity_type="p")])], actor="t")
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute(f"SELECT count(*) FROM {schema}.events")  # holds the table's lock to its end
        log.transact(lambda tx: tx.erase({"ada": "ada"}, redact))
        done: list[int] = []
        scrub = threading.Thread(target=lambda: done.append(log.scrub(timeout=0.3).held), daemon=True)
        scrub.start()
        scrub.join(timeout=60)
        finished = not scrub.is_alive()
        reader.execute("ROLLBACK")
        scrub.join()
        assert finished and done[0] > 0 and holding(url)  # nothing rewritten: all of it is held, and said so
        assert log.scrub().held == 0
    assert holding(url) == []
