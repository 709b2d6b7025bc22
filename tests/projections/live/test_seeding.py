"""A new cache of a PostgreSQL log starts from the seed another server kept, and agrees with the log;
a seed a cache may not trust (erased since, damaged, another layout or history) is passed over."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zstandard
from chronograph.application import Memory
from chronograph.projections import verify
from chronograph.projections.live import rebuilding, seeding
from freezegun import freeze_time
from support.postgres import database, server_bytes

psycopg = pytest.importorskip("psycopg")
from chronograph.eventstore.postgres.schema import FORMAT_VERSION  # noqa: E402 (the postgresql extra)


@pytest.fixture
def url() -> str:
    return database().log_url()


def fill(memory: Memory, start: int, count: int) -> None:
    people = [{"name": f"Person {i}", "entityType": "person", "observations": [f"note {i}", "likes tea"]}
              for i in range(start, start + count)]
    memory.write("create_entities", {"entities": people}, actor="a")
    memory.write("create_relations", {"relations": [
        {"from": f"Person {i}", "to": f"Person {i + 1}", "relationType": "knows"}
        for i in range(start, start + count - 1)]}, actor="a")


def story(memory: Memory) -> None:
    with freeze_time("2026-05-01T10:00:00Z") as clock:
        fill(memory, 0, 20)
        clock.tick(5)
        memory.write("rename_entity", {"name": "Person 3", "newName": "Persona"}, actor="a")
        memory.write("merge_entities", {"target": "Person 4", "sources": ["Person 5"]}, actor="a")
        memory.write("delete_observations", {"deletions": [{"entityName": "Person 6", "observations": ["likes tea"]}]},
                     actor="a")
        memory.write("update_context", {"activeTask": "seeding"}, actor="a")
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": [
            "hides at Quistmoor Hall"]}]}, actor="a")


def answers(memory: Memory, moment: int) -> list[Any]:
    return [msgspec.to_builtins(memory.read(tool, arguments)) for tool, arguments in (
        ("read_graph", {}), ("search_nodes", {"query": "tea"}), ("read_graph", {"asOf": moment}),
        ("get_entity_history", {"name": "Persona"}), ("read_context", {}), ("list_workspaces", {}))]


def forbid_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, a cache that would fold the whole log fails the test: it must start from a seed."""

    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the views were rebuilt from the log")

    monkeypatch.setattr(rebuilding, "rebuild", refuse)


def seed_rows(url: str) -> list[tuple[int, bytes]]:
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as connection:
        return [(int(part), bytes(data)) for part, data in connection.execute(
            f'SELECT part, data FROM "{schema}".seeds ORDER BY position, part').fetchall()]


def erased(url: str) -> bool:
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as connection:
        return connection.execute(f"SELECT count(*) FROM \"{schema}\".meta WHERE key = 'erasures'").fetchone()[0] > 0


def sql(url: str, statement: str, *arguments: Any) -> None:
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as connection:
        connection.execute(statement.replace("{schema}", f'"{schema}"'), arguments)


