"""How `streams` keeps each event of a stream: its stream's key and version -> its position.

A version is kept big-endian after the stream's key (so a stream's keys sort by version and
its last key says its version), a position big-endian as the value. Stores of format 6 keep a
version in 4 bytes and a position in 6 (`NARROW`: 36 bytes an entry in a page instead of 42;
a stream of 4 billion events, a log of 281 trillion); the stores of older formats keep 8 and 8
(`WIDE`), as they were written, since a process of an older version may have them open.
"""

from __future__ import annotations

from typing import NamedTuple

from chronograph.eventstore.errors import StoreCorruptError, StreamFullError
from chronograph.eventstore.keys import Stored

__all__ = ["NARROW", "WIDE", "IndexLayout"]


class IndexLayout(NamedTuple):
    """The bytes of a version in a key of `streams`, and of a position in its value."""

    version_bytes: int
    position_bytes: int

    @property
    def last_version(self) -> int:
        """The highest version a key can hold."""
        return (1 << 8 * self.version_bytes) - 1

    def key(self, prefix: bytes, version: int) -> bytes:
        """The key of `version` of the stream whose key is `prefix`."""
        return prefix + version.to_bytes(self.version_bytes, "big")

    def value(self, position: int) -> bytes:
        """The value of an event at `position`."""
        return position.to_bytes(self.position_bytes, "big")

    def version(self, key: Stored, width: int) -> int:
        """The version in `key`, after a stream key of `width` bytes (the caller checked its length)."""
        return int.from_bytes(key[width:], "big")

    def position(self, value: Stored) -> int:
        """The position in `value`.

        Raises:
            StoreCorruptError: If the value is not a position's size (the index is damaged).
        """
        if len(value) != self.position_bytes:
            raise StoreCorruptError(f"the stream index is damaged: a position of {len(value)} bytes, not "
                                    f"{self.position_bytes}")
        return int.from_bytes(value, "big")

    def check(self, version: int, position: int) -> None:
        """Raise unless `version` and `position` fit (checked once for a batch: its highest of each).

        Raises:
            StreamFullError: If either does not fit.
        """
        if version > self.last_version or position >= 1 << 8 * self.position_bytes:
            raise StreamFullError(
                f"version {version:,} of a stream, or position {position:,} of the log, is past what this "
                f"store's index numbers ({self.last_version:,} versions a stream)")


WIDE = IndexLayout(8, 8)
"""The stores of formats 1 to 5."""
NARROW = IndexLayout(4, 6)
"""The stores of format 6 and later."""
