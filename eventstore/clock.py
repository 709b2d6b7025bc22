"""The one clock of the store, and conversions between its microseconds and ISO-8601.

Every timestamp Chronograph records comes from `now_us`, so tests freeze time by
freezing `datetime` (freezegun) and nothing else.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_TWO_DIGITS = [f"{i:02d}" for i in range(60)]


def now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def now_us() -> int:
    """The current time in integer microseconds since the Unix epoch."""
    return to_us(now())


def to_us(moment: datetime) -> int:
    """Microseconds since the epoch; a naive datetime is taken to be UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


def from_us(us: int) -> datetime:
    """The UTC datetime of `us` microseconds since the epoch."""
    return _EPOCH + timedelta(microseconds=us)


@lru_cache(maxsize=1 << 16)
def isoformat(us: int) -> str:
    """ISO-8601 in UTC with microseconds and a Z: exact, so it round-trips through `parse_iso`.

    Graphs are printed whole, so it is cached (the events of one call share their
    timestamp) and a miss is integer arithmetic, the date cached per day: 0.9 us against
    3.7 us through a datetime.
    """
    seconds, micros = divmod(us, 1_000_000)
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    two = _TWO_DIGITS
    return f"{_day(days)}T{two[hours]}:{two[minutes]}:{two[seconds]}.{str(1_000_000 + micros)[1:]}Z"


@lru_cache(maxsize=4096)
def _day(days: int) -> str:
    return (_EPOCH + timedelta(days=days)).date().isoformat()


def parse_iso(text: str) -> int:
    """Microseconds since the epoch of an ISO-8601 timestamp (a missing zone means UTC).

    Raises:
        ValueError: If `text` is not an ISO-8601 date or timestamp.
    """
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO-8601 timestamp (for example 2026-11-21T14:00:00Z)"
        ) from None
    return to_us(moment)
