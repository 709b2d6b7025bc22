"""The grant map: what an issuer's access token may do here, by its subject and scopes."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application.engine.principal import Principal
from chronograph.server.grantmap import DEFAULT_MAP, GrantMap, load_grant_map, token_scopes

MAP = """
[scopes]
"memory:read" = { "*" = "read" }
"team-a:write" = { "team-a" = "write" }

[subjects]
"alice@example.com" = { "*" = "admin" }
"*" = { "public" = "read", "team-a" = "read" }
"""


def test_a_token_gets_the_highest_level_its_scopes_and_subject_grant_per_workspace(tmp_path: Path) -> None:
    (tmp_path / "grants.toml").write_text(MAP)
    grants = load_grant_map(tmp_path / "grants.toml")
    assert grants.principal({"sub": "bob", "scope": "memory:read team-a:write"}) == Principal(
        "oauth:bob", {"*": "read", "team-a": "write", "public": "read"})
    assert grants.principal({"sub": "alice@example.com"}).grants == {"*": "admin", "public": "read", "team-a": "read"}


def test_every_subject_s_entry_applies_to_a_token_with_no_scope_of_the_map(tmp_path: Path) -> None:
    (tmp_path / "grants.toml").write_text(MAP)
    assert load_grant_map(tmp_path / "grants.toml").principal({"sub": "eve", "scope": "openid"}).grants == {
        "public": "read", "team-a": "read"}


def test_a_map_may_be_json(tmp_path: Path) -> None:
    (tmp_path / "grants.json").write_text('{"subjects": {"ci": {"builds": "write"}}}')
    assert load_grant_map(tmp_path / "grants.json") == GrantMap(subjects={"ci": {"builds": "write"}})


def test_scopes_are_read_from_scope_or_scp() -> None:
    assert token_scopes({"scope": "a b"}) == ["a", "b"]
    assert token_scopes({"scp": ["a", "b"]}) == ["a", "b"]
    assert token_scopes({"scp": "a"}) == ["a"]
    assert token_scopes({"scope": 3}) == []


def test_without_a_map_the_chronograph_scopes_grant_their_level_everywhere() -> None:
    assert DEFAULT_MAP.principal({"sub": "x", "scope": "chronograph:read"}).grants == {"*": "read"}
    assert DEFAULT_MAP.principal({"sub": "x", "scope": "chronograph:read chronograph:admin"}).grants == {"*": "admin"}
    assert DEFAULT_MAP.principal({"sub": "x"}).grants == {}


def test_a_map_may_say_which_scope_a_401_asks_for(tmp_path: Path) -> None:
    (tmp_path / "grants.toml").write_text('requested = "memory:read team-a:write"\n' + MAP)
    assert load_grant_map(tmp_path / "grants.toml").requested == "memory:read team-a:write"
    assert DEFAULT_MAP.requested == "chronograph:write"


@pytest.mark.parametrize(("text", "says"), [
    ('requested = "a  b"\n', "not an OAuth scope"),
    ('requested = "say \\"hi\\""\n', "not an OAuth scope"),
    ('[scopes]\n"a" = { "*" = "owner" }\n', "read"),
    ('[roles]\n"a" = { "*" = "read" }\n', "roles"),
    ('[scopes]\n"a" = { "" = "read" }\n', "empty workspace"),
    ("[scopes\n", "not valid"),
])
def test_a_map_that_is_not_one_is_refused_saying_why(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "grants.toml").write_text(text)
    with pytest.raises(ValueError, match=says):
        load_grant_map(tmp_path / "grants.toml")
