"""Codecs 2 and 3, the compact records: fewer bytes, old records still read, checksums over what is stored."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from chronograph.eventstore import (
    CATALOGUE,
    Codec,
    EntityCreated,
    LmdbLog,
    ObservationsAdded,
    RelationCreated,
    RelationUpdated,
    StoreCorruptError,
    StreamWrite,
)
from chronograph.eventstore.compact import LAYOUTS, NUMBERS, Compact, relation_stream
from chronograph.eventstore.copying import copy_log, verify_copy
from chronograph.eventstore.events import event_type
from chronograph.eventstore.keys import pack_u32, pack_u64
from chronograph.eventstore.teamevents import SessionEnded
from chronograph.projections import relation_stream as the_views_relation_stream
from freezegun import freeze_time
from support.holders import held_open

CALL = "0123456789abcdef0123456789abcdef"


def writes(count: int) -> list[StreamWrite]:
    out = []
    for i in range(count):
        out.append(StreamWrite(f"entity-{i:030x}", [EntityCreated(
            workspace="default", name=f"Entity {i:07d}", entity_type="type3",
            observations=("dokagi gimine dodo dododosa", "doqumimi gigipami dodo", "dozelodo dodogife"))]))
        relation = RelationCreated(workspace="default", source=f"Entity {i:07d}", target="Entity 0000000",
                                   relation_type="knows")
        out.append(StreamWrite(relation_stream("default", relation.source, "knows", relation.target), [relation]))
    return out


def stored(log: LmdbLog) -> list[bytes]:
    with log.read() as reader:
        return reader.stored(1, reader.head())


def test_every_class_of_the_catalogue_starts_with_the_layout_its_records_keep() -> None:
    for cls in CATALOGUE:
        layout = LAYOUTS[(event_type(cls), cls.schema)]
        assert tuple(f.encode_name for f in msgspec.structs.fields(cls))[: len(layout)] == layout, cls


def test_the_views_name_a_relation_s_stream_as_the_records_do() -> None:
    assert the_views_relation_stream is relation_stream


@freeze_time("2026-11-25 12:00:00")
def test_a_compact_log_takes_two_thirds_of_the_bytes_and_reads_back_the_same(tmp_path: Path) -> None:
    with LmdbLog(tmp_path / "old", codec=Codec(writes=1)) as old, LmdbLog(tmp_path / "new") as new:
        for log in (old, new):
            log.append(writes(50), actor="import", correlation_id=CALL)
        assert sum(map(len, stored(new))) < 0.7 * sum(map(len, stored(old)))
        assert [msgspec.structs.astuple(e) for e in old.read_all()] == [
            msgspec.structs.astuple(e) for e in new.read_all()]


def test_a_relation_s_record_leaves_out_the_stream_its_fields_name_and_keeps_any_other(store: LmdbLog) -> None:
    relation = RelationCreated(workspace="w", source="a", target="b", relation_type="r")
    store.append([StreamWrite(relation_stream("w", "a", "r", "b"), [relation]),
                  StreamWrite("elsewhere", [relation])], actor="t", correlation_id="not hex")
    first, second = (msgspec.msgpack.decode(value) for value in stored(store))
    assert (first[1], second[1]) == (None, "elsewhere")
    assert second[6] == ["not hex"]
    assert [(e.stream, e.correlation_id) for e in store.read_all()] == [
        (relation_stream("w", "a", "r", "b"), "not hex"), ("elsewhere", "not hex")]


def test_a_log_written_before_codec_2_reads_on_and_takes_compact_records_after_it(store_path: Path) -> None:
    with LmdbLog(store_path) as empty, empty.environment.env.begin(write=True) as txn:
        txn.put(b"format", pack_u32(1), db=empty.dbs.meta)  # a version before codec 2 made it
    with LmdbLog(store_path, codec=Codec(writes=1)) as old:
        old.append(writes(3), actor="t")
        with old.environment.env.begin(write=True) as txn:  # and left it
            txn.put(b"format", pack_u32(1), db=old.dbs.meta)
    with LmdbLog(store_path) as new:
        new.append([StreamWrite("entity-000000000000000000000000000000", [ObservationsAdded(observations=("x",))])],
                   actor="t")
        with new.read() as reader:
            assert bytes(reader.txn.get(b"format", db=new.dbs.meta)) == pack_u32(2)
        values = stored(new)
        assert [value[0] for value in values] == [0x99] * 6 + [0x9A]
        events = [e.event for e in new.read_all()]
        assert events[-1] == ObservationsAdded(observations=("x",)) and events[0].name == "Entity 0000000"
        assert [e.event for e in new.read_stream("entity-000000000000000000000000000000")][1:] == [events[-1]]


def test_a_log_written_before_codec_2_stays_in_codec_1_while_another_process_may_be_writing_it(
    store_path: Path,
) -> None:
    with LmdbLog(store_path) as empty, empty.environment.env.begin(write=True) as txn:
        txn.put(b"format", pack_u32(1), db=empty.dbs.meta)  # a version before codec 2 made it
    with held_open(store_path):  # and its server still runs: each of its writes would fail on a codec-2 record
        with LmdbLog(store_path) as new:
            new.append(writes(1), actor="t")
            with new.read() as reader:
                assert bytes(reader.txn.get(b"format", db=new.dbs.meta)) == pack_u32(1)  # before: raised to 2
            assert [value[0] for value in stored(new)] == [0x99, 0x99]
    with LmdbLog(store_path) as alone:  # no process of an older version can have it open: raised now
        alone.append(writes(1), actor="t")
        with alone.read() as reader:
            assert bytes(reader.txn.get(b"format", db=alone.dbs.meta)) == pack_u32(2)
        assert [value[0] for value in stored(alone)] == [0x99, 0x99, 0x9A, 0x9A]


def test_an_event_with_an_unset_field_before_a_set_one_is_kept_by_name(store: LmdbLog) -> None:
    update = RelationUpdated(metadata={"a": 1})
    store.append([StreamWrite("r", [update]), StreamWrite("r", [RelationUpdated(confidence=0.5)])], actor="t")
    assert [e.event for e in store.read_all()] == [update, RelationUpdated(confidence=0.5)]
    assert isinstance(msgspec.msgpack.decode(stored(store)[0])[8], dict)


def test_a_damaged_compact_record_fails_its_checksum(store: LmdbLog) -> None:
    store.append(writes(2), actor="t")
    with store.environment.env.begin(write=True) as txn:
        value = bytearray(txn.get(pack_u64(2), db=store.dbs.log))
        value[-5] ^= 0x01
        txn.put(pack_u64(2), bytes(value), db=store.dbs.log)
    with pytest.raises(StoreCorruptError, match="position 2"):
        list(store.read_all())
    with store.read() as reader:
        assert list(reader.verify()) == [2]


def test_a_copy_keeps_each_record_in_the_codec_that_wrote_it(tmp_path: Path) -> None:
    with LmdbLog(tmp_path / "old", codec=Codec(writes=1)) as old, LmdbLog(tmp_path / "copy") as copy:
        old.append(writes(5), actor="t")
        assert copy_log(old, copy) == 10
        assert stored(copy) == stored(old)
        assert verify_copy(old, copy) == []


def a_format_4_store(path: Path) -> None:
    with LmdbLog(path) as empty, empty.environment.env.begin(write=True) as txn:
        txn.put(b"format", pack_u32(4), db=empty.dbs.meta)  # as the versions before codec 3 made it


def test_every_tag_keeps_the_number_its_codec_3_records_store() -> None:
    assert NUMBERS == dict(zip([  # append, never reorder: the numbers are in every record written since
        'entity_created', 'observations_added', 'observations_deleted', 'entity_updated', 'entity_deleted',
        'relation_created', 'relation_updated', 'relation_deleted', 'context_updated', 'entity_renamed',
        'entity_merged', 'observations_invalidated', 'relation_invalidated', 'content_erased', 'entity_forgotten',
        'entity_restored', 'organization_created', 'project_created', 'project_updated', 'session_started',
        'session_ended', 'entry_added', 'entry_updated', 'entry_deactivated', 'entry_reactivated', 'tag_created',
        'tag_attached', 'tag_detached', 'entry_relation_created', 'entry_relation_deleted', 'file_checked_out',
        'file_checked_in', 'file_force_unlocked', 'conflict_detected', 'conflict_resolved', 'team_memory_reset',
        'entry_forgotten', 'token_issued', 'token_revoked'], range(1, 40), strict=True))
    assert {event_type(cls) for cls in CATALOGUE} <= set(NUMBERS)


@freeze_time("2026-11-25 12:00:00")
def test_a_new_store_writes_codec_3_records_a_seventh_smaller_that_read_back_the_same(tmp_path: Path) -> None:
    a_format_4_store(tmp_path / "old")
    with LmdbLog(tmp_path / "old") as old, LmdbLog(tmp_path / "new") as new:
        for log in (old, new):
            log.append(writes(50), actor="import", correlation_id=CALL)
            log.append([StreamWrite("entity-000000000000000000000000000001", [SessionEnded(status="done")]),
                        StreamWrite("team:x", [SessionEnded(status="done")])], actor="t", principal="ann",
                       correlation_id=CALL)
        assert {value[0] for value in stored(old)} == {0x9A, 0x9B} and {value[-1] for value in stored(old)} != {3}
        assert {value[0] for value in stored(new)} == {0x9B} and {value[-1] for value in stored(new)} == {3}
        assert sum(map(len, stored(new))) < 0.87 * sum(map(len, stored(old)))
        assert [msgspec.structs.astuple(e) for e in old.read_all()] == [
            msgspec.structs.astuple(e) for e in new.read_all()]
        assert [e.principal for e in new.read_all()][-2:] == ["ann", "ann"]
        created = msgspec.msgpack.decode(stored(new)[0])
        assert created[1] == bytes(15) and created[8][0] == NUMBERS["entity_created"] and created[9] is None


def test_a_store_of_format_4_keeps_its_format_and_codec_2_after_a_write(store_path: Path) -> None:
    a_format_4_store(store_path)
    with LmdbLog(store_path) as old:
        old.append(writes(2), actor="t")
        with old.read() as reader:
            assert bytes(reader.txn.get(b"format", db=old.dbs.meta)) == pack_u32(4)
        assert [value[-1] for value in stored(old)] == [2] * 4


def test_a_log_with_records_of_every_codec_reads_them_in_one_scan(tmp_path: Path) -> None:
    with LmdbLog(tmp_path / "one", codec=Codec(writes=1)) as one, LmdbLog(tmp_path / "two",
                                                                         codec=Codec(writes=2)) as two:
        one.append(writes(2), actor="t")
        two.append(writes(2), actor="t")
        first, second = stored(one), stored(two)
    with LmdbLog(tmp_path / "all") as log:
        log.append(writes(2), actor="t")
        with log.environment.env.begin(write=True) as txn:  # positions 1-4 of codec 3, then 1 and 2
            for position, value in enumerate([*first, *second], start=5):
                record = msgspec.msgpack.decode(value)
                record[0] = position
                txn.put(pack_u64(position), msgspec.msgpack.encode(record), db=log.dbs.log)
        with log.read() as reader:
            values = reader.stored(1, 12)
        assert [value[-1] for value in values[:4]] == [3] * 4 and values[4][0] == 0x99 and values[8][-1] == 2
        envelopes = log.codec.decode_many(values)
        assert [e.event for e in envelopes] == [w.events[0] for w in writes(2)] * 3
        assert [e.position for e in envelopes] == list(range(1, 13))
        assert [e.event for e in log.read_all()] == [e.event for e in envelopes]


def test_a_codec_3_event_at_an_older_schema_names_its_tag_for_the_upcasters() -> None:
    compact = Compact({event_type(cls): cls for cls in CATALOGUE})
    raw = msgspec.Raw(msgspec.msgpack.encode([NUMBERS["entity_renamed"], "new", "old"]))
    assert compact.fields(raw, 1) == {"type": "entity_renamed", "name": "new", "previous": "old"}
    assert compact.fields(msgspec.Raw(msgspec.msgpack.encode([999, 1])), 1) == {"type": "number 999"}
