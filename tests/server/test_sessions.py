"""Counting MCP sessions per address: the least recently used idle one makes room."""

from __future__ import annotations

from chronograph.server.sessions import Sessions
from freezegun import freeze_time


def opened(sessions: Sessions, address: str, session: str) -> None:
    """Open `session` for `address` and answer its opening request."""
    admission = sessions.admit(address)
    assert admission.admitted and not admission.evict
    sessions.opened(address, session)
    sessions.ended(session)


def test_a_new_session_over_the_share_closes_the_least_recently_used_idle_one_of_its_address() -> None:
    sessions = Sessions(per_address=2, total=100, idle=300)
    opened(sessions, "a", "a1")
    opened(sessions, "a", "a2")
    opened(sessions, "b", "b1")
    sessions.began("a1")
    sessions.ended("a1")  # a1 used since a2: a2 is the least recently used
    admission = sessions.admit("a")
    assert admission.admitted and admission.evict == ("a2",)
    assert sessions.held("a") == 2 and sessions.held("b") == 1


def test_openings_under_way_count_and_cannot_be_closed() -> None:
    sessions = Sessions(per_address=2, total=100, idle=300)
    assert sessions.admit("a").admitted and sessions.admit("a").admitted  # both still opening
    refused = sessions.admit("a")
    assert not refused.admitted and "all busy" in refused.reason
    sessions.abandoned("a")  # one opened nothing after all
    assert sessions.admit("a").admitted


def test_a_busy_session_is_never_closed_for_another() -> None:
    sessions = Sessions(per_address=1, total=100, idle=300)
    opened(sessions, "a", "a1")
    sessions.began("a1")  # a listening stream, say
    assert not sessions.admit("a").admitted
    sessions.ended("a1")
    assert sessions.admit("a").evict == ("a1",)


def test_when_the_server_is_full_the_least_recently_used_idle_session_anywhere_makes_room() -> None:
    sessions = Sessions(per_address=5, total=3, idle=300)
    for address, session in (("a", "a1"), ("b", "b1"), ("a", "a2")):
        opened(sessions, address, session)
    admission = sessions.admit("c")
    assert admission.admitted and admission.evict == ("a1",)
    sessions.opened("c", "c1")
    assert sessions.held("a") == 1 and sessions.held("c") == 1


def test_a_refused_opening_closes_nothing() -> None:
    sessions = Sessions(per_address=2, total=2, idle=300)
    opened(sessions, "a", "a1")
    sessions.began("a1")
    assert sessions.admit("b").admitted  # the server's last place, still opening
    assert not sessions.admit("a").admitted  # a's only idle candidate: none; the server: full of busy ones
    sessions.ended("a1")
    assert sessions.admit("a").evict == ("a1",)


def test_sessions_idle_past_the_timeout_are_forgotten() -> None:
    with freeze_time("2026-11-01 10:00:00") as clock:
        sessions = Sessions(per_address=1, total=100, idle=300)
        opened(sessions, "a", "a1")
        clock.tick(301)
        admission = sessions.admit("a")
    assert admission.admitted and admission.evict == ()  # the SDK closed it already
