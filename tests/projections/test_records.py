"""What the views store: records as msgpack arrays, sealed, each text kept once."""

from __future__ import annotations

import msgspec
import pytest
from chronograph.projections.errors import ViewsDamagedError
from chronograph.projections.records import NameRecord, bulk_encoder, decode_name, encode, stored_name
from chronograph.projections.sealed import seal_array

ALICE = "entity-0661520397d9671084c4a53dbd46fb"
ALICE_BEFORE = "entity-0661520397d8000000000000000001"


@pytest.mark.parametrize("record", [
    NameRecord(ALICE, (ALICE_BEFORE, ALICE)),
    NameRecord(None, (ALICE_BEFORE,)),
    NameRecord(None, ()),
    NameRecord("legacy", (ALICE,)),  # a live stream not among the streams: kept as it is
    NameRecord("erased:0f", ("erased:0f", ALICE)),  # a stream an erasure renamed: kept as text
], ids=["live", "none-live", "empty", "live-elsewhere", "text"])
def test_a_name_record_reads_back_as_it_was_written(record: NameRecord) -> None:
    value = encode(stored_name(record))
    assert decode_name(value) == record
    assert bulk_encoder()(stored_name(record)) == value


def test_a_name_s_live_stream_is_stored_once_as_its_fifteen_bytes() -> None:
    value = encode(stored_name(NameRecord(ALICE, (ALICE_BEFORE, ALICE))))
    assert value.count(bytes.fromhex(ALICE[7:])) == 1 and ALICE.encode() not in value
    assert len(value) == len(encode(stored_name(NameRecord(None, ())))) + 2 * 17  # bin8: 2 + 15 bytes a stream


@pytest.mark.parametrize("stream", [b"short", 7])
def test_a_name_s_stream_that_is_neither_text_nor_an_entity_s_key_is_refused(stream: object) -> None:
    with pytest.raises(msgspec.ValidationError, match="neither text nor an entity's key"):
        decode_name(seal_array(msgspec.msgpack.encode([None, [stream]])))


def test_a_flipped_byte_in_a_name_record_is_found() -> None:
    value = bytearray(encode(stored_name(NameRecord(ALICE, (ALICE,)))))
    value[5] ^= 1
    with pytest.raises(ViewsDamagedError):
        decode_name(bytes(value))
