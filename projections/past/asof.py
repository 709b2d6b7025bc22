"""Time travel: the graph, or one entity, as it stood at a log position or a timestamp.

The whole graph is the log folded in memory up to the position; one entity is only
its own streams folded, so it costs the same in a log of a thousand or a billion events.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from chronograph.eventstore import EventLog, LogReader, clock
from chronograph.projections.fold import apply_all
from chronograph.projections.past.snapshots import Snapshots, fold_to
from chronograph.projections.records import EntityRecord, RelationRecord
from chronograph.projections.states.dictgraph import DictGraph
from chronograph.projections.states.dictstate import DictState, fold_log
from chronograph.projections.states.graph import Graph

__all__ = ["entity_as_of", "fold_streams", "graph_as_of", "position_of", "relation_as_of", "written_position"]


def written_position(text: str) -> int | None:
    """The log position `text` spells in ASCII digits (spaces around it allowed), else None: `str.isdigit`
    also takes "²", which `int` refuses, so a moment written so read as a failed number. Eight digits
    that are a date in ISO-8601's basic form ("20260301", March 1, as `validAt`, `since` and `until`
    read it) are that date, not a position: a position past 10 million is written as a number, or
    spelled with a digit more or less than a date ("020260301")."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    return None if _basic_date(text) else int(text)


def _basic_date(text: str) -> bool:
    """Whether `text` (ASCII digits) is a calendar date in ISO-8601's basic form, YYYYMMDD."""
    if len(text) != 8:
        return False
    try:
        clock.parse_iso(text)
    except ValueError:
        return False
    return True


def position_of(reader: LogReader, moment: int | str | datetime) -> int:
    """The log position in force at `moment`: a position (int), ISO-8601 text or a datetime.

    Raises:
        ValueError: If `moment` is a negative position or text that is not ISO-8601.
    """
    if isinstance(moment, bool):
        raise ValueError("a moment is a log position or a timestamp, not a boolean")
    if isinstance(moment, int):
        if moment < 0:
            raise ValueError(f"log position {moment} is negative; positions start at 1")
        return min(moment, reader.head())
    if isinstance(moment, datetime):
        return reader.position_at(clock.to_us(moment))
    position = written_position(moment)
    if position is not None:
        return min(position, reader.head())
    return reader.position_at(clock.parse_iso(moment.strip()))


def graph_as_of(log: EventLog, position: int, snapshots: Snapshots | None = None) -> DictGraph:
    """The whole graph as it stood after the event at `position` (from the nearest snapshot)."""
    if snapshots is None:
        return DictGraph(fold_log(log, position))
    return DictGraph(fold_to(log, snapshots, position))


def fold_streams(reader: LogReader, streams: Iterable[str], position: int) -> DictState:
    """Only `streams`, folded up to `position`, their events in the log's order: entities that
    bore one name in turn take it from each other as they did (folded one stream after the
    other, a later stream's creation took the name from an entity that had taken it back since)."""
    state = DictState()
    envelopes = [e for stream in streams for e in reader.stream(stream) if e.position <= position]
    apply_all(state, sorted(envelopes, key=lambda envelope: envelope.position))
    state.position = position
    return state


def entity_as_of(
    reader: LogReader, current: Graph, workspace: str, name: str, position: int
) -> EntityRecord | None:
    """The entity called `name` as it stood at `position`, or None if none was live then.

    `current` (the live views) knows every stream ever created under the name.
    """
    state = fold_streams(reader, current.name_streams(workspace, name), position)
    return state.live_entity(workspace, name)


def relation_as_of(reader: LogReader, stream: str, position: int) -> RelationRecord | None:
    """The relation of `stream` as it stood at `position`, or None if it was not live."""
    return fold_streams(reader, [stream], position).relations.get(stream)
