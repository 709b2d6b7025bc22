"""The planner's statistics never keep what the log says: no sample of a content column is
collected, and what an earlier version let ANALYZE collect is gone, with its dead copies, once
the log is opened and forgets."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.tools.cli import main as cli
from support.postgres import database, server_bytes

psycopg = pytest.importorskip("psycopg")

SECRET, SAID = "Hesper Vantongeren-Ruiz", "sleeps at Blackwattle Quay"
CONTENT = {"events": ("stream", "envelope"), "heads": ("stream",), "idempotency": ("key", "record"),
           "meta": ("key", "value")}


def admin(url: str, *statements: str) -> list[tuple[object, ...]]:
    """Run `statements` on the log's database as the tests' superuser; the last one's rows."""
    rows: list[tuple[object, ...]] = []
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as connection:
        for statement in statements:
            cursor = connection.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
    return rows


def schema_of(url: str) -> str:
    return url.rsplit("schema=", 1)[1]


def analysed(url: str) -> list[tuple[object, ...]]:
    """ANALYZE the log's tables as autovacuum would; the (table, column) pg_stats then has."""
    schema = schema_of(url)
    return admin(url, *(f"ANALYZE {schema}.{table}" for table in CONTENT),
                 f"SELECT tablename::text, attname::text FROM pg_stats WHERE schemaname = '{schema}' ORDER BY 1, 2")


def holding(url: str, *texts: str) -> list[str]:
    return sorted({name for name, data in server_bytes(url).items() for text in texts if text.encode() in data})


def seed(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [
        {"name": SECRET, "entityType": "person", "observations": [SAID]},
        {"name": "Bob", "entityType": "person", "observations": ["plays chess"]}]}, actor="t")
    memory.write("create_relations", {"relations": [{"from": "Bob", "to": SECRET, "relationType": "visits"}],
                                      "requestId": "r1"}, actor="t")


def test_no_sample_of_what_the_log_says_reaches_the_planner_s_statistics(tmp_path: Path) -> None:
    url = database().log_url()
    with Memory(url, cache=tmp_path / "cache") as memory:
        seed(memory)
    stats = analysed(url)
    assert ("events", "position") in stats  # the planner still has what it uses
    assert not [(table, column) for table, column in stats if column in CONTENT.get(str(table), ())]
    found = holding(url, SAID, SECRET)
    assert f"{schema_of(url)}.events" in found  # the live rows (and indexes of names), and nothing outside the log
    assert [name for name in found if not name.startswith(f"{schema_of(url)}.")] == []


def test_what_an_earlier_version_let_analyze_collect_is_gone_after_a_forget(tmp_path: Path) -> None:
    url = database().log_url()
    with Memory(url, cache=tmp_path / "cache") as memory:
        seed(memory)
    schema = schema_of(url)
    admin(url, *(f"ALTER TABLE {schema}.{table} ALTER COLUMN {column} SET STATISTICS -1"  # as versions before did
                 for table, columns in CONTENT.items() for column in columns))
    assert ("events", "envelope") in analysed(url)  # autovacuum analysed the log
    assert "pg_statistic" in holding(url, SAID)
    with Memory(url, cache=tmp_path / "cache") as memory:
        out = memory.write("forget_entity", {"name": SECRET, "reason": "asked"}, actor="t").output
        assert out.scrubbed, out.message
    assert holding(url, SAID, SECRET, "Blackwattle", "Vantongeren") == []
    assert not [(t, c) for t, c in analysed(url) if c in CONTENT.get(str(t), ())]
    assert holding(url, SAID, SECRET, "Blackwattle", "Vantongeren") == []


def test_a_role_that_may_not_rewrite_the_catalog_is_told_who_can_and_scrub_finishes_later(tmp_path: Path) -> None:
    superuser_url = database().log_url()
    schema, role = schema_of(superuser_url), f"chronograph_plain_{uuid.uuid4().hex[:8]}"
    admin(superuser_url, f"CREATE ROLE {role} LOGIN", f"GRANT CREATE ON DATABASE \"{database().name}\" TO {role}")
    url = superuser_url.replace("postgres@", f"{role}@", 1)
    try:
        with Memory(url, cache=tmp_path / "cache") as memory:
            seed(memory)
        admin(url, *(f"ALTER TABLE {schema}.{table} ALTER COLUMN {column} SET STATISTICS -1"
                     for table, columns in CONTENT.items() for column in columns))
        analysed(url)
        with Memory(url, cache=tmp_path / "cache") as memory:
            out = memory.write("forget_entity", {"name": SECRET, "reason": "asked"}, actor="t").output
        assert not out.scrubbed and "VACUUM FULL pg_catalog.pg_statistic" in out.message
        assert cli(["scrub", "--store", url, "--cache", str(tmp_path / "cache")]) == 1
        admin(superuser_url, "VACUUM FULL pg_catalog.pg_statistic")  # a superuser does as told
        assert cli(["scrub", "--store", url, "--cache", str(tmp_path / "cache")]) == 0
        assert holding(superuser_url, SAID, SECRET) == []
    finally:
        admin(superuser_url, f"DROP SCHEMA IF EXISTS {schema} CASCADE", f"DROP OWNED BY {role}", f"DROP ROLE {role}")


def test_samples_a_snapshot_kept_through_the_first_open_s_rewrite_are_gone_after_a_forget(tmp_path: Path) -> None:
    url = database().log_url()
    with Memory(url, cache=tmp_path / "cache") as memory:
        seed(memory)
    schema = schema_of(url)
    admin(url, *(f"ALTER TABLE {schema}.{table} ALTER COLUMN {column} SET STATISTICS -1"
                 for table, columns in CONTENT.items() for column in columns))
    analysed(url)
    with psycopg.connect(url.split("?", 1)[0]) as holder:  # a report, autovacuum: a snapshot older than the seal
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM pg_class").fetchone()
        with Memory(url, cache=tmp_path / "cache"):
            pass  # the first open seals, and its rewrite of pg_statistic must keep what the snapshot may see
        assert "pg_statistic" in holding(url, SAID)
        holder.rollback()
    with Memory(url, cache=tmp_path / "cache") as memory:
        out = memory.write("forget_entity", {"name": SECRET, "reason": "asked"}, actor="t").output
        assert out.scrubbed, out.message
    assert holding(url, SAID, SECRET, "Blackwattle", "Vantongeren") == []
