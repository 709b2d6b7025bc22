"""Answering "as of then": which log position an `asOf` means, and the graph at that position.

The present is the live views. A past position is the log folded in memory up to it
(from the nearest snapshot); the few most recent past graphs are kept, since an agent
that travels in time tends to ask several questions about the same moment.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chronograph.application.errors import InvalidArgumentsError
from chronograph.eventstore import EventLog, LogReader, clock
from chronograph.projections import (
    DictGraph,
    Graph,
    LmdbGraph,
    Snapshot,
    Views,
    graph_as_of,
    position_of,
    written_position,
)
from msgspec import UNSET, UnsetType

__all__ = ["Moment", "Timeline"]

KEPT = 2
"""Past graphs kept in memory (each the whole graph at a position)."""


class Moment:
    """A graph to answer from, the live views and the log of the same snapshot, and the position."""

    def __init__(self, graph: Graph, snapshot: Snapshot, position: int | None) -> None:
        self.graph = graph
        self.snapshot = snapshot
        self.position = position
        """The position asked for with asOf; None for now."""

    @property
    def live(self) -> LmdbGraph:
        """The live views: they know every stream ever created under a name."""
        return self.snapshot.graph

    @property
    def log(self) -> LogReader:
        """The log, read in the same snapshot as the live views."""
        return self.snapshot.log

    @property
    def answered(self) -> int | UnsetType:
        """What an answer says in `asOf`: the position it was read at when asked as of a moment
        (one past the head clamped to it), UNSET for now."""
        return UNSET if self.position is None else self.position

    @property
    def is_past(self) -> bool:
        """Whether the graph is a past one (asOf before the head)."""
        return self.graph is not self.snapshot.graph


class Timeline:
    """Resolves asOf for the reads of one store."""

    def __init__(self, log: EventLog, views: Views) -> None:
        self.log = log
        self.views = views
        self._past: OrderedDict[int, DictGraph] = OrderedDict()
        self._erasures = 0
        """The log's erasure count when the past graphs were folded."""

    @contextmanager
    def at(self, tool: str, as_of: Any = UNSET) -> Iterator[Moment]:
        """The graph as of `as_of` (UNSET: now), inside one read snapshot.

        Raises:
            InvalidArgumentsError: If `as_of` is neither a position nor an ISO-8601 time.
        """
        with self.views.snapshot() as snapshot:
            if as_of is UNSET:
                yield Moment(snapshot.graph, snapshot, None)
                return
            try:
                position = position_of(snapshot.log, as_of)
            except ValueError as error:
                raise InvalidArgumentsError(tool, f"asOf: {error}") from None
            erasures = snapshot.log.erasures()
            if erasures != self._erasures:  # a past graph may hold what was forgotten since
                self._past.clear()
                self._erasures = erasures
            graph = snapshot.graph if position == snapshot.graph.position else self._graph_at(position)
            yield Moment(graph, snapshot, position)

    def past_the_end(self, as_of: int | str) -> str | None:
        """What a reader should be told when `as_of` lies past the end of the log (a position
        after the head, a time still to come): the answer is the graph where the log ends, and
        this says where that is. None for a moment the log reaches, or one that is no moment
        (the read itself says what is wrong with it)."""
        with self.views.snapshot() as snapshot:
            log = snapshot.log
            head = log.head()
            position = as_of if isinstance(as_of, int) else written_position(as_of)
            if position is not None:
                if position <= head:
                    return None
                asked = f"position {position:,} is past the end of the log"
            else:
                assert isinstance(as_of, str)
                try:
                    if clock.parse_iso(as_of) <= clock.now_us():
                        return None
                except ValueError:
                    return None
                asked = f"{as_of.strip()} has not happened yet"
            if not head:
                return f"{asked}: the log is empty"
            return (f"{asked}: it ends at position {head:,} ({clock.isoformat(log.last_recorded_at())}), "
                    "so this is the graph as it stands there")

    def _graph_at(self, position: int) -> DictGraph:
        graph = self._past.get(position)
        if graph is None:
            graph = self._past[position] = graph_as_of(self.log, position, self.views.snapshots)
            while len(self._past) > KEPT:
                self._past.popitem(last=False)
        else:
            self._past.move_to_end(position)
        return graph
