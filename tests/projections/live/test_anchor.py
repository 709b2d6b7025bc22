"""A cache whose PostgreSQL log went back under it (restored from an older backup, failed over to a
replica that missed commits) notices it, at open, at a call, at a write and in its follower, and
answers the log as it stands; an erasure, which rewrites events, is not taken for one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.projections.live import anchor
from support.postgres import database

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def url() -> str:
    return database().log_url()


def _schema(url: str) -> str:
    return url.rsplit("schema=", 1)[1]


def cut_back(url: str, keep: int) -> None:
    """The log as a replica that missed every commit after position `keep` holds it."""
    schema = _schema(url)
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as connection:
        connection.execute(f'DELETE FROM "{schema}".events WHERE position > %s', (keep,))
        connection.execute(f'DELETE FROM "{schema}".heads')
        connection.execute(f'INSERT INTO "{schema}".heads (stream, version, stream_key) SELECT stream, max(version), '
                           f'stream_key FROM "{schema}".events GROUP BY stream, stream_key')


def written_over(url: str, cache: Path, *names: str) -> None:
    """The log cut back to its first event, then `names` written on it by another server (its cache at `cache`)."""
    cut_back(url, 1)
    with Memory(url, cache=cache) as other:
        create(other, *names)


def create(memory: Memory, *names: str) -> None:
    for name in names:
        memory.write("create_entities", {"entities": [{"name": name, "entityType": "p", "observations": []}]},
                     actor="t")


def names(memory: Memory, **arguments: Any) -> list[str]:
    return sorted(e.name for e in memory.read("read_graph", arguments).entities)


def test_a_cache_reopened_on_a_log_that_lost_its_last_events_answers_the_log_and_takes_writes(
        tmp_path: Path, url: str, caplog: pytest.LogCaptureFixture) -> None:
    with Memory(url, cache=tmp_path / "cache") as memory:
        create(memory, "Ada", "Bob", "Cy", "Dee")
    cut_back(url, 2)
    with caplog.at_level(logging.WARNING, "chronograph.views"), Memory(url, cache=tmp_path / "cache") as memory:
        assert names(memory) == ["Ada", "Bob"]  # before: all four, and every write an AssertionError
        create(memory, "Eve")
        assert names(memory) == ["Ada", "Bob", "Eve"]
        assert memory.checkpoint() == 3
    assert "rebuilt from the log" in caplog.text and "ends at position 2" in caplog.text


def test_a_cache_reopened_on_a_log_restored_and_written_past_its_checkpoint_answers_the_new_history(
        tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as memory:
        create(memory, "Ada", "Bob", "Cy")
    written_over(url, tmp_path / "b", "Xa", "Xb", "Xc")  # another server writes on the restored log
    with Memory(url, cache=tmp_path / "a") as memory:
        assert names(memory) == ["Ada", "Xa", "Xb", "Xc"]  # before: Ada, Bob, Cy and Xc
        assert names(memory, asOf=3) == ["Ada", "Xa", "Xb"]


def test_a_running_server_without_a_follower_notices_at_its_next_call(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as memory:
        create(memory, "Ada", "Bob", "Cy")
        written_over(url, tmp_path / "b", "Xa", "Xb")
        assert names(memory) == ["Ada", "Xa", "Xb"]


def test_a_write_notices_with_the_lock_where_the_follower_has_not_looked_yet(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as memory:
        create(memory, "Ada", "Bob", "Cy")
        written_over(url, tmp_path / "b", "Xa", "Xb")
        memory.views.observed_erasures = 0  # as a follower that has not looked since leaves it: no look per call
        create(memory, "Dee")
        assert names(memory) == ["Ada", "Dee", "Xa", "Xb"]


def test_a_follower_notices_a_log_that_went_back_below_its_views(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as memory:
        create(memory, "Ada", "Bob", "Cy")
        memory.follow()
        cut_back(url, 1)
        for _ in range(1000):
            if memory.followed == 1:
                break
            memory.stopping.wait(0.01)
        assert memory.followed == 1
        memory.views.observed_erasures = 0  # (no look at the call: the follower's was the one)
        assert names(memory) == ["Ada"]


def test_an_erasure_of_the_event_at_a_caches_checkpoint_is_not_taken_for_a_log_that_went_back(
        tmp_path: Path, url: str, caplog: pytest.LogCaptureFixture) -> None:
    with Memory(url, cache=tmp_path / "a") as a:
        create(a, "Ada", "Bob")  # the cache stands at Bob's creation
    with Memory(url, cache=tmp_path / "b") as b:
        b.write("forget_entity", {"name": "Bob", "reason": "asked"}, actor="t")  # rewrites it
    with caplog.at_level(logging.WARNING, "chronograph.views"), Memory(url, cache=tmp_path / "a") as a:
        assert names(a) == ["Ada"]
    assert "rebuilt" not in caplog.text


def test_a_mark_survives_an_erasure_and_tells_another_call_apart_at_the_same_time() -> None:
    from chronograph.eventstore import EntityDeleted, Envelope

    def envelope(stream: str, call: str) -> Envelope:
        return Envelope(7, stream, 2, 1_000_000, 1, "t", call, None, EntityDeleted())

    assert anchor.mark(envelope("a", "c1")) == anchor.mark(envelope("erased:b", "c1"))
    assert anchor.mark(envelope("a", "c1")) != anchor.mark(envelope("a", "c2"))


def test_views_of_a_log_that_went_back_are_not_kept_as_a_seed_for_new_caches(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as memory:
        create(memory, "Ada", "Bob", "Cy")
        written_over(url, tmp_path / "b", "Xa", "Xb")
        assert not memory.keep_seed_now(spacing=0)  # the keeper runs outside the calls: no look came first
        names(memory)  # the call's look rebuilds the views
        assert memory.keep_seed_now(spacing=0)
    with Memory(url, cache=tmp_path / "c") as new:
        assert names(new) == ["Ada", "Xa", "Xb"]


def test_a_cache_rebuilt_from_a_log_that_went_back_keeps_no_byte_of_what_the_new_history_erased(
        tmp_path: Path, url: str) -> None:
    secret = "Philippa Quarrington-Obi"
    with Memory(url, cache=tmp_path / "a") as memory:
        create(memory, "Ada", secret)
        memory.write("create_entities", {"entities": [
            {"name": f"N{i}", "entityType": "p", "observations": ["x" * 200]} for i in range(300)]}, actor="t")
        memory.read("search_nodes", {"query": "Quarrington"})
    cut_back(url, 2)  # a replica that holds Ada and the secret only
    with Memory(url, cache=tmp_path / "b") as other:  # where a server forgets it
        assert other.write("forget_entity", {"name": secret, "reason": "asked"}, actor="t").output.scrubbed
    with Memory(url, cache=tmp_path / "a") as memory:  # rebuilt: the old slot's pages are free, not zeroed
        assert names(memory) == ["Ada"]
    assert secret.encode() not in (tmp_path / "a" / "data.mdb").read_bytes()  # before: its bytes stayed


def test_a_rebuild_after_the_log_went_back_says_how_far_it_got_for_a_large_log(
        tmp_path: Path, url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronograph.projections.live import rebuilding  # noqa: PLC0415

    original, heard = rebuilding.rebuild, []

    def told(log: Any, binding: Any, pointer: Any, snapshots: Any, tables_of: Any, progress: Any,
             *rest: Any, **kwargs: Any) -> Any:
        heard.append(progress)
        for done in range(0, 40_001, 4_000):  # as the fold of a log of 40,000 events tells it
            progress("fold", done, 40_000)
        return original(log, binding, pointer, snapshots, tables_of, progress, *rest, **kwargs)

    with Memory(url, cache=tmp_path / "cache") as memory:
        create(memory, "Ada", "Bob")
    cut_back(url, 1)
    monkeypatch.setattr(rebuilding, "rebuild", told)
    with caplog.at_level(logging.WARNING, "chronograph.views"), Memory(url, cache=tmp_path / "cache") as memory:
        assert names(memory) == ["Ada"]
    assert heard and isinstance(heard[0], rebuilding.LoggedProgress)
    said = [r.getMessage() for r in caplog.records if "rebuilding the cache: fold" in r.getMessage()]
    assert said[0].endswith("fold: 0 of 40,000 (0%)") and said[-1].endswith("fold: 40,000 of 40,000 (100%)")
    assert len(said) == 11
    quiet = rebuilding.LoggedProgress()
    caplog.clear()
    quiet("fold", 10, 100)  # a small log: nothing worth a line
    assert not caplog.records
