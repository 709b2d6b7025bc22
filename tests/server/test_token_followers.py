"""Servers sharing one PostgreSQL log: a token issued or revoked through one is known to the others
as soon as their followers fold it (within a second: the follower looks at least once a second)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.engine.tokens import Tokens
from chronograph.server.config import Settings
from chronograph.server.runtime import Runtime
from chronograph.server.tokens import StoreTokens, store_tokens
from support.postgres import database

pytest.importorskip("psycopg")
BOUND = 10.0
"""Seconds a wait may take before the test fails (it bounds a failure; no duration is asserted)."""


def authenticator(memory: Memory, url: str) -> StoreTokens:
    return store_tokens(Runtime.over(memory, Settings(store=url, embeddings="off")))


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, "the other server never saw it"
        time.sleep(0.01)


def test_a_token_revoked_on_one_server_is_refused_by_the_other_once_its_follower_folds_it(tmp_path: Path) -> None:
    url = database().log_url()
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        a.follow()
        b.follow()
        on_a, on_b = authenticator(a, url), authenticator(b, url)
        secret = Tokens.of(a).issue("alice", {"*": "write"})
        assert on_a.authenticate(secret) is not None
        until(lambda: on_b.authenticate(secret) is not None)
        Tokens.of(a).revoke("alice")
        until(lambda: on_b.authenticate(secret) is None)
        until(lambda: on_a.authenticate(secret) is None)
        assert on_b.any()


def test_a_server_whose_follower_has_not_looked_yet_reads_the_tokens_from_the_log(tmp_path: Path) -> None:
    url = database().log_url()
    with Memory(url, cache=tmp_path / "a") as a:
        secret = Tokens.of(a).issue("alice", {"*": "read"})
    with Memory(url, cache=tmp_path / "b") as b:  # no follower: `followed` is 0
        on_b = authenticator(b, url)
        assert on_b.any() and on_b.authenticate(secret) is not None
