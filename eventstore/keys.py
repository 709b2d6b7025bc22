"""Byte encodings of LMDB keys: big-endian integers and length-safe text keys.

LMDB rejects keys over 511 bytes. Text that may be long (stream ids, names, idempotency
keys) goes through `text_key`, which keeps short text as it is and replaces long text by
its BLAKE2b digest behind a different marker byte, so the two can never collide and no
key is ever rejected or truncated.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from hashlib import blake2b
from typing import TypeAlias

from chronograph.eventstore.errors import StoreCorruptError

MAX_KEY_BYTES = 511
"""LMDB's compiled-in key size limit."""

RAW_TEXT_LIMIT = 400
"""Longest text kept verbatim in a key; leaves room for suffixes such as a u64 version."""

Stored: TypeAlias = bytes | memoryview
"""What LMDB hands back for a key or a value (always bytes: no transaction asks for buffers)."""

_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")

pack_u64 = _U64.pack
pack_u32 = _U32.pack


def _unpacker(layout: struct.Struct) -> Callable[[Stored], int]:
    def unpack(data: Stored) -> int:
        try:
            return layout.unpack(data)[0]
        except struct.error:
            raise StoreCorruptError(
                f"the store is damaged: a number stored in {layout.size} bytes was read from {len(data)}; "
                "`chronograph replay --verify` tells whether its log is whole") from None

    unpack.__doc__ = f"""The integer of a {layout.size}-byte big-endian key.

    Raises:
        StoreCorruptError: If the bytes are not {layout.size} (a damaged key or value).
    """
    return unpack


unpack_u64 = _unpacker(_U64)
unpack_u32 = _unpacker(_U32)


def digest(data: bytes, size: int = 16) -> bytes:
    """A BLAKE2b digest of `size` bytes (16 by default: collisions are not a concern)."""
    return blake2b(data, digest_size=size).digest()


def text_key(text: str) -> bytes:
    """A key for `text`: b"=" + UTF-8 when short enough, else b"#" + a 32-byte digest."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= RAW_TEXT_LIMIT:
        return b"=" + raw
    return b"#" + digest(raw, 32)


_ENTITY_STREAM = re.compile(r"entity-([0-9a-f]{30})")


def stream_key(stream: str) -> bytes:
    """A fixed-size key for `stream`: 15 bytes for an entity's stream, 16 for any other.

    An entity's stream (`entity-` + 14 hex digits of time + 16 random ones) becomes its own 15
    bytes, which keep its time order: creating an entity appends at the end of every B-tree
    keyed this way (full pages, one leaf dirtied) instead of landing on a random leaf. Any other
    stream (a relation's spells out its workspace, both names and its type) becomes its 16-byte
    digest. The two lengths differ, so the two kinds of key can never be equal.
    """
    key = entity_key(stream)
    return digest(stream.encode("utf-8", "surrogatepass"), 16) if key is None else key


def entity_key(stream: str) -> bytes | None:
    """The 15 bytes an entity's stream stands for (see `stream_key`), or None for any other stream."""
    if len(stream) == 37 and (found := _ENTITY_STREAM.fullmatch(stream)) is not None:
        return bytes.fromhex(found[1])
    return None


def entity_stream_of(key: Stored) -> str:
    """The entity stream whose `stream_key` is the 15-byte `key`."""
    return "entity-" + bytes(key).hex()
