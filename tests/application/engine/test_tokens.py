"""Tokens: issued and revoked as events on their own streams, only a digest kept, the live ones
folded into a view that finds a bearer token's principal."""

from __future__ import annotations

import re

import pytest
from chronograph.application.engine.principal import Principal
from chronograph.application.engine.tokens import (
    PREFIX,
    Tokens,
    digest_of,
    parse_duration,
    parse_grants,
)
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, NotFoundError
from chronograph.eventstore import LmdbLog, clock
from chronograph.eventstore.tokenevents import TokenIssued, TokenRevoked
from freezegun import freeze_time


def test_an_issued_token_stands_for_its_principal_and_its_grants(store: LmdbLog) -> None:
    tokens = Tokens(store)
    secret = tokens.issue("alice", {"work": "write", "*": "read"})
    assert re.fullmatch(PREFIX + r"[A-Za-z0-9_-]{43}", secret)
    assert tokens.principal(secret) == Principal("alice", {"work": "write", "*": "read"})
    assert tokens.principal(secret + "x") is None and tokens.principal("chg_" + "A" * 43) is None
    assert tokens.principal("") is None


def test_the_log_keeps_the_digest_of_a_token_never_the_token(store: LmdbLog) -> None:
    secret = Tokens(store).issue("alice", {"*": "admin"})
    with store.read() as reader:
        (envelope,) = list(reader.all())
        stored = b"".join(reader.stored(1, 1))
    assert isinstance(envelope.event, TokenIssued) and envelope.stream == "token:alice"
    assert envelope.event.digest == digest_of(secret)
    assert secret.encode() not in stored and secret[len(PREFIX):].encode() not in stored


def test_a_revoked_token_is_refused_at_once_by_a_view_that_folded_it_live(store: LmdbLog) -> None:
    issuer, server = Tokens(store), Tokens(store)
    secret = issuer.issue("alice", {"*": "read"})
    assert server.principal(secret) is not None
    issuer.revoke("alice")
    assert server.principal(secret) is None
    with store.read() as reader:
        assert isinstance(list(reader.all())[-1].event, TokenRevoked)


def test_an_expired_token_is_refused(store: LmdbLog) -> None:
    tokens = Tokens(store)
    with freeze_time("2026-11-25T10:00:00Z") as frozen:
        secret = tokens.issue("alice", {"*": "read"}, expires_in=parse_duration("1h"))
        assert tokens.principal(secret) is not None
        frozen.move_to("2026-11-25T10:59:59Z")
        assert tokens.principal(secret) is not None
        frozen.move_to("2026-11-25T11:00:00Z")
        assert tokens.principal(secret) is None
    assert tokens.records()[0].expires == clock.parse_iso("2026-11-25T11:00:00Z")


def test_a_name_is_issued_once_even_after_its_token_was_revoked(store: LmdbLog) -> None:
    tokens = Tokens(store)
    tokens.issue("alice", {"*": "read"})
    with pytest.raises(DuplicateError, match="alice"):
        tokens.issue("alice", {"*": "admin"})
    tokens.revoke("alice")
    head = store.head()
    with pytest.raises(DuplicateError):
        tokens.issue("alice", {"*": "read"})
    with pytest.raises(DuplicateError, match="revoked already"):
        tokens.revoke("alice")
    assert store.head() == head


def test_revoking_an_unknown_token_and_issuing_a_bad_name_write_nothing(store: LmdbLog) -> None:
    tokens = Tokens(store)
    with pytest.raises(NotFoundError, match="zed"):
        tokens.revoke("zed")
    for name in ("", "has space", "-dash", "x" * 65, "new\nline"):
        with pytest.raises(InvalidArgumentsError):
            tokens.issue(name, {"*": "read"})
    assert store.head() == 0


def test_the_view_lists_every_token_with_its_dates_never_a_secret(store: LmdbLog) -> None:
    tokens = Tokens(store)
    with freeze_time("2026-11-25T10:00:00Z"):
        tokens.issue("bob", {"w": "read"}, expires_in=parse_duration("2d"))
        tokens.issue("alice", {"*": "admin"})
    with freeze_time("2026-11-25T12:00:00Z"):
        tokens.revoke("bob")
    alice, bob = tokens.records()
    assert (alice.name, alice.expires, alice.revoked) == ("alice", None, None)
    assert bob.created == clock.parse_iso("2026-11-25T10:00:00Z")
    assert bob.expires == clock.parse_iso("2026-11-27T10:00:00Z")
    assert bob.revoked == clock.parse_iso("2026-11-25T12:00:00Z")
    assert tokens.any()


def test_a_store_without_tokens_has_none(store: LmdbLog) -> None:
    store.append([], actor="a")
    assert not Tokens(store).any()


@pytest.mark.parametrize("given", [[], ["work"], ["work=owner"], ["=read"], ["w=read", "w=write"]])
def test_a_bad_grant_is_refused_with_what_to_say(given: list[str]) -> None:
    with pytest.raises(InvalidArgumentsError, match="grant"):
        parse_grants(given)


def test_grants_and_durations_parse() -> None:
    assert parse_grants(["work=write", " * = read "]) == {"work": "write", "*": "read"}
    assert parse_duration("90d") == 90 * 86400 * 1_000_000
    assert parse_duration("2w") == parse_duration("14d")
    for bad in ("", "0d", "5", "5y", "-1d", "1.5h"):
        with pytest.raises(InvalidArgumentsError, match="expires"):
            parse_duration(bad)


@pytest.mark.parametrize("name", ["local", "token", "Local"])
def test_a_token_may_not_take_a_built_in_principal_s_name(store: LmdbLog, name: str) -> None:
    """The audit's principal must mean one caller: `local` is the stdio and command-line user,
    `token` is $CHRONOGRAPH_TOKEN's."""
    with pytest.raises(InvalidArgumentsError, match="built-in principal"):
        Tokens(store).issue(name, {"w": "write"})
    assert Tokens(store).records() == []
