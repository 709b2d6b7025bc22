"""Checksums on what the views keep: a flipped byte is found when it is read, never served.

Every record the views store (entities, relations, names, counts, contexts), every
snapshot and search image, and the checkpoint, ends with the CRC-32 of the bytes before
it, little-endian. A record is a msgpack array, and the CRC travels as one more element
of it (a uint32, which the array-like Structs ignore when decoding), so a read checks
the whole stored value with one call, `zlib.crc32(value) == RESIDUE` (the CRC of any
bytes followed by their own CRC is that constant), and decodes the value as it is: no
slice, no copy, no second digest to unpack. (XXH3, which the log uses for its full
scans, is faster per byte, but its check needs the bytes without the digest: measured
on the read path, the slice and unpack cost more than CRC-32's extra cycles on records of
a few hundred bytes.)

The indexes (order, adjacency) hold stream keys: a damaged one points at no record,
which the reader takes as damage. A record that fails is `ViewsDamagedError`, whose fix
is a rebuild from the log; a snapshot or an image that fails is ignored, as if it had
never been kept (they only save work: the log has it all).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from chronograph.eventstore.keys import Stored
from chronograph.projections.errors import ViewsDamagedError

__all__ = ["RESIDUE", "SEAL", "encode_sealed", "encode_sealed_into", "seal", "seal_array", "seal_into",
           "sealed_decoder", "sound", "unseal"]

SEAL = 4
"""Bytes the CRC adds to a value."""
RESIDUE = 0x2144DF1C
"""zlib.crc32 of any bytes followed by their own CRC-32 (little-endian)."""
_UINT32 = b"\xce"
"""msgpack's marker of a 32-bit unsigned integer: the CRC as an array's last element."""
_crc = zlib.crc32
T = TypeVar("T")


def seal(data: bytes) -> bytes:
    """`data` followed by its CRC-32: what is stored."""
    return data + _crc(data).to_bytes(SEAL, "little")


def seal_array(encoded: bytes) -> bytes:
    """A msgpack array (of at most 14 elements) with its CRC-32 as one more element."""
    header = encoded[0]
    if not 0x90 <= header < 0x9F:
        raise ValueError("seal_array takes a msgpack array of at most 14 elements")
    return seal(bytes((header + 1,)) + encoded[1:] + _UINT32)


def seal_into(buffer: bytearray) -> bytes:
    """The msgpack array (of at most 14 elements) an encoder wrote into `buffer`, sealed there as
    `seal_array` seals it, and its bytes: one copy where `seal_array` makes four, which counts for
    snapshots and search images of tens of megabytes. `buffer` may be used again afterwards."""
    return bytes(_sealed_in_place(buffer))


def _sealed_in_place(buffer: bytearray) -> bytearray:
    header = buffer[0]
    if not 0x90 <= header < 0x9F:
        raise ValueError("seal_into takes a msgpack array of at most 14 elements")
    buffer[0] = header + 1
    buffer += _UINT32
    buffer += _crc(buffer).to_bytes(SEAL, "little")
    return buffer


def encode_sealed(encoder: msgspec.msgpack.Encoder, value: Any) -> bytes:
    """`seal_array(encoder.encode(value))`, encoded into a buffer of its own and sealed there (see
    `seal_into`): for a value too big to copy four times."""
    return bytes(encode_sealed_into(encoder, value, bytearray()))


def encode_sealed_into(encoder: msgspec.msgpack.Encoder, value: Any, buffer: bytearray) -> bytearray:
    """The bytes of `encode_sealed(encoder, value)`, written over `buffer` and sealed there; the
    buffer itself is returned, not copied (a rebuild's snapshots of tens of megabytes each, one
    after the other: the memory of the last is reused, and no copy is made of any). Valid until
    `buffer` is written again."""
    encoder.encode_into(value, buffer)  # over what it held: its memory is kept, its length set
    return _sealed_in_place(buffer)


def sound(value: Stored) -> bool:
    """Whether a stored value passes its CRC."""
    return len(value) >= SEAL and _crc(value) == RESIDUE


def unseal(value: Stored, what: str = "a value") -> Stored:
    """The bytes a `seal`ed value holds.

    Raises:
        ViewsDamagedError: If they fail their CRC (`what` says which kind of value).
    """
    if not sound(value):
        raise ViewsDamagedError(f"{what} fails its checksum")
    return value[:-SEAL]


def sealed_decoder(decode: Callable[[Stored], T], what: str) -> Callable[[Stored], T]:
    """`decode` for values sealed with `seal_array`, the CRC checked first.

    Raises (the function it returns):
        ViewsDamagedError: If a value fails its CRC.
    """
    def decoded(value: Stored) -> T:
        if _crc(value) != RESIDUE:
            raise ViewsDamagedError(f"{what} fails its checksum")
        return decode(value)

    return decoded
