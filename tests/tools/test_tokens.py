"""tools/tokens.py (`chronograph token`): create prints the token once as its last line; list shows
names, grants and dates, never a secret; revoke; refusals exit 2 and write nothing; both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chronograph.application.engine.stores import open_store
from chronograph.application.engine.tokens import PREFIX, Tokens
from chronograph.server.tokens import USE_FILE
from chronograph.tools.cli import main as chronograph
from chronograph.tools.tokens import main
from freezegun import freeze_time


def where(backend_store: dict[str, object]) -> list[str]:
    flags = ["--store", str(backend_store["store"])]
    return [*flags, "--cache", str(backend_store["cache"])] if "cache" in backend_store else flags


def head(backend_store: dict[str, object]) -> int:
    store = open_store(str(backend_store["store"]), cache=backend_store.get("cache"))  # type: ignore[arg-type]
    try:
        return store.log.head()
    finally:
        store.log.close()
        if store.cache is not None:
            store.cache.close()


def test_create_prints_the_token_once_as_the_last_line_and_it_works(
        backend_store: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["create", "alice", "--grant", "work=write", "--grant", "*=read", "--expires", "90d",
                 *where(backend_store)]) == 0
    out, err = capsys.readouterr()
    secret = out.splitlines()[-1]
    assert secret.startswith(PREFIX) and out.count(secret) == 1 and secret not in err
    assert "alice" in err and "work=write" in err
    store = open_store(str(backend_store["store"]), cache=backend_store.get("cache"))  # type: ignore[arg-type]
    try:
        principal = Tokens(store.log).principal(secret)
    finally:
        store.log.close()
        if store.cache is not None:
            store.cache.close()
    assert principal is not None and principal.name == "alice" and principal.may("work", "write")


def test_list_shows_names_grants_and_dates_never_a_secret(
        backend_store: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    with freeze_time("2026-11-25T10:00:00Z"):
        assert main(["create", "bob", "--grant", "w=read", "--expires", "2d", *where(backend_store)]) == 0
        assert main(["create", "alice", "--grant", "*=admin", *where(backend_store)]) == 0
        secrets = capsys.readouterr().out.split()
        assert main(["revoke", "bob", *where(backend_store)]) == 0
    capsys.readouterr()
    assert main(["list", "--json", *where(backend_store)]) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["name"], r["grants"], r["expires"], r["revoked"]) for r in rows] == [
        ("alice", {"*": "admin"}, None, None),
        ("bob", {"w": "read"}, "2026-11-27T10:00:00.000000Z", "2026-11-25T10:00:00.000000Z")]
    assert rows[0]["created"] == "2026-11-25T10:00:00.000000Z" and rows[0]["lastUsed"] is None
    assert main(["list", *where(backend_store)]) == 0
    table = capsys.readouterr().out
    assert "alice" in table and "*=admin" in table and "never" in table and "last used" in table
    for secret in secrets:
        assert secret[len(PREFIX):] not in out + table


@pytest.mark.parametrize(("argv", "says"), [
    (["create", "alice"], "at least one --grant"),
    (["create", "alice", "--grant", "work=owner"], "LEVEL one of read, write, admin"),
    (["create", "alice", "--grant", "work"], "WORKSPACE=LEVEL"),
    (["create", "alice", "--grant", "*=read", "--expires", "forever"], "--expires 'forever'"),
    (["create", "alice", "--grant", "*=read", "--expires", "5000000d"], "at most 36500d"),
    (["create", "alice", "--grant", "*=read", "--expires", "999999999w"], "at most 36500d"),
    (["create", "has space", "--grant", "*=read"], "name 'has space'"),
    (["create", "taken", "--grant", "*=read"], "a token named 'taken' exists"),
    (["revoke", "nobody"], "no token is named 'nobody'"),
    (["revoke"], "revoke needs the token's NAME"),
    (["list", "alice"], "list takes no NAME"),
    (["revoke", "taken", "--grant", "*=read"], "--grant and --expires are for create"),
])
def test_a_refusal_says_why_exits_2_and_writes_nothing(
        backend_store: dict[str, object], capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> None:
    assert main(["create", "taken", "--grant", "*=read", *where(backend_store)]) == 0
    before = head(backend_store)
    capsys.readouterr()
    assert main([*argv, *where(backend_store)]) == 2
    out, err = capsys.readouterr()
    assert says in err and out == ""
    assert head(backend_store) == before


def test_the_chronograph_command_has_token_with_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        chronograph(["token", "--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    assert "--grant WORKSPACE=LEVEL" in shown and "--expires DURATION" in shown


def test_list_shows_when_a_server_of_the_store_folder_last_saw_a_token(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    assert main(["create", "alice", "--grant", "*=read", "--store", str(store)]) == 0
    (store / USE_FILE).write_text(json.dumps({"alice": 1_764_064_800_000_000}))
    capsys.readouterr()
    assert main(["list", "--json", "--store", str(store)]) == 0
    assert json.loads(capsys.readouterr().out)["lastUsed"] == "2025-11-25T10:00:00.000000Z"


def test_a_token_created_where_there_was_no_store_says_a_store_was_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped --store made a store silently and issued the token there, which no server of
    the real store accepts."""
    assert main(["create", "carol", "--grant", "w=read", "--store", str(tmp_path / "typo")]) == 0
    assert "there was no store at" in capsys.readouterr().err
    assert main(["create", "dave", "--grant", "w=read", "--store", str(tmp_path / "typo")]) == 0
    assert "there was no store at" not in capsys.readouterr().err
