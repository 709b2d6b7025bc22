"""A scrub of a PostgreSQL log under a `statement_timeout` meant for queries: its table rewrites
run whatever the timeout, and a statement of it the timeout still cancels says which setting
did, where it is set and how to lift it."""

from __future__ import annotations

import pytest
from chronograph.eventstore import ContentErased, EntityCreated, Envelope, StoreRefusedError, StreamWrite
from support.postgres import database

psycopg = pytest.importorskip("psycopg")
from chronograph.eventstore.postgres.log import PgLog  # noqa: E402 (needs the driver)

EVENTS = 20_000
"""Enough that rewriting the events table takes a few hundred milliseconds."""


def timeout(url: str, milliseconds: int) -> str:
    return f"{url}&options=-c%20statement_timeout%3D{milliseconds}"


def redact(envelope: Envelope) -> ContentErased:
    return ContentErased(erased=envelope.type, workspace="w")


def test_a_scrub_rewrites_tables_that_take_longer_than_the_statement_timeout_its_url_sets() -> None:
    url = database().log_url()
    with PgLog(url) as log:
        for chunk in range(EVENTS // 1000):
            log.append([StreamWrite(f"e{chunk}-{i}", [EntityCreated(workspace="w", name=f"{chunk} {i} " + "x" * 200,
                                                                    entity_type="p")]) for i in range(1000)], actor="t")
        log.transact(lambda tx: tx.erase({"e0-0": "e0-0"}, redact))
    with PgLog(timeout(url, 50)) as log:  # a query's statements take well under 1 ms; the rewrite, hundreds
        done = log.scrub()
        assert done.held == 0
        with log.read() as reader:
            assert (reader.erasures(), reader.scrubbed_through()) == (1, 1)
            assert reader.connection.execute("SHOW statement_timeout").fetchone()[0] == "50ms"  # set back after


def test_a_scrub_a_statement_timeout_still_cancels_says_which_setting_did_and_how_to_lift_it() -> None:
    url = database().log_url()
    schema = url.rsplit("schema=", 1)[1]
    with PgLog(url) as log:
        log.append([StreamWrite("ada", [EntityCreated(workspace="w", name="Ada", entity_type="p")])], actor="t")
        log.transact(lambda tx: tx.erase({"ada": "ada"}, redact))
        lock = log.schema.lock
    with PgLog(timeout(url, 300)) as log, psycopg.connect(url.split("?", 1)[0], autocommit=True) as writer:
        writer.execute(f"ALTER TABLE {schema}.events ALTER COLUMN envelope SET STATISTICS -1")  # as versions before
        writer.execute("BEGIN")
        writer.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))  # a writer holds the log's lock meanwhile
        with pytest.raises(StoreRefusedError) as refused:
            log.scrub()
        writer.execute("ROLLBACK")
        said = str(refused.value)
        assert "statement_timeout of 300 ms" in said and "URL" in said and "statement_timeout%3D0" in said, said
        assert log.scrub().held == 0  # once the writer let go
