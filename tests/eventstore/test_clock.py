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


@given(st.integers(min_value=clock.FIRST_US, max_value=clock.LAST_US))
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


@pytest.mark.parametrize("text", [
    "0001-01-01T00:00:00+14:00", "9999-12-31T23:00:00-14:00", "0001-01-01T13:59:59+14:00"])
def test_a_timestamp_whose_utc_moment_lies_outside_the_years_1_to_9999_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="outside the years 1 to 9999"):
        clock.parse_iso(text)


def test_the_first_and_last_moments_of_the_years_1_to_9999_are_taken() -> None:
    assert clock.parse_iso("0001-01-01T14:00:00+14:00") == clock.FIRST_US
    assert clock.parse_iso("9999-12-31T23:59:59.999999Z") == clock.LAST_US


@given(st.integers(min_value=-800_000, max_value=3_000_000))
def test_any_day_is_printed_as_its_proleptic_gregorian_date(days: int) -> None:
    expected = None
    try:
        expected = (datetime(1970, 1, 1) + timedelta(days=days)).date().isoformat()
    except OverflowError:
        pass
    if expected is not None:
        assert clock._civil(days) == expected


def test_a_moment_stored_before_the_years_were_checked_is_printed_all_the_same() -> None:
    assert clock.isoformat(clock.FIRST_US - 1) == "0000-12-31T23:59:59.999999Z"
    assert clock.isoformat(clock.LAST_US + 1) == "10000-01-01T00:00:00.000000Z"
