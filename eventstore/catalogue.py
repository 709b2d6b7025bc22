"""Every event class a store decodes by default: the graph's and the team memory's."""

from __future__ import annotations

from chronograph.eventstore.events import GRAPH_EVENTS, Event
from chronograph.eventstore.teamevents import TEAM_EVENTS

__all__ = ["CATALOGUE"]

CATALOGUE: tuple[type[Event], ...] = (*GRAPH_EVENTS, *TEAM_EVENTS)
"""Every event class the store decodes by default, in the order they were introduced."""