def test_a_new_cache_starts_from_the_seed_another_server_kept_and_folds_only_what_came_after(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory(url, cache=tmp_path / "a") as a:
        a.views.snapshots.spacing = 10
        story(a)
        moment = a.log.head() - 3
        a.read("read_graph", {"asOf": moment})  # a snapshot, kept in the cache and in the seed
        a.prepare_search()  # search images too
        assert a.keep_seed_now(spacing=0)
        seeded_at = a.log.head()
        fill(a, 100, 5)  # after the seed: folded by the new cache from the log
        a.write("forget_entity", {"name": "Ada", "reason": "asked"}, actor="a")  # erases the seed too
        assert seed_rows(url) == []
        assert a.keep_seed_now(spacing=0)
        fill(a, 200, 5)
        expected = answers(a, moment)
        assert a.checkpoint() > seeded_at
    forbid_rebuild(monkeypatch)
    with Memory(url, cache=tmp_path / "b") as b:
        assert verify(b.views) == []
        assert answers(b, moment) == expected
        assert b.read("search_nodes", {"query": "Person 202"}).entities  # folded after the seed
    for file in (tmp_path / "b").iterdir():
        assert b"Quistmoor" not in file.read_bytes()


def test_forgetting_deletes_every_seed_and_the_scrub_leaves_no_byte_of_them(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
        assert a.keep_seed_now(spacing=0)
        kept = seed_rows(url)
        assert len(kept) >= 2
        assert a.write("forget_entity", {"name": "Ada", "reason": "asked"}, actor="a").output.scrubbed
        assert seed_rows(url) == []
    stored = b"".join(server_bytes(url).values())
    for _, data in kept[1:]:
        middle = data[len(data) // 2: len(data) // 2 + 16]
        assert len(middle) == 16 and middle not in stored
    with Memory(url, cache=tmp_path / "b") as b:  # no seed: built from the log
        assert verify(b.views) == []
        assert b.read("search_nodes", {"query": "Quistmoor"}).entities == []


def test_a_seed_made_while_the_log_was_erased_is_not_kept(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        story(a)
        seeds = a.log.seeds

        forgetting = threading.Thread(target=b.write, args=("forget_entity", {"name": "Ada", "reason": "asked"}),
                                      kwargs={"actor": "b"})

        def parts() -> Any:  # the forget commits while the seed is sent (its scrub then waits for the seed)
            yield b"first"
            forgetting.start()
            for _ in range(3000):
                if erased(url):
                    break
                time.sleep(0.01)
            yield b"second"

        assert not seeds.keep(seeding.TAG, a.log.head(), 0, parts())
        forgetting.join(timeout=60)
        assert erased(url) and seed_rows(url) == []
        assert not a.keep_seed_now(spacing=0)  # its cache has not caught up with the erasure yet
        a.write("create_entities", {"entities": [{"name": "Eve", "entityType": "p", "observations": []}]}, actor="a")
        assert a.keep_seed_now(spacing=0)  # caught up and scrubbed
        assert seeds.newest(seeding.TAG) is not None


def test_a_seed_abandoned_halfway_leaves_nothing(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
        asked = []
        assert not a.views.keep_seed(0, stop=lambda: asked.append(1) or len(asked) > 1)
        assert asked and seed_rows(url) == []


def test_a_seed_is_kept_again_only_once_the_views_moved_far_enough_past_it(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        story(a)
        assert a.views.keep_seed(10)
        first = a.log.seeds.newest(seeding.TAG)
        assert not a.views.keep_seed(10)
        b.write("create_entities", {"entities": [{"name": f"E{i}", "entityType": "t", "observations": []}
                                                  for i in range(3)]}, actor="b")
        b.views.catch_up()
        assert not b.views.keep_seed(1000)  # another server's seed counts: it asks the log
        for i in range(12):
            b.write("create_entities", {"entities": [{"name": f"F{i}", "entityType": "t", "observations": []}]},
                    actor="b")
        assert b.views.keep_seed(10)
        newest = a.log.seeds.newest(seeding.TAG)
        assert first is not None and newest is not None and newest.position > first.position
        assert sum(1 for part, _ in seed_rows(url) if part == 0) == 1  # one header: one seed kept


@pytest.mark.parametrize("spoil", ["a damaged part", "a damaged header", "another history", "another layout"])
def test_a_seed_a_cache_may_not_trust_is_passed_over_and_the_views_are_built_from_the_log(
    tmp_path: Path, url: str, spoil: str
) -> None:
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
        assert a.keep_seed_now(spacing=0)
        expected = answers(a, a.log.head())
        seed = a.log.seeds.newest(seeding.TAG)
    assert seed is not None
    if spoil == "a damaged part":
        sql(url, "UPDATE {schema}.seeds SET data = overlay(data placing '\\xdeadbeef'::bytea from 20) "
            "WHERE part = %s", seed.parts)
    elif spoil == "a damaged header":
        sql(url, "UPDATE {schema}.seeds SET data = '\\x93a1780102'::bytea WHERE part = 0")
    elif spoil == "another history":
        header = msgspec.msgpack.encode(msgspec.structs.replace(seed, checksum=seed.checksum + 1))
        sql(url, "UPDATE {schema}.seeds SET data = %s WHERE part = 0", header)
    else:
        sql(url, "UPDATE {schema}.seeds SET tag = 'views.v0'")
    with Memory(url, cache=tmp_path / "b") as b:
        assert verify(b.views) == []
        assert answers(b, b.log.head() - 2)[:2] == expected[:2]


def test_a_log_without_a_seeds_table_gets_it_with_its_first_seed_and_this_version_s_format(
        tmp_path: Path, url: str) -> None:
    """(Format 1 had no seeds table; its first seed made it, and format 2. A log of format 1 or 2
    is now upgraded to format 3 when opened, which makes the table: here it was dropped after.)"""
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
    sql(url, "DROP TABLE {schema}.seeds")
    sql(url, "ALTER TABLE {schema}.meta DROP CONSTRAINT format_at_least_3")  # (what keeps a server of format 1 off)
    sql(url, "UPDATE {schema}.meta SET value = '\\x00000001'::bytea WHERE key = 'format'")
    with Memory(url, cache=tmp_path / "b") as b:
        assert b.log.seeds.newest(seeding.TAG) is None
        assert b.write("forget_entity", {"name": "Persona", "reason": "asked"}, actor="b").output.scrubbed
        assert b.keep_seed_now(spacing=0)
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as connection:
        assert bytes(connection.execute(f'SELECT value FROM "{schema}".meta WHERE key = %s',
                                        ("format",)).fetchone()[0]) == FORMAT_VERSION.to_bytes(4, "big")
    with Memory(url, cache=tmp_path / "c") as c:
        assert verify(c.views) == []


def test_a_cache_started_from_a_seed_made_before_an_erasure_it_missed_keeps_nothing_of_it(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The erasure deletes the seed, but a cache that began to load it just before would hold the
    erased entity: it learns of the erasure as a cache that was away does, at open."""
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
        assert a.keep_seed_now(spacing=0)
        seeds = a.log.seeds
        found = seeds.newest(seeding.TAG)
        rows = seed_rows(url)[1:]
        monkeypatch.setattr(type(seeds), "newest", lambda self, tag: found)
        monkeypatch.setattr(type(seeds), "parts", lambda self, seed: iter(data for _, data in rows))
        a.write("forget_entity", {"name": "Ada", "reason": "asked"}, actor="a")
    forbid_rebuild(monkeypatch)
    with Memory(url, cache=tmp_path / "b") as b:
        assert b.read("search_nodes", {"query": "Quistmoor"}).entities == []
        assert verify(b.views) == []
    for file in (tmp_path / "b").iterdir():
        assert b"Quistmoor" not in file.read_bytes()


def test_a_new_cache_that_folded_the_log_just_before_an_erasure_catches_up_with_it_before_it_keeps_a_seed(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its views were folded at the erasure count before; the count it records is theirs, not the
    log's after the erasure, so it folds the erasure at open, scrubs, and keeps a seed of that."""
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
        real = rebuilding.rebuild

        def rebuild_then_forget(*args: Any, **kwargs: Any) -> Any:
            report = real(*args, **kwargs)
            a.write("forget_entity", {"name": "Ada", "reason": "asked"}, actor="a")
            return report

        monkeypatch.setattr(rebuilding, "rebuild", rebuild_then_forget)
        with Memory(url, cache=tmp_path / "b") as b:
            monkeypatch.setattr(rebuilding, "rebuild", real)
            assert b.read("search_nodes", {"query": "Quistmoor"}).entities == []
            assert b.keep_seed_now(spacing=0)
    decompress = zstandard.ZstdDecompressor().decompress
    assert all(b"Quistmoor" not in decompress(data) for part, data in seed_rows(url) if part)
    for file in (tmp_path / "b").iterdir():
        assert b"Quistmoor" not in file.read_bytes()


def test_a_role_not_granted_the_seeds_starts_without_them_and_may_not_forget_what_they_hold(
    tmp_path: Path, url: str
) -> None:
    schema, role = url.rsplit("schema=", 1)[1], f"chronograph_seedless_{uuid.uuid4().hex[:8]}"
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
        assert a.keep_seed_now(spacing=0)
    sql(url, f"CREATE ROLE {role} LOGIN")
    try:
        sql(url, f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        for table in ("events", "heads", "idempotency", "meta"):
            sql(url, f'GRANT SELECT, INSERT, UPDATE, DELETE ON "{schema}".{table} TO {role}')
        limited = url.replace("postgres@", f"{role}@", 1)
        with Memory(limited, cache=tmp_path / "b") as b:  # folds the log: it may not read the seed
            assert verify(b.views) == []
            with pytest.raises(Exception, match="may not delete the seeds.*grant it DELETE"):
                b.write("forget_entity", {"name": "Ada", "reason": "asked"}, actor="b")
            assert b.read("search_nodes", {"query": "Quistmoor"}).entities  # nothing was erased
    finally:
        sql(url, f'DROP OWNED BY {role}')
        sql(url, f"DROP ROLE {role}")


def an_older_version_forgets(url: str) -> None:
    """As a version made before seeds erases: the log's erasure count moves, and no seed is deleted."""
    sql(url, "INSERT INTO {schema}.meta (key, value) VALUES ('erasures', %s) ON CONFLICT (key) DO UPDATE SET "
        "value = EXCLUDED.value", (1).to_bytes(8, "big"))


def test_a_seed_an_older_version_s_erasure_left_is_deleted_by_the_cache_that_passes_it_over(
    tmp_path: Path, url: str
) -> None:
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
        assert a.keep_seed_now(spacing=0)
    an_older_version_forgets(url)
    with Memory(url, cache=tmp_path / "b") as b:  # built from the log: the seed may hold what was erased
        assert verify(b.views) == []
    assert seed_rows(url) == []  # before: kept for good, passed over by every new cache


def test_a_scrub_deletes_the_seeds_an_older_version_s_erasure_left(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as a:
        story(a)
        assert a.keep_seed_now(spacing=0)
        fill(a, 100, 2)
        assert a.keep_seed_now(spacing=0)  # a newer one of this layout: the older goes
        sql(url, "INSERT INTO {schema}.seeds (tag, position, part, data) SELECT 'views.v0', position, part, data "
            "FROM {schema}.seeds")  # and one of another version's layout, which no cache of this one reads
        kept = seed_rows(url)
        an_older_version_forgets(url)
        with a.lock:
            assert not a.scrub().held
    assert seed_rows(url) == []  # before: every row of both
    stored = b"".join(server_bytes(url).values())
    for _, data in kept[1:]:
        middle = data[len(data) // 2: len(data) // 2 + 16]
        assert len(middle) == 16 and middle not in stored
