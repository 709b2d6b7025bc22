"""The PostgreSQL server the tests use: a fresh database per test run, a fresh schema per log.

`CHRONOGRAPH_TEST_POSTGRES` names the server (default: postgresql://postgres@127.0.0.1:5432,
trust auth, as on the development machines); the run creates its own database there and
drops it at the end. Where no server answers, the tests that need one are skipped with a
message saying so; with `CHRONOGRAPH_TEST_POSTGRES_REQUIRED=1` (as CI sets it) they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

SERVER = os.environ.get("CHRONOGRAPH_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
REQUIRED = os.environ.get("CHRONOGRAPH_TEST_POSTGRES_REQUIRED") == "1"


def unavailable(reason: str) -> None:
    """Skip (or, where PostgreSQL is required, fail) the test that needs the server."""
    message = f"PostgreSQL is not reachable at {SERVER} ({reason}); set CHRONOGRAPH_TEST_POSTGRES to test that backend"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


class Database:
    """A database of this test run, and fresh schemas (each one a log) in it."""

    def __init__(self) -> None:
        self.name = f"chronograph_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.url = f"{SERVER}/{self.name}"
        self.problem: str | None = None
        try:
            import psycopg  # noqa: PLC0415 (the postgresql extra)

            with psycopg.connect(f"{SERVER}/postgres", autocommit=True, connect_timeout=3) as admin:
                admin.execute(f'CREATE DATABASE "{self.name}"')
        except Exception as error:  # noqa: BLE001 (any reason the server cannot be used)
            self.problem = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__

    def log_url(self) -> str:
        """The URL of a new, empty log (its own schema) in this run's database."""
        if self.problem is not None:
            unavailable(self.problem)
        return f"{self.url}?schema=log_{uuid.uuid4().hex[:12]}"

    def drop(self) -> None:
        if self.problem is None:
            import psycopg  # noqa: PLC0415

            with psycopg.connect(f"{SERVER}/postgres", autocommit=True, connect_timeout=3) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


_database: Database | None = None


def database() -> Database:
    """This test run's database, created at first use."""
    global _database
    if _database is None:
        _database = Database()
    return _database


def drop_database() -> Iterator[None]:
    """Drop this run's database at the end of the session (a session fixture's body)."""
    yield
    if _database is not None:
        _database.drop()


def _schema(url: str) -> str:
    return dict(part.split("=", 1) for part in url.split("?", 1)[1].split("&"))["schema"]


def analyse(url: str) -> None:
    """ANALYZE every table of the log at `url`, as autovacuum does once a table changed enough."""
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url.split("?", 1)[0], autocommit=True, connect_timeout=3) as connection:
        for table in ("events", "heads", "idempotency", "meta"):
            connection.execute(f'ANALYZE "{_schema(url)}".{table}')


def server_bytes(url: str) -> dict[str, bytes]:
    """What the server keeps on disk of the log at `url`, by relation: every table, index and
    TOAST table of its schema, and `pg_statistic` (the planner's samples) with its TOAST table
    and index, read from their files after a checkpoint (superuser only: pg_read_binary_file).
    Dead row versions are in these bytes; values large enough for PostgreSQL to compress are
    not readable in them, which is why the tests keep their logs small."""
    import psycopg  # noqa: PLC0415

    schema = _schema(url)
    with psycopg.connect(url.split("?", 1)[0], autocommit=True, connect_timeout=3) as connection:
        connection.execute("CHECKPOINT")
        rows = connection.execute(
            "WITH ours AS (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "  WHERE n.nspname = %s OR c.oid = 'pg_catalog.pg_statistic'::regclass), "
            "toasts AS (SELECT reltoastrelid AS oid FROM pg_class WHERE oid IN (SELECT oid FROM ours) "
            "  AND reltoastrelid <> 0), "
            "tables AS (SELECT oid FROM ours UNION SELECT oid FROM toasts) "
            "SELECT c.oid::regclass::text, pg_read_binary_file(pg_relation_filepath(c.oid)) FROM pg_class c "
            "WHERE (c.oid IN (SELECT oid FROM tables) OR c.oid IN (SELECT indexrelid FROM pg_index "
            "  WHERE indrelid IN (SELECT oid FROM tables))) AND pg_relation_filepath(c.oid) IS NOT NULL",
            (schema,)).fetchall()
    return {name: bytes(data) for name, data in rows}
