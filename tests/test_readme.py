"""The README's tools table is the registry's: every tool of the default profile, every argument."""

from __future__ import annotations

import re
from pathlib import Path

from chronograph.application import PROFILES
from chronograph.server.jsonschema import json_schema

README = Path(__file__).resolve().parent.parent / "README.md"
SHARED = {"workspace", "requestId"}
"""Arguments the README explains once, above the table."""


def table() -> dict[str, set[str]]:
    """tool -> the top-level arguments its row names."""
    rows: dict[str, set[str]] = {}
    in_table = False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("| tool | input |"):
            in_table = True
            continue
        if in_table and not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if in_table and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = set(re.findall(r"`([A-Za-z_]+)", cells[1]))
    return rows


def test_every_tool_of_the_default_profile_has_a_row_and_no_other_does() -> None:
    assert set(table()) == set(PROFILES["chronograph"].tools.names())


def test_every_row_names_every_argument_of_its_tool() -> None:
    rows = table()
    for tool in PROFILES["chronograph"].tools:
        arguments = set(json_schema(tool.arguments).get("properties", {})) - SHARED
        assert arguments == rows[tool.name], tool.name
