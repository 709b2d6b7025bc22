"""What a search selects from a word index: counted at once, listed only as far as a page needs,
weighed without reading an entity (see `WorkspaceIndex.select`, `ranking` and `volume`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from chronograph.projections.search.wordindex import WorkspaceIndex

__all__ = ["SPARSE", "Ranking", "Selection", "Volume"]

SPARSE = 64
"""A selection at most 1/SPARSE of the documents is listed and sorted; a denser one is paged by
walking the creation order."""


class Volume(NamedTuple):
    """What an answer must carry for some entities, at least: counts that do not depend on the
    answer's shape."""

    entities: int
    heads: int
    """Characters of the names and types."""
    chars: int
    """Characters of the names, types and the observations without a valid time (always shown)."""
    observations: int
    """Observations without a valid time."""


class Ranking(NamedTuple):
    """The best of a ranked or fuzzy search, best first, and how many entities it found in all."""

    hits: list[tuple[str, float]]
    total: int


class Selection:
    """Live documents of an index (say, the candidates of a substring query), as a bitmap: counted
    at once, listed in creation order only as far as a page needs."""

    __slots__ = ("_bits", "_index", "_listed", "count")

    def __init__(self, index: WorkspaceIndex, bits: int | None, listed: list[int] | None = None) -> None:
        self._index = index
        self._bits = bits
        self._listed = listed
        """The documents in creation order, when they were few enough to list (then `bits` is None)."""
        self.count = len(listed) if listed is not None else bits.bit_count() if bits is not None else 0
        """How many documents are selected."""

    def streams(self, offset: int = 0, limit: int | None = None) -> list[str]:
        """The selected entities' streams, oldest first: `limit` of them after the first `offset`."""
        streams = self._index._streams  # noqa: SLF001 (the index's own parts)
        stop = self.count if limit is None else min(self.count, offset + limit)
        if offset >= stop:
            return []
        return [streams[doc] for doc in itertools.islice(self.docs(), offset, stop)]

    def each(self) -> Iterator[str]:
        """The selected entities' streams, oldest first, found as they are asked for."""
        streams = self._index._streams  # noqa: SLF001
        return (streams[doc] for doc in self.docs())

    def docs(self) -> Iterator[int]:
        """The selected documents, oldest first: a sparse selection is listed and sorted, a dense
        one found by walking the creation order (so a page of a common word reads no more of it
        than the page needs)."""
        index = self._index
        size = len(index._streams)  # noqa: SLF001
        if self._listed is not None:
            return iter(self._listed)
        if not self.count or self._bits is None:
            return iter(())
        flags = self._bits.to_bytes(size, "little")
        if self.count * SPARSE <= size:
            found, find = [], flags.find
            at = find(1)
            while at >= 0:
                found.append(at)
                at = find(1, at + 1)
            found.sort(key=index._seqs.__getitem__)  # noqa: SLF001
            return iter(found)
        return (doc for doc in index._in_order() if flags[doc])  # noqa: SLF001

    def weigh(self, entity: int, char: int, observation: int, *, heads: bool, ceiling: int, offset: int = 0,
              limit: int | None = None, cap: int | None = None) -> int:
        """At least how many bytes an answer of the selected entities (`limit` of them after the
        first `offset`) takes, if each costs `entity`, each character of its name and type (and,
        unless `heads`, of its observations always shown) `char`, and each observation always
        shown `observation` (at most `cap` of them, when the answer keeps no more; 0 when it
        shows none); counting stops once over `ceiling`."""
        index = self._index
        whole = offset == 0 and (limit is None or limit >= self.count)
        if whole and cap is None and self._bits is not None and self._bits == index._live_bits():  # noqa: SLF001
            volume = index.volume()  # every entity
            return entity * volume.entities + char * (volume.heads if heads else volume.chars) + \
                observation * volume.observations
        total = 0
        for weight in self._weights(entity, char, observation, heads, offset, limit, cap):
            total += weight
            if total > ceiling:
                break
        return total

    def fitting(self, entity: int, char: int, observation: int, *, heads: bool, ceiling: int, offset: int = 0,
                limit: int | None = None, cap: int | None = None) -> int:
        """How many of the selected entities after the first `offset` (at most `limit`) an answer
        of at most `ceiling` bytes may hold, weighed as `weigh` does."""
        total = held = 0
        for weight in self._weights(entity, char, observation, heads, offset, limit, cap):
            total += weight
            if total > ceiling:
                break
            held += 1
        return held

    def _weights(self, entity: int, char: int, observation: int, heads: bool, offset: int, limit: int | None,
                 cap: int | None) -> Iterator[int]:
        index = self._index
        weights, notes = (index._heads if heads else index._chars), index._notes  # noqa: SLF001 (the index's own parts)
        stop = None if limit is None else offset + limit
        for doc in itertools.islice(self.docs(), offset, stop):
            kept = notes[doc] if cap is None else min(cap, notes[doc])
            yield entity + char * weights[doc] + observation * kept
