"""A stream's version: its last key in `streams` in a new store, the `heads` of a store of format 3."""

from __future__ import annotations

from pathlib import Path

import lmdb
import pytest
from chronograph.eventstore import LmdbLog, StreamWrite
from chronograph.eventstore.errors import StoreCorruptError, StreamFullError
from chronograph.eventstore.events import EntityCreated, ObservationsAdded
from chronograph.eventstore.keys import pack_u32, pack_u64, stream_key
from chronograph.eventstore.lmdb.log import FORMAT_VERSION
from hypothesis import given, settings
from hypothesis import strategies as st


def append(log: LmdbLog, stream: str, count: int) -> None:
    version = log.stream_version(stream)
    events = [ObservationsAdded(observations=(f"o{version + i}",)) for i in range(count)]
    if version == 0:
        events[0] = EntityCreated(workspace="w", name=stream, entity_type="t")
    log.append([StreamWrite(stream, events, expected=version)], actor="t")


def a_format_3_store(path: Path) -> None:
    with LmdbLog(path) as empty, empty.environment.env.begin(write=True) as txn:
        txn.put(b"format", pack_u32(3), db=empty.dbs.meta)  # as the versions that kept heads made it


streams = st.sampled_from(["entity-0123456789abcd0123456789abcdef", "entity-0123456789abcd0123456789abcdf0",
                           'relation:["w","a","k","b"]', "context:w", "x", "xy", "y"])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(streams, st.integers(1, 3)), max_size=12))
def test_a_stream_version_is_how_many_events_it_has_in_either_format(
    tmp_path_factory: pytest.TempPathFactory, writes: list[tuple[str, int]]
) -> None:
    new, old = tmp_path_factory.mktemp("new"), tmp_path_factory.mktemp("old")
    a_format_3_store(old)
    expected: dict[str, int] = {}
    with LmdbLog(new) as headless, LmdbLog(old) as headed:
        for stream, count in writes:
            append(headless, stream, count)
            append(headed, stream, count)
            expected[stream] = expected.get(stream, 0) + count
        for log in (headless, headed):
            with log.read() as reader:
                assert {s: reader.stream_version(s) for s in expected} == expected
                assert reader.stream_version("never written") == 0
        assert headless.dbs.heads is None and headed.dbs.heads is not None


def test_a_version_is_found_past_a_longer_stream_key_that_begins_with_the_stream_key(store: LmdbLog) -> None:
    entity = "entity-0123456789abcd0123456789abcdef"
    key = stream_key(entity)
    assert len(key) == 15
    append(store, entity, 3)
    with store.environment.env.begin(write=True) as txn:  # a 16-byte key sharing its first 15 bytes
        txn.put(key + b"\xff" + pack_u32(1), store.dbs.layout.value(1), db=store.dbs.streams)
        txn.put(key + b"\x00" + pack_u32(9), store.dbs.layout.value(1), db=store.dbs.streams)
    assert store.stream_version(entity) == 3


def test_a_store_of_format_3_keeps_its_heads_and_its_format(store_path: Path) -> None:
    a_format_3_store(store_path)
    with LmdbLog(store_path) as old:
        append(old, "x", 2)
        with old.read() as reader:
            assert reader.txn.get(stream_key("x"), db=old.dbs.heads) == pack_u64(2)
            assert bytes(reader.txn.get(b"format", db=old.dbs.meta)) == pack_u32(3)
    assert FORMAT_VERSION == 6


@pytest.mark.parametrize("readonly", [True, False])
def test_a_store_of_format_3_without_its_heads_is_refused_as_damaged(store_path: Path, readonly: bool) -> None:
    a_format_3_store(store_path)
    with LmdbLog(store_path) as old:
        append(old, "x", 1)
    env = lmdb.open(str(store_path), max_dbs=64)
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(b"heads", txn=txn), delete=True)
    env.close()
    with pytest.raises(StoreCorruptError, match="heads are missing"):  # not made anew, empty: every version 0
        LmdbLog(store_path, readonly=readonly)


def test_the_index_of_a_sound_store_has_no_problems_and_a_head_below_its_stream_is_one(store_path: Path) -> None:
    a_format_3_store(store_path)
    with LmdbLog(store_path) as old:
        append(old, "x", 2)
        append(old, "y", 1)
        with old.read() as reader:
            assert list(reader.index_problems()) == []
        with old.environment.env.begin(write=True) as txn:
            txn.put(stream_key("x"), pack_u64(1), db=old.dbs.heads)  # the head says 1; its events reach 2
        with old.read() as reader:
            assert list(reader.index_problems()) == ["index: a stream's head says version 1, its events reach 2"]


def test_a_stream_at_the_last_version_its_index_numbers_takes_no_more_and_nothing_is_written(store: LmdbLog) -> None:
    append(store, "x", 1)
    last = store.dbs.layout.last_version
    with store.environment.env.begin(write=True) as txn:  # as if it had 4 billion events
        txn.put(store.dbs.layout.key(stream_key("x"), last), store.dbs.layout.value(1), db=store.dbs.streams)
    assert store.stream_version("x") == last == 2**32 - 1
    with pytest.raises(StreamFullError, match="past what this store's index numbers"):
        append(store, "x", 1)
    assert store.head() == 1 and store.stream_version("x") == last


def test_a_position_of_the_wrong_size_in_the_index_is_damage_not_another_position(store: LmdbLog) -> None:
    append(store, "x", 2)
    with store.environment.env.begin(write=True) as txn:
        txn.put(store.dbs.layout.key(stream_key("x"), 2), b"\x00\x00\x02", db=store.dbs.streams)
    with store.read() as reader:
        with pytest.raises(StoreCorruptError, match="a position of 3 bytes"):
            reader.positions("x")
        with pytest.raises(StoreCorruptError, match="a position of 3 bytes"):
            list(reader.stream("x"))
        assert list(reader.index_problems()) == [
            "index: the event at position 2 (version 2 of its stream) has a key whose value is 3 bytes, not a position"]


def test_an_event_claiming_a_version_its_index_cannot_hold_is_a_problem_not_a_crash(store: LmdbLog) -> None:
    from chronograph.eventstore import checksums
    from msgspec.structs import replace

    append(store, "x", 2)
    with store.environment.env.begin(write=True) as txn:  # damage that kept its checksum whole
        claimed = replace(store.reader(txn).get(2), version=2**32)  # type: ignore[type-var]
        stored = store.codec.encode(claimed)
        txn.put(pack_u64(2), stored, db=store.dbs.log)
        checksums.record(txn, store.dbs.sums, 2, [checksums.digest(stored)])
    with store.read() as reader:
        assert list(reader.index_problems()) == [
            "index: the event at position 2 claims version 4,294,967,296, which this store's index cannot hold"]
