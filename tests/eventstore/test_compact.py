"""Codec 2, the compact record: fewer bytes, old records still read, checksums over what is stored."""

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
from chronograph.eventstore.compact import LAYOUTS, relation_stream
from chronograph.eventstore.copying import copy_log, verify_copy
from chronograph.eventstore.events import event_type
from chronograph.eventstore.keys import pack_u32, pack_u64
from chronograph.projections import relation_stream as the_views_relation_stream
from freezegun import freeze_time

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
