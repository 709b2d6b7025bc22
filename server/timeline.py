"""Answering "as of then": which log position an `asOf` means, and the graph at that position.

The present is the live views. A past position is the log folded in memory up to it;
the few most recent past graphs are kept, since an agent that travels in time tends to
ask several questions about the same moment.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from msgspec import UNSET

from eventstore import EventStore, Reader
from projections import Graph, LmdbGraph, MemoryGraph, Views, graph_as_of, position_of
from server.errors import InvalidArgumentsError

__all__ = ["Moment", "Timeline"]

KEPT = 2
"""Past graphs kept in memory (each the whole graph at a position)."""


class Moment:
    """A graph to answer from, the log reader of the same snapshot, and the position."""

    def __init__(self, graph: Graph, live: LmdbGraph, log: Reader, position: int | None) -> None:
        self.graph = graph
        self.live = live
        """The live views: they know every stream ever created under a name."""
        self.log = log
        self.position = position
        """The position asked for with asOf; None for now."""

    @property
    def is_past(self) -> bool:
        return self.graph is not self.live


class Timeline:
    """Resolves asOf for the reads of one store."""

    def __init__(self, store: EventStore, views: Views) -> None:
        self.store = store
        self.views = views
        self._past: OrderedDict[int, MemoryGraph] = OrderedDict()

    @contextmanager
    def at(self, tool: str, as_of: Any = UNSET) -> Iterator[Moment]:
        """The graph as of `as_of` (UNSET: now), inside one read snapshot.

        Raises:
            InvalidArgumentsError: If `as_of` is neither a position nor an ISO-8601 time.
        """
        with self.views.read() as live:
            log = Reader(live.txn, self.store.codec, self.store.dbs)
            if as_of is UNSET:
                yield Moment(live, live, log, None)
                return
            try:
                position = position_of(log, as_of)
            except ValueError as error:
                raise InvalidArgumentsError(tool, f"asOf: {error}") from None
            graph = live if position == live.position else self._graph_at(position)
            yield Moment(graph, live, log, position)

    def position(self, tool: str, field: str, moment: Any) -> int:
        """The log position of `moment` (a position, or ISO-8601 text), named `field` in errors."""
        with self.store.read() as log:
            try:
                return position_of(log, moment)
            except ValueError as error:
                raise InvalidArgumentsError(tool, f"{field}: {error}") from None

    def _graph_at(self, position: int) -> MemoryGraph:
        graph = self._past.get(position)
        if graph is None:
            graph = self._past[position] = graph_as_of(self.store, position, self.views.snapshots)
            while len(self._past) > KEPT:
                self._past.popitem(last=False)
        else:
            self._past.move_to_end(position)
        return graph
