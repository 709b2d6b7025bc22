"""The stream index's keys: fixed-size in a new store, the stream's text in a store made before."""

from __future__ import annotations

from pathlib import Path

from chronograph.eventstore import LmdbLog, StreamWrite
from chronograph.eventstore.copying import copy_log, verify_copy
from chronograph.eventstore.events import EntityCreated, ObservationsAdded, RelationCreated
from chronograph.eventstore.keys import pack_u32, pack_u64, stream_key, text_key
from chronograph.projections.streams import new_entity_stream, relation_stream
from msgspec.structs import astuple


def indexed(log: LmdbLog) -> tuple[list[bytes], list[bytes]]:
    """The keys of `streams` and of `heads` (none in a store without heads)."""
    with log.read() as reader:
        heads = log.dbs.heads
        return ([bytes(key) for key in reader.txn.cursor(log.dbs.streams).iternext(values=False)],
                [] if heads is None else [bytes(key) for key in reader.txn.cursor(heads).iternext(values=False)])


def databases(log: LmdbLog) -> set[bytes]:
    with log.read() as reader:
        return {bytes(name) for name in reader.txn.cursor().iternext(values=False)}


def a_graph(log: LmdbLog) -> tuple[str, str]:
    alice, bob = new_entity_stream(), new_entity_stream()
    log.append([StreamWrite(alice, [EntityCreated(workspace="w", name="Alice", entity_type="person")]),
                StreamWrite(bob, [EntityCreated(workspace="w", name="Bob", entity_type="person")])], actor="t")
    log.append([StreamWrite(relation_stream("w", "Alice", "knows", "Bob"),
                            [RelationCreated(workspace="w", source="Alice", target="Bob", relation_type="knows")]),
                StreamWrite(alice, [ObservationsAdded(observations=("likes tea",))])], actor="t")
    return alice, bob


def test_a_new_store_keys_its_streams_by_fixed_size_keys_that_spell_no_name(store: LmdbLog) -> None:
    alice, bob = a_graph(store)
    versions, heads = indexed(store)
    relation = stream_key(relation_stream("w", "Alice", "knows", "Bob"))
    assert store.dbs.heads is None and heads == []  # a stream's last key is its version
    with store.read() as reader:  # an empty `heads`, so that a version that reads it refuses the format 4
        assert b"heads" in databases(store) and reader.txn.stat(store.environment.env.open_db(b"heads"))[
            "entries"] == 0
    assert sorted(versions) == sorted([stream_key(alice) + pack_u32(1), stream_key(alice) + pack_u32(2),
                                       stream_key(bob) + pack_u32(1), relation + pack_u32(1)])  # format 6: 4 bytes
    with store.read() as reader:  # and a position in 6
        assert sorted(bytes(v) for v in reader.txn.cursor(store.dbs.streams).iternext(keys=False)) == [
            position.to_bytes(6, "big") for position in (1, 2, 3, 4)]
    assert not any(b"Alice" in key or b"Bob" in key for key in versions + heads)
    assert [e.event.observations for e in store.read_stream(alice)][1:] == [("likes tea",)]
    assert [store.stream_version(s) for s in (alice, bob, relation_stream("w", "Alice", "knows", "Bob"))] == [2, 1, 1]


def test_a_store_made_before_format_3_keeps_its_text_keys_and_its_format(store_path: Path) -> None:
    with LmdbLog(store_path) as empty, empty.environment.env.begin(write=True) as txn:
        txn.put(b"format", pack_u32(2), db=empty.dbs.meta)  # as a version before format 3 made it
    with LmdbLog(store_path) as old:
        alice, _ = a_graph(old)
        versions, heads = indexed(old)
        assert text_key(alice) in heads and text_key(alice) + pack_u64(2) in versions
        with old.read() as reader:
            assert [e.version for e in reader.stream(alice)] == [1, 2] == [
                e.version for e in reversed(list(reader.stream_backward(alice)))]
            assert len(reader.positions(alice)) == 2
    with LmdbLog(store_path) as reopened, reopened.read() as reader:
        assert bytes(reader.txn.get(b"format", db=reopened.dbs.meta)) == pack_u32(2)
        assert reader.stream_version(alice) == 2


def test_a_copy_of_a_store_made_before_format_3_is_keyed_anew_and_reads_the_same(tmp_path: Path) -> None:
    old_path = tmp_path / "old"
    with LmdbLog(old_path) as empty, empty.environment.env.begin(write=True) as txn:
        txn.put(b"format", pack_u32(2), db=empty.dbs.meta)
    with LmdbLog(old_path) as old, LmdbLog(tmp_path / "new") as new:
        alice, bob = a_graph(old)
        assert copy_log(old, new) == 4 and verify_copy(old, new) == []
        versions, heads = indexed(new)
        assert heads == [] and stream_key(alice) + pack_u32(2) in versions and text_key(alice) not in b"".join(versions)
        with old.read() as before, new.read() as after:
            for stream in (alice, bob, relation_stream("w", "Alice", "knows", "Bob")):
                assert [astuple(e) for e in before.stream(stream)] == [astuple(e) for e in after.stream(stream)]


def a_format_5_store(path: Path) -> None:
    with LmdbLog(path) as empty, empty.environment.env.begin(write=True) as txn:
        txn.put(b"format", pack_u32(5), db=empty.dbs.meta)  # as the versions before format 6 made it


def test_a_store_of_format_5_keeps_8_byte_versions_and_positions_and_a_copy_narrows_them(tmp_path: Path) -> None:
    a_format_5_store(tmp_path / "old")
    with LmdbLog(tmp_path / "old") as old, LmdbLog(tmp_path / "new") as new:
        alice, bob = a_graph(old)
        versions, _ = indexed(old)
        assert stream_key(alice) + pack_u64(2) in versions and len(versions) == 4
        with old.read() as reader:
            assert reader.txn.get(stream_key(alice) + pack_u64(2), db=old.dbs.streams) == pack_u64(4)
            assert [e.version for e in reader.stream(alice)] == [1, 2] == [
                e.version for e in reversed(list(reader.stream_backward(alice)))]
            assert reader.positions(alice) == [1, 4] and reader.stream_version(alice) == 2
            assert list(reader.index_problems()) == []
            assert bytes(reader.txn.get(b"format", db=old.dbs.meta)) == pack_u32(5)
        assert copy_log(old, new) == 4 and verify_copy(old, new) == []
        assert stream_key(alice) + pack_u32(2) in indexed(new)[0]
        with new.read() as reader:
            assert reader.positions(alice) == [1, 4] and list(reader.index_problems()) == []
