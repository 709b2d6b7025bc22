"""The codec: round trips, and old event shapes read as new ones through upcasters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.eventstore import (
    CATALOGUE,
    Codec,
    EntityCreated,
    Event,
    LmdbLog,
    StreamWrite,
    UnknownEventError,
    Upcasters,
)


class NoteTakenV1(Event, tag="test.note_taken"):
    """The shape a note had when it was first written: one free-text field."""

    text: str


class NoteTaken(Event, tag="test.note_taken"):
    """Today's shape: the text split into a title and a body."""

    schema = 2
    title: str
    body: str = ""


def upcasters() -> Upcasters:
    registry = Upcasters()

    @registry.register("test.note_taken", from_schema=1)
    def split_text(data: dict) -> dict:  # type: ignore[type-arg]
        title, _, body = data.pop("text").partition("\n")
        return {**data, "title": title, "body": body}

    return registry


def test_an_event_written_in_an_older_shape_is_read_in_the_new_one(store_path: Path) -> None:
    with LmdbLog(store_path, codec=Codec([*CATALOGUE, NoteTakenV1])) as old:
        old.append([StreamWrite("notes", [NoteTakenV1(text="Shopping\neggs, milk")])], actor="t")

    with LmdbLog(store_path, codec=Codec([*CATALOGUE, NoteTaken], upcasters())) as new:
        [envelope] = new.read_stream("notes")
        batch = list(new.read_all())

    assert envelope.event == NoteTaken(title="Shopping", body="eggs, milk")
    assert envelope.schema_version == 2
    assert batch == [envelope]


def test_an_old_shape_without_an_upcaster_is_a_clear_error(store_path: Path) -> None:
    with LmdbLog(store_path, codec=Codec([*CATALOGUE, NoteTakenV1])) as old:
        old.append([StreamWrite("notes", [NoteTakenV1(text="x")])], actor="t")
    with pytest.raises(UnknownEventError, match="no upcaster lifts 'test.note_taken'"):
        with LmdbLog(store_path, codec=Codec([*CATALOGUE, NoteTaken])) as new:
            new.read_stream("notes")


def test_an_event_type_this_version_does_not_know_is_a_clear_error(store_path: Path) -> None:
    with LmdbLog(store_path, codec=Codec([*CATALOGUE, NoteTaken])) as newer:
        newer.append([StreamWrite("notes", [NoteTaken(title="t")])], actor="t")
    with pytest.raises(UnknownEventError, match="upgrade Chronograph"):
        with LmdbLog(store_path) as older:
            older.read_stream("notes")


def test_envelopes_round_trip_through_the_codec(store: LmdbLog) -> None:
    event = EntityCreated(
        workspace="w", name="Ada", entity_type="person",
        observations=("first programmer", "ünïcödé"), metadata={"born": 1815, "tags": ["math"]},
    )
    store.append([StreamWrite("a", [event])], actor="t")
    [envelope] = store.read_all()
    assert envelope.event == event
    assert store.codec.decode(store.codec.encode(envelope)) == envelope


def test_an_upcaster_cannot_be_registered_twice() -> None:
    registry = upcasters()
    with pytest.raises(ValueError):
        registry.register("test.note_taken", from_schema=1)(lambda data: data)


def first_record(store: LmdbLog) -> list[Any]:
    """An entity created in `store`, as its record decodes from the bytes on disk."""
    store.append([StreamWrite("a", [EntityCreated(workspace="w", name="n", entity_type="t")])], actor="t")
    with store.read() as reader:
        return msgspec.msgpack.decode(reader.txn.get((1).to_bytes(8, "big"), db=reader.dbs.log))


def test_the_payload_on_disk_is_a_map_keyed_by_field_name_in_codec_1(store_path: Path) -> None:
    with LmdbLog(store_path, codec=Codec(writes=1)) as store:
        stored = first_record(store)
    assert stored[-1] == {"type": "entity_created", "workspace": "w", "name": "n", "entityType": "t"}


def test_the_payload_on_disk_is_the_tag_then_the_fields_by_position_in_codec_2(store_path: Path) -> None:
    with LmdbLog(store_path, codec=Codec(writes=2)) as store:
        stored = first_record(store)
    assert stored[-2:] == [["entity_created", "w", "n", "t"], 2]


def test_the_payload_on_disk_is_the_tag_s_number_then_the_fields_by_position_in_codec_3(store: LmdbLog) -> None:
    stored = first_record(store)
    assert stored[1] == "a" and stored[-3:] == [[1, "w", "n", "t"], None, 3]
