"""Valid time, the second axis: when a fact was true in the world, beside when the memory
learned it (the log's own time, which `asOf` travels).

Observations (given with `validFrom` / `validUntil` to add_observations) and relations
(to create_relations) may carry the span they were true; `invalidate_observations` and
`invalidate_relations` end it at a time without erasing anything. Reads show what is
valid at `validAt` (default: now) among what the memory knew at `asOf` (default: now),
so the two axes combine. Facts without a valid time are always shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Annotated, Any

from chronograph.application.engine.arguments import D
from chronograph.application.engine.outputs import keep_observations
from chronograph.application.errors import InvalidArgumentsError
from chronograph.eventstore import ObservationsAdded, clock
from chronograph.projections import EntityRecord, RelationRecord
from msgspec import UNSET, Meta, UnsetType

__all__ = [
    "VALID_AT",
    "Span",
    "ValidTime",
    "additions",
    "hide_invalid",
    "moment_of",
    "observations_at",
    "read_moment",
    "relation_span",
    "restated",
    "span_of",
    "statement",
    "valid_at",
    "valid_relation",
]

ValidTime = Annotated[str, Meta(min_length=1, max_length=64)]
Span = tuple[int | None, int | None]


def moment_of(tool: str, field: str, text: str) -> int:
    """An ISO-8601 time as µs.

    Raises:
        InvalidArgumentsError: Naming `field`, if `text` is not ISO-8601.
    """
    try:
        return clock.parse_iso(text)
    except ValueError as error:
        raise InvalidArgumentsError(tool, f"{field}: {error}") from None


def span_of(tool: str, where: str, valid_from: Any, valid_until: Any) -> tuple[int | UnsetType, int | UnsetType]:
    """validFrom / validUntil as µs (UNSET where not given), checked to be in order."""
    start = UNSET if valid_from is UNSET else moment_of(tool, f"{where}validFrom", valid_from)
    end = UNSET if valid_until is UNSET else moment_of(tool, f"{where}validUntil", valid_until)
    if start is not UNSET and end is not UNSET and end <= start:
        raise InvalidArgumentsError(tool, f"{where}validUntil: {valid_until} is not after validFrom {valid_from}")
    return start, end


def valid_at(span: Span, at: int) -> bool:
    """Whether a fact with this span is true at `at`."""
    start, end = span
    return (start is None or start <= at) and (end is None or at < end)


def relation_span(relation: RelationRecord) -> Span | None:
    """The span `relation` holds (None: none, true at every time)."""
    return None if relation.valid_from is None and relation.valid_until is None else (
        relation.valid_from, relation.valid_until)


def restated(held: Span | None, span: Span, now: int) -> Span | None:
    """The span a fact the memory holds (with the span `held`; None: none, true at every time)
    takes when it is stated again with `span` at `now`; None when the statement says nothing the
    held span does not (then nothing is written, so stating a fact twice writes nothing).

    A statement without a span says the fact is true now: it is stated again (without a span) only
    when its held span does not hold now (it ended, or has not begun). A statement with a span is
    stated again when that span reaches outside the held one: where the two meet (overlap or touch)
    the fact keeps their union; where they do not, the later of the two (a fact has one span; its
    history keeps the other), unless the held span holds now: a statement about a later time never
    ends a fact true now, as one about an earlier time than the held span's changes nothing.
    """
    if held is None:
        return None
    start, end = span
    if start is None and end is None:
        return None if valid_at(held, now) else span
    held_start, held_end = held
    if (held_start is None or (start is not None and held_start <= start)) and (
            held_end is None or (end is not None and end <= held_end)):
        return None  # within the held span
    if (start is None or held_end is None or start <= held_end) and (
            held_start is None or end is None or held_start <= end):
        return (None if start is None or held_start is None else min(start, held_start),
                None if end is None or held_end is None else max(end, held_end))
    if held_end is not None and start is not None and start >= held_end:
        return None if valid_at(held, now) else span  # what holds now is kept over a later span
    return None


def statement(record: EntityRecord, held: set[str], text: str, span: Span, now: int) -> Span | None:
    """The span `text` gets when stated of `record` (whose observations are `held`) with `span` at
    `now`: `span` for a text it does not hold, what `restated` says for one it does (None: not
    written)."""
    if text not in held:
        return span
    return restated(record.validity.get(text), span, now)


def additions(stated: Sequence[tuple[str, Span]], moved_from: str | UnsetType = UNSET) -> list[ObservationsAdded]:
    """The events that state `stated` (texts with their spans) in their order: each run of one span
    in one event carrying it (one without a span: none)."""
    events = []
    for (start, end), run in groupby(stated, key=lambda item: item[1]):
        events.append(ObservationsAdded(observations=tuple(text for text, _ in run),
                                        valid_from=UNSET if start is None else start,
                                        valid_until=UNSET if end is None else end, moved_from=moved_from))
    return events


def hide_invalid(entities: list[Any], records: list[EntityRecord], moment: int) -> None:
    """Leave out of `entities` (the outputs of `records`, in order) the observations not
    valid at `moment`; an entity without valid times is not touched."""
    for out, record in zip(entities, records, strict=True):
        if record.validity and out.observations is not UNSET:
            spans = record.validity
            keep_observations(out, [o for o in out.observations if o not in spans or valid_at(spans[o], moment)])


def observations_at(record: EntityRecord, moment: int) -> list[str]:
    """The observations of `record` true at `moment`, in order (those without a valid time always are)."""
    spans = record.validity
    if not spans:
        return record.observations
    return [o for o in record.observations if o not in spans or valid_at(spans[o], moment)]


def valid_relation(record: RelationRecord, moment: int) -> bool:
    """Whether a relation is true at `moment` (one without a valid time always is)."""
    return (record.valid_from is None or record.valid_from <= moment) and (
        record.valid_until is None or moment < record.valid_until)


def read_moment(tool: str, valid_at: Any) -> int:
    """The valid time a read answers for: `validAt`, else now."""
    return clock.now_us() if valid_at is UNSET else moment_of(tool, "validAt", valid_at)


VALID_AT = D(description="Show what was true then (ISO-8601; default: now); asOf says what the memory knew")
