"""Keys: long text is hashed into LMDB's limit, never rejected or truncated."""

from __future__ import annotations

import pytest
from chronograph.eventstore.errors import StoreCorruptError
from chronograph.eventstore.keys import MAX_KEY_BYTES, pack_u64, stream_key, text_key, unpack_u32, unpack_u64


def test_short_text_is_kept_verbatim() -> None:
    assert text_key("entity-1") == b"=entity-1"


def test_text_longer_than_the_limit_is_hashed_to_a_fixed_width() -> None:
    key = text_key("x" * 10_000)
    assert key.startswith(b"#") and len(key) == 33 and len(key) <= MAX_KEY_BYTES


def test_long_texts_that_share_a_prefix_get_different_keys() -> None:
    assert text_key("a" * 600 + "1") != text_key("a" * 600 + "2")


def test_a_hashed_key_never_equals_a_verbatim_one() -> None:
    hashed = text_key("y" * 1000)
    assert text_key(hashed[1:].decode("latin-1")) != hashed


def test_an_entity_stream_s_key_is_its_own_bytes_in_its_time_order() -> None:
    streams = [f"entity-{micros:014x}{tail:016x}" for micros, tail in
               ((1_700_000_000_000_000, 2**64 - 1), (1_700_000_000_000_001, 0), (1_800_000_000_000_000, 7))]
    keys = [stream_key(stream) for stream in streams]
    assert [len(key) for key in keys] == [15, 15, 15]
    assert keys == sorted(keys) and keys[0] == bytes.fromhex(streams[0].removeprefix("entity-"))


def test_any_other_stream_s_key_is_a_digest_of_another_length() -> None:
    others = ["relation:[\"w\",\"Alice\",\"knows\",\"Bob\"]", "context:w", "entity-" + "A" * 30,
              "entity-" + "0" * 29, "r" * 10_000]
    keys = [stream_key(stream) for stream in others]
    assert [len(key) for key in keys] == [16] * len(others) and len(set(keys)) == len(others)
    assert b"Alice" not in keys[0]


def test_a_number_read_from_the_wrong_number_of_bytes_is_damage_not_a_struct_error() -> None:
    with pytest.raises(StoreCorruptError, match="a number stored in 8 bytes was read from 5"):
        unpack_u64(b"12345")
    with pytest.raises(StoreCorruptError, match="stored in 4 bytes"):
        unpack_u32(b"")
    assert unpack_u64(pack_u64(7)) == 7
