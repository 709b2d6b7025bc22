"""Every event class a store decodes by default: the graph's, the team memory's, the tokens'."""

from __future__ import annotations

from chronograph.eventstore.events import GRAPH_EVENTS, Event
from chronograph.eventstore.teamevents import TEAM_EVENTS
from chronograph.eventstore.tokenevents import TOKEN_EVENTS

__all__ = ["CATALOGUE"]

CATALOGUE: tuple[type[Event], ...] = (*GRAPH_EVENTS, *TEAM_EVENTS, *TOKEN_EVENTS)
"""Every event class the store decodes by default, in the order they were introduced."""
