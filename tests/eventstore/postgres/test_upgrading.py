"""A log an earlier version made (format 2: streams indexed by their text) is upgraded in place
once, by the first server that may write, and reads, writes and erases as a new one does;
an earlier version's statements on the upgraded log read as before and write nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from chronograph.eventstore import (
    NO_STREAM,
    ContentErased,
    EntityCreated,
    ObservationsAdded,
    StoreOpenError,
    StreamWrite,
)
from support.postgres import database

psycopg = pytest.importorskip("psycopg")
pglog = pytest.importorskip("chronograph.eventstore.postgres.log")
from chronograph.eventstore.postgres.schema import FORMAT_VERSION, stream_key  # noqa: E402

FORMAT_2 = (  # the tables as format 2 made them (eventstore/postgres/schema.py before format 3)
    'CREATE SCHEMA "{s}"',
    'CREATE TABLE "{s}".events (position bigint PRIMARY KEY, stream text NOT NULL, version bigint NOT NULL, '
    "recorded_at bigint NOT NULL, checksum bigint NOT NULL, envelope bytea NOT NULL, UNIQUE (stream, version))",
    'CREATE INDEX events_by_time ON "{s}".events (recorded_at, position)',
    'CREATE TABLE "{s}".heads (stream text PRIMARY KEY, version bigint NOT NULL)',
    'CREATE TABLE "{s}".idempotency (key bytea PRIMARY KEY, record bytea NOT NULL)',
    'CREATE TABLE "{s}".meta (key text PRIMARY KEY, value bytea NOT NULL)',
    'CREATE UNLOGGED TABLE "{s}".seeds (tag text NOT NULL, position bigint NOT NULL, part integer NOT NULL, '
    "data bytea NOT NULL, PRIMARY KEY (tag, position, part))",
    'ALTER TABLE "{s}".seeds ALTER COLUMN data SET STORAGE EXTERNAL, ALTER COLUMN data SET STATISTICS 0',
    'ALTER TABLE "{s}".events ALTER COLUMN stream SET STATISTICS 0, ALTER COLUMN envelope SET STATISTICS 0',
    'ALTER TABLE "{s}".heads ALTER COLUMN stream SET STATISTICS 0',
    'ALTER TABLE "{s}".idempotency ALTER COLUMN key SET STATISTICS 0, ALTER COLUMN record SET STATISTICS 0',
    'ALTER TABLE "{s}".meta ALTER COLUMN key SET STATISTICS 0, ALTER COLUMN value SET STATISTICS 0',
)

STREAMS = (
    "entity-0196a1b2c3d4e5f60718293a4b5c6d",  # an entity's: keyed by its own 15 bytes
    "entity-0196A1B2C3D4E5F60718293A4B5C6D",  # not an entity's (capitals): by its digest
    "relation\x1fdefault\x1fAda\x1fBob\x1fknows",
    "relation\x1fdefault\x1f艾达 🐍\x1fBöb\x1f認識",  # three- and four-byte UTF-8
)


def admin(url: str) -> Any:
    return psycopg.connect(url.split("?", 1)[0], autocommit=True)


@contextmanager
def holding(url: str, statement: str, name: str = "") -> Iterator[None]:
    """A transaction of another connection that ran `statement` and holds what it took until the block ends."""
    with admin(url) as holder:
        if name:
            holder.execute(f"SET application_name = '{name}'")
        holder.execute("SET idle_in_transaction_session_timeout = '3s'")  # (else a wait without end would hang)
        holder.execute("BEGIN")
        holder.execute(statement)
        yield
        holder.execute("COMMIT")


def first(stream: str) -> list[StreamWrite]:
    return [StreamWrite(stream, [EntityCreated(workspace="w", name=stream[-3:], entity_type="t"),
                                 ObservationsAdded(observations=("born 1815",))])]


def old_log(url: str) -> str:
    """A format 2 log at `url`, holding what this version appended to a log of its own (its rows
    copied over): two events a stream of `STREAMS`, and an idempotency record."""
    source = database().log_url()
    with pglog.PgLog(source) as made:
        for stream in STREAMS:
            made.append(first(stream), actor="t", idempotency_key=f"call {stream}")
    old, new = url.rsplit("schema=", 1)[1], source.rsplit("schema=", 1)[1]
    with admin(url) as connection:
        for statement in FORMAT_2:
            connection.execute(statement.format(s=old))
        connection.execute(f'INSERT INTO "{old}".events SELECT position, stream, version, recorded_at, checksum, '
                           f'envelope FROM "{new}".events')
        connection.execute(f'INSERT INTO "{old}".heads SELECT stream, version FROM "{new}".heads')
        connection.execute(f'INSERT INTO "{old}".idempotency SELECT * FROM "{new}".idempotency')
        connection.execute(f'INSERT INTO "{old}".meta SELECT key, CASE key WHEN \'format\' THEN '
                           f"'\\x00000002'::bytea ELSE value END FROM \"{new}\".meta")
    return old


def layout_before(url: str, schema: str) -> tuple[int, list[str]]:
    """(the log's format, its tables' constraints' definitions)."""
    with admin(url) as connection:
        value = connection.execute(f'SELECT value FROM "{schema}".meta WHERE key = \'format\'').fetchone()[0]
        constraints = [row[0] for row in connection.execute(
            "SELECT c.conrelid::regclass::text || ' ' || pg_get_constraintdef(c.oid) FROM pg_constraint c "
            "JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = %s AND c.conrelid::regclass::text "
            "LIKE '%%.events' OR n.nspname = %s AND c.conrelid::regclass::text LIKE '%%.heads' ORDER BY 1",
            (schema, schema)).fetchall()]
    return int.from_bytes(value, "big"), constraints


def layout(url: str, schema: str) -> tuple[int, list[str], list[tuple[str, bytes]]]:
    """(the log's format, its tables' constraints' definitions, (stream, key) of each event)."""
    with admin(url) as connection:
        keys = [(stream, bytes(key)) for stream, key in connection.execute(
            f'SELECT stream, stream_key FROM "{schema}".events ORDER BY position').fetchall()]
    return (*layout_before(url, schema), keys)


def test_a_format_two_log_is_upgraded_at_open_and_reads_writes_and_erases_as_a_new_one() -> None:
    url = database().log_url()
    schema = old_log(url)
    with pglog.PgLog(url) as log:
        with log.read() as reader:
            assert [e.version for e in reader.stream(STREAMS[3])] == [1, 2]
            assert [reader.stream_version(s) for s in STREAMS] == [2, 2, 2, 2]
            assert list(reader.index_problems()) == [] and list(reader.verify()) == []
        assert log.append(first(STREAMS[0]), actor="t", idempotency_key=f"call {STREAMS[0]}").replayed  # (kept)
        long = "relation\x1fdefault\x1f" + "".join(chr(0x4E00 + (k * 7919) % 20000) for k in range(1200))
        log.append([StreamWrite(long, [EntityCreated(workspace="w", name="x", entity_type="t")], NO_STREAM),
                    StreamWrite(STREAMS[2], [ObservationsAdded(observations=("y",))], 2)], actor="t")
        log.transact(lambda tx: tx.erase({STREAMS[3]: "erased:1"},
                                         lambda e: ContentErased(erased=e.type, workspace="w")))
        with log.read() as reader:
            assert reader.stream_version(STREAMS[3]) == 0 and reader.stream_version("erased:1") == 2
            assert [e.version for e in reader.stream(long)] == [1] and reader.stream_version(STREAMS[2]) == 3
            assert list(reader.index_problems()) == []
    version, constraints, keys = layout(url, schema)
    assert version == FORMAT_VERSION == 3
    assert constraints == [f"{schema}.events PRIMARY KEY (\"position\")",
                           f"{schema}.events UNIQUE (stream_key, version)", f"{schema}.heads PRIMARY KEY (stream_key)"]
    assert [key for _, key in keys] == [stream_key(stream) for stream, _ in keys]  # SQL's keys are Python's
    assert len(stream_key(STREAMS[0])) == 15 and len(stream_key(STREAMS[1])) == 32


def test_two_processes_opening_one_format_two_log_at_once_upgrade_it_once_and_both_open_it() -> None:
    script = ("import sys; from chronograph.eventstore.postgres.log import PgLog; log = PgLog(sys.argv[1]); "
              "print(log.head()); log.close()")
    for _ in range(3):
        url = database().log_url()
        schema = old_log(url)
        processes = [subprocess.Popen([sys.executable, "-c", script, url], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [p.communicate(timeout=60) for p in processes]
        assert [(p.returncode, out.strip()) for p, (out, _) in zip(processes, outputs, strict=True)] == [
            (0, "8"), (0, "8")], [err for _, err in outputs]
        version, constraints, keys = layout(url, schema)
        assert version == 3 and len(constraints) == 3 and len(keys) == 8


def test_a_format_two_log_opened_read_only_is_refused_and_left_as_it_was() -> None:
    url = database().log_url()
    schema = old_log(url)
    with pytest.raises(StoreOpenError, match=r"earlier Chronograph \(log format 2\).*First back it up.*pg_dump.*"
                                             "stop every server.*open it once read-write"):
        pglog.PgLog(url, readonly=True)
    with admin(url) as connection:
        assert connection.execute("SELECT count(*) FROM information_schema.columns WHERE table_schema = %s "
                                  "AND column_name = 'stream_key'", (schema,)).fetchone()[0] == 0


def test_an_earlier_version_s_statements_on_an_upgraded_log_read_as_before_and_write_nothing() -> None:
    """What a server of format 2 still running beside the upgrade sends (eventstore/postgres before it)."""
    url = database().log_url()
    schema = old_log(url)
    pglog.PgLog(url).close()
    append = (f'WITH appended AS (INSERT INTO "{schema}".events (position, stream, version, recorded_at, checksum, '
              "envelope) SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[], "
              f'%s::bytea[])) INSERT INTO "{schema}".heads (stream, version) SELECT * FROM unnest(%s::text[], '
              "%s::bigint[]) ON CONFLICT (stream) DO UPDATE SET version = EXCLUDED.version")
    with admin(url) as connection:
        assert connection.execute(f'SELECT version FROM "{schema}".heads WHERE stream = %s',
                                  (STREAMS[2],)).fetchone() == (2,)
        assert len(connection.execute(f'SELECT position, envelope, checksum FROM "{schema}".events WHERE stream = %s '
                                      "AND version >= 1 ORDER BY version", (STREAMS[2],)).fetchall()) == 2
        with pytest.raises(psycopg.errors.InvalidColumnReference):
            connection.execute(append, ([9], ["s"], [1], [1], [1], [b"x"], ["s"], [1]))
        with pytest.raises(psycopg.errors.NotNullViolation), connection.cursor() as cursor, cursor.copy(
                f'COPY "{schema}".events (position, stream, version, recorded_at, checksum, envelope) '
                "FROM STDIN") as copy:
            copy.write_row((9, "s", 1, 1, 1, b"x"))
        with pytest.raises(psycopg.errors.NotNullViolation):
            connection.execute(f'INSERT INTO "{schema}".heads (stream, version) VALUES (%s, %s)', ("erased:9", 1))
        assert connection.execute(f'SELECT count(*) FROM "{schema}".events').fetchone() == (8,)


def test_an_upgrade_that_fails_part_way_leaves_the_log_as_it_was_and_the_next_open_upgrades_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from chronograph.eventstore import EventStoreError
    from chronograph.eventstore.postgres import upgrading

    url = database().log_url()
    schema = old_log(url)
    monkeypatch.setattr(upgrading, "UPGRADE", (*upgrading.UPGRADE[:3], "SELECT 1 / 0", *upgrading.UPGRADE[3:]))
    with pytest.raises(EventStoreError, match="upgrading the log at .* to format 3 failed .*division by zero"):
        pglog.PgLog(url)
    with admin(url) as connection:
        assert connection.execute("SELECT count(*) FROM information_schema.columns WHERE table_schema = %s "
                                  "AND column_name = 'stream_key'", (schema,)).fetchone()[0] == 0
    assert layout_before(url, schema) == (2, [f"{schema}.events PRIMARY KEY (\"position\")",
                                              f"{schema}.events UNIQUE (stream, version)",
                                              f"{schema}.heads PRIMARY KEY (stream)"])
    monkeypatch.undo()
    with pglog.PgLog(url) as log, log.read() as reader:
        assert [reader.stream_version(s) for s in STREAMS] == [2, 2, 2, 2]
    assert layout(url, schema)[0] == 3


def test_a_role_that_does_not_own_an_old_log_s_tables_is_told_who_may_upgrade_it_and_nothing_changes() -> None:
    import uuid

    url = database().log_url()
    schema, role = old_log(url), f"chronograph_upgrade_{uuid.uuid4().hex[:8]}"
    with admin(url) as connection:
        connection.execute(f"CREATE ROLE {role} LOGIN")
        try:
            connection.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
            for table in ("events", "heads", "idempotency", "meta", "seeds"):
                connection.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON "{schema}".{table} TO {role}')
            with pytest.raises(StoreOpenError, match="made by an earlier Chronograph.*may not.*owner of table.*"
                                                     "nothing was changed. Open it once as the role that owns"):
                pglog.PgLog(url.replace("postgres@", f"{role}@", 1))
        finally:
            connection.execute(f"DROP OWNED BY {role}")
            connection.execute(f"DROP ROLE {role}")
    assert layout_before(url, schema)[0] == 2


def test_a_reader_whose_snapshot_was_taken_before_the_upgrade_still_sees_every_row_after_it() -> None:
    """As a server of an earlier version reads: its snapshot first, by a statement that touches no
    table, then the tables (a table rewrite would show them empty to it)."""
    url = database().log_url()
    schema = old_log(url)
    with psycopg.connect(url.split("?", 1)[0]) as reader:
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT 1")
        pglog.PgLog(url).close()
        assert layout_before(url, schema)[0] == 3
        assert reader.execute(f'SELECT count(*) FROM "{schema}".events').fetchone() == (8,)
        assert reader.execute(f'SELECT count(*) FROM "{schema}".heads').fetchone() == (4,)
        assert reader.execute(f'SELECT version FROM "{schema}".events WHERE stream = %s AND version >= 1 '
                              "ORDER BY version", (STREAMS[3],)).fetchall() == [(1,), (2,)]
        assert reader.execute(f'SELECT value FROM "{schema}".meta WHERE key = \'format\'').fetchone() == (
            b"\x00\x00\x00\x02",)


def test_an_upgrade_passes_a_statement_timeout_set_for_queries() -> None:
    from chronograph.eventstore.postgres import upgrading

    url = database().log_url()
    schema = old_log(url)
    slow = (*upgrading.UPGRADE[:3], "SELECT pg_sleep(0.3)", *upgrading.UPGRADE[3:])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(upgrading, "UPGRADE", slow)
        pglog.PgLog(url + "&options=-c%20statement_timeout%3D150").close()
    assert layout_before(url, schema)[0] == 3


def test_an_upgrade_that_a_long_reader_keeps_from_the_tables_is_refused_in_time_and_changes_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from chronograph.eventstore import StoreBusyError
    from chronograph.eventstore.postgres import upgrading

    url = database().log_url()
    schema = old_log(url)
    monkeypatch.setattr(upgrading, "TABLE_WAIT", 0.2)
    with holding(url, f'SELECT count(*) FROM "{schema}".heads'):
        with pytest.raises(StoreBusyError, match=r"upgrading the log at .* to format 3 takes its tables alone.*"
                                                  r"past 0.2 s.*long reader.*nothing was changed: retry"):
            pglog.PgLog(url)
    assert layout_before(url, schema)[0] == 2
    pglog.PgLog(url).close()
    assert layout_before(url, schema)[0] == 3


def test_an_earlier_server_still_running_cannot_mark_an_upgraded_log_format_two() -> None:
    """What a server of format 1 sends when it keeps its first seed (eventstore/postgres/seeds.py before format 3)."""
    url = database().log_url()
    schema = old_log(url)
    pglog.PgLog(url).close()
    with admin(url) as connection:
        with pytest.raises(psycopg.errors.CheckViolation):
            connection.execute(f'UPDATE "{schema}".meta SET value = %s WHERE key = \'format\'',
                               ((2).to_bytes(4, "big"),))
        assert layout_before(url, schema)[0] == 3


def test_an_upgrade_that_a_writer_keeps_from_the_log_s_lock_is_refused_in_time_naming_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from chronograph.eventstore import StoreBusyError
    from chronograph.eventstore.postgres import upgrading
    from chronograph.eventstore.postgres.schema import Schema

    url = database().log_url()
    schema = old_log(url)
    monkeypatch.setattr(upgrading, "LOCK_WAIT", 0.2)
    with holding(url, f"SELECT pg_advisory_xact_lock({Schema(schema).lock})", name="a long erasure"):
        with pytest.raises(StoreBusyError, match=r"upgrading the log at .* to format 3 waited 0.2 s for the log's "
                                                  r"lock, held by .*'a long erasure'.*nothing was changed: retry"):
            pglog.PgLog(url)
    assert layout_before(url, schema)[0] == 2
