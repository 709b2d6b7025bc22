"""Checksums on what the views keep: sealed in place, the same bytes as sealed by copies."""

from __future__ import annotations

import msgspec
import pytest
from chronograph.projections.sealed import encode_sealed, encode_sealed_into, seal_array, seal_into, sound

ENCODER = msgspec.msgpack.Encoder()


@pytest.mark.parametrize("value", [
    [],
    [1, "two", b"three"],
    [7, ["text " * 40] * 5_000],  # hundreds of kilobytes: a snapshot's or an image's shape
], ids=["empty", "small", "large"])
def test_an_array_sealed_in_its_buffer_is_the_array_sealed_by_copies(value: list[object]) -> None:
    buffer = bytearray()
    ENCODER.encode_into(value, buffer)
    sealed = seal_into(buffer)
    assert sealed == seal_array(ENCODER.encode(value))
    assert sound(sealed)
    assert msgspec.msgpack.decode(sealed)[: len(value)] == value


def test_a_buffer_sealed_once_seals_the_next_array_from_scratch() -> None:
    buffer = bytearray()
    ENCODER.encode_into(["a long first value " * 100], buffer, 0)
    seal_into(buffer)
    ENCODER.encode_into([1, 2], buffer, 0)
    assert seal_into(buffer) == seal_array(ENCODER.encode([1, 2]))


def test_values_sealed_one_after_another_in_one_buffer_are_each_the_value_sealed_alone() -> None:
    buffer = bytearray()
    for value in ([7, ["text " * 40] * 5_000], [1, "two"], [7, ["more text " * 40] * 9_000]):
        sealed = encode_sealed_into(ENCODER, value, buffer)
        assert sealed is buffer  # not copied
        assert sealed == encode_sealed(ENCODER, value) == seal_array(ENCODER.encode(value))
        assert sound(sealed)


@pytest.mark.parametrize("value", [{"a": 1}, list(range(15)), "text"], ids=["map", "fifteen", "string"])
def test_only_a_short_array_is_sealed_in_place(value: object) -> None:
    buffer = bytearray()
    ENCODER.encode_into(value, buffer)
    with pytest.raises(ValueError, match="at most 14"):
        seal_into(buffer)
