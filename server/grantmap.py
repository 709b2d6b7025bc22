"""What an OAuth issuer's access token may do here: a map from subjects and scopes to grants.

`chronograph serve --http --auth-issuer URL --audience URL --auth-map FILE` reads it. A
TOML (or JSON) file with two tables, each naming grants as `workspace = level` (`*` for
every workspace; level read, write or admin), and the scope a 401 asks clients to request:

    requested = "chronograph:read team-a:write"   # the 401's scope="..." (RFC 6750 §3)

    [scopes]                                  # a token's `scope` (or `scp`) values
    "chronograph:read" = { "*" = "read" }
    "team-a:write" = { "team-a" = "write" }

    [subjects]                                # a token's `sub`; "*" is every subject
    "alice@example.com" = { "*" = "admin" }

A token gets, per workspace, the highest level any of its scopes or its subject grants
(and `*`'s entry under subjects). Its principal is named `oauth:<sub>`: apart from every
Chronograph token's name, so no issuer's user can pass for one in the audit. A token that
maps to no grant is still authenticated: the core refuses each call with FORBIDDEN, naming
the workspace and the grant needed. Without a file, `DEFAULT_MAP` applies: the scopes
chronograph:read, chronograph:write and chronograph:admin grant that level everywhere, and
a 401 asks for chronograph:write (reading and writing, not erasing: an administrator's
client asks its issuer for chronograph:admin itself).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec
from chronograph.application.engine.principal import LEVELS, Level, Principal

__all__ = ["DEFAULT_MAP", "EVERY_SUBJECT", "PRINCIPAL_PREFIX", "GrantMap", "load_grant_map", "token_scopes"]

PRINCIPAL_PREFIX = "oauth:"
"""Before the subject, in the name of an access token's principal."""

EVERY_SUBJECT = "*"
"""A subject entry that applies to every subject the issuer vouches for."""

_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*")
"""A scope as RFC 6749 §3.3 spells it: tokens of printable ASCII but `"` and `\\`, one space apart."""


class GrantMap(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Grants by scope and by subject: scope or subject -> workspace (or `*`) -> level."""

    scopes: dict[str, dict[str, Level]] = msgspec.field(default_factory=dict)
    subjects: dict[str, dict[str, Level]] = msgspec.field(default_factory=dict)
    requested: str = ""
    """The scope a 401 asks clients to request (none: they ask for every scope of the metadata)."""

    def grants(self, subject: str, scopes: Iterable[str]) -> dict[str, Level]:
        """The highest level per workspace that `subject` and its `scopes` are granted."""
        found: dict[str, Level] = {}
        entries = [self.scopes.get(scope, {}) for scope in scopes]
        entries += [self.subjects.get(subject, {}), self.subjects.get(EVERY_SUBJECT, {})]
        for entry in entries:
            for workspace, level in entry.items():
                if workspace not in found or LEVELS.index(level) > LEVELS.index(found[workspace]):
                    found[workspace] = level
        return found

    def principal(self, claims: Mapping[str, Any]) -> Principal:
        """The principal of a verified token's `claims` (its `sub` is required)."""
        subject = str(claims["sub"])
        return Principal(PRINCIPAL_PREFIX + subject, self.grants(subject, token_scopes(claims)))


DEFAULT_MAP = GrantMap(scopes={f"chronograph:{level}": {"*": level} for level in LEVELS},
                       requested="chronograph:write")
"""Without a map file: chronograph:read, chronograph:write, chronograph:admin, everywhere."""


def token_scopes(claims: Mapping[str, Any]) -> list[str]:
    """A token's scopes: `scope`, space-separated (RFC 9068), or `scp`, a list or a string
    (as some issuers write it)."""
    found: list[str] = []
    for claim in ("scope", "scp"):
        value = claims.get(claim)
        if isinstance(value, str):
            found += value.split()
        elif isinstance(value, list):
            found += [item for item in value if isinstance(item, str)]
    return found


def load_grant_map(path: Path) -> GrantMap:
    """The map in the TOML (or, named *.json, JSON) file at `path`.

    Raises:
        ValueError: If it cannot be read or is not a map, saying what is wrong where.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read the grant map {path}: {error}") from None
    try:
        raw = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except ValueError as error:  # tomllib.TOMLDecodeError and json.JSONDecodeError both are
        raise ValueError(f"the grant map {path} is not valid {path.suffix.lstrip('.') or 'TOML'}: {error}") from None
    try:
        found = msgspec.convert(raw, GrantMap)
    except msgspec.ValidationError as error:
        raise ValueError(f"the grant map {path} is not a map of [scopes] and [subjects] to grants "
                         f"(workspace = \"read\"|\"write\"|\"admin\"): {error}") from None
    if any(not name for entries in (found.scopes, found.subjects) for grant in entries.values() for name in grant):
        raise ValueError(f"the grant map {path} names an empty workspace; use \"*\" for every workspace")
    if found.requested and not _SCOPE.fullmatch(found.requested):
        raise ValueError(f"the grant map {path}: requested = {found.requested!r} is not an OAuth scope "
                         "(printable ASCII but \" and \\, one space between scopes)")
    return found
