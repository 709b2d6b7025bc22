"""The team memory kept in memory by one process, caught up from the log before each use.

A command folds the events it decides straight into the live state (so later steps of
the same call see them) and marks it dirty; if its transaction does not commit, the
state is thrown away and folded again from the log at the next use. A past state is
folded afresh up to its position; the last few are kept.

Whatever the view holds (states, and the embeddings of entries semantic queries needed) is
dropped when the log's erasure count moved since it was filled: a forgotten entry may be in it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from chronograph.eventstore import LogReader
from chronograph.projections.team.state import TeamState, fold

__all__ = ["TeamView"]

KEPT = 2
"""Past team states kept in memory."""


class TeamView:
    """The team state of one store, for one process."""

    def __init__(self) -> None:
        self._state = TeamState()
        self._past: OrderedDict[int, TeamState] = OrderedDict()
        self.dirty = False
        """Whether a command folded events into the state that are not yet known to be stored."""
        self.vectors: dict[str, tuple[int, Any]] = {}
        """entry id -> (version, embedding) of the entries semantic queries have needed"""
        self._erasures = 0

    def _erased(self, log: LogReader) -> None:
        """Drop everything held if the log erased content since it was filled."""
        erasures = log.erasures()
        if erasures != self._erasures:
            self._erasures = erasures
            self._past.clear()
            self.vectors.clear()
            self.discard()

    def current(self, log: LogReader) -> TeamState:
        """The state at `log`'s head (which must be at least where the state is, unless dirty)."""
        self._erased(log)
        if self.dirty or log.head() < self._state.position:
            self.discard()
        head = log.head()
        if head > self._state.position:
            fold(self._state, log.all(self._state.position + 1, head))
        return self._state

    def at(self, log: LogReader, position: int) -> TeamState:
        """The state as it stood at `position` of `log`."""
        self._erased(log)
        state = self._past.get(position)
        if state is None:
            state = TeamState()
            fold(state, log.all(1, position))
            self._past[position] = state
            while len(self._past) > KEPT:
                self._past.popitem(last=False)
        else:
            self._past.move_to_end(position)
        return state

    def committed(self) -> None:
        """The command that folded into the state committed: the state is the log's."""
        self.dirty = False

    def discard(self) -> None:
        """Throw the state away: it is folded again from the log at the next use."""
        self._state = TeamState()
        self.dirty = False
