"""Valid time, the second axis: when a fact was true in the world, beside when the memory
learned it (the log's own time, which `asOf` travels).

Observations (given with `validFrom` / `validUntil` to add_observations) and relations
(to create_relations) may carry the span they were true; `invalidate_observations` and
`invalidate_relations` end it at a time without erasing anything. Reads show what is
valid at `validAt` (default: now) among what the memory knew at `asOf` (default: now),
so the two axes combine. Facts without a valid time are always shown.
"""

from __future__ import annotations

from typing import Annotated, Any

from chronograph.application.engine.arguments import D
from chronograph.application.errors import InvalidArgumentsError
from chronograph.eventstore import clock
from chronograph.projections import EntityRecord, RelationRecord
from msgspec import UNSET, Meta, UnsetType

__all__ = ["VALID_AT", "ValidTime", "moment_of", "hide_invalid", "read_moment", "span_of", "valid_at", "valid_relation"]

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


def hide_invalid(entities: list[Any], records: list[EntityRecord], moment: int) -> None:
    """Leave out of `entities` (the outputs of `records`, in order) the observations not
    valid at `moment`; an entity without valid times is not touched."""
    for out, record in zip(entities, records, strict=True):
        if record.validity and out.observations is not UNSET:
            spans = record.validity
            out.observations = [o for o in out.observations if o not in spans or valid_at(spans[o], moment)]


def valid_relation(record: RelationRecord, moment: int) -> bool:
    """Whether a relation is true at `moment` (one without a valid time always is)."""
    return (record.valid_from is None or record.valid_from <= moment) and (
        record.valid_until is None or moment < record.valid_until)


def read_moment(tool: str, valid_at: Any) -> int:
    """The valid time a read answers for: `validAt`, else now."""
    return clock.now_us() if valid_at is UNSET else moment_of(tool, "validAt", valid_at)


VALID_AT = D(description="Show what was true then (ISO-8601; default: now); asOf says what the memory knew")
