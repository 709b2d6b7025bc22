"""The clock: microseconds, ISO-8601 both ways."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from chronograph.eventstore import clock
from freezegun import freeze_time
from hypothesis import given
from hypothesis import strategies as st


def test_now_us_reads_the_frozen_clock() -> None:
    with freeze_time("2026-11-21T00:00:01Z"):
        assert clock.now_us() == clock.parse_iso("2026-11-21T00:00:01Z")


def test_isoformat_round_trips_through_parse_iso() -> None:
    us = 1_795_000_000_123_456
    assert clock.parse_iso(clock.isoformat(us)) == us


@given(st.integers(min_value=-62_135_596_800_000_000, max_value=253_402_300_799_999_999))
def test_isoformat_prints_what_datetime_prints_for_any_microsecond(us: int) -> None:
    moment = datetime(1970, 1, 1) + timedelta(microseconds=us)
    assert clock.isoformat(us) == moment.isoformat(timespec="microseconds") + "Z"
    assert clock.parse_iso(clock.isoformat(us)) == us


def test_a_timestamp_without_a_zone_is_utc() -> None:
    assert clock.parse_iso("2026-11-21T10:00:00") == clock.parse_iso("2026-11-21T10:00:00+00:00")


def test_a_date_alone_is_midnight_utc() -> None:
    assert clock.isoformat(clock.parse_iso("2026-11-21")) == "2026-11-21T00:00:00.000000Z"


def test_a_bad_timestamp_says_what_was_expected() -> None:
    with pytest.raises(ValueError, match="not an ISO-8601 timestamp"):
        clock.parse_iso("yesterday")
