"""What the views store: records as msgpack arrays, sealed, each text kept once."""

from __future__ import annotations

import pytest
from chronograph.projections.errors import ViewsDamagedError
from chronograph.projections.records import NameRecord, bulk_encoder, decode_name, encode, stored_name

ALICE = "entity-0661520397d9671084c4a53dbd46fb"
ALICE_BEFORE = "entity-0661520397d8000000000000000001"


@pytest.mark.parametrize("record", [
    NameRecord(ALICE, (ALICE_BEFORE, ALICE)),
    NameRecord(None, (ALICE_BEFORE,)),
    NameRecord(None, ()),
    NameRecord("legacy", (ALICE,)),  # a live stream not among the streams: kept as it is
], ids=["live", "none-live", "empty", "live-elsewhere"])
def test_a_name_record_reads_back_as_it_was_written(record: NameRecord) -> None:
    value = encode(stored_name(record))
    assert decode_name(value) == record
    assert bulk_encoder()(stored_name(record)) == value


def test_a_name_s_live_stream_is_stored_once() -> None:
    value = encode(stored_name(NameRecord(ALICE, (ALICE_BEFORE, ALICE))))
    assert value.count(ALICE.encode()) == 1


def test_a_flipped_byte_in_a_name_record_is_found() -> None:
    value = bytearray(encode(stored_name(NameRecord(ALICE, (ALICE,)))))
    value[5] ^= 1
    with pytest.raises(ViewsDamagedError):
        decode_name(bytes(value))
