"""`chronograph suggest`: what to clean up in a workspace, as tables or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.tools.cli import main as cli


def fill(store: Path) -> None:
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": ["writes the notes", "writes the notes."]}]},
            actor="t")


def test_it_prints_json_of_a_workspace_that_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path / "store")
    assert cli(["suggest", "--store", str(tmp_path / "store"), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert set(found) == {"merges", "duplicateObservations", "possiblyStale"}


def test_a_misspelt_workspace_is_refused_naming_the_workspaces_there_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path / "store")
    assert cli(["suggest", "--store", str(tmp_path / "store"), "--workspace", "team"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("chronograph suggest: there is no workspace 'team' in this store; the workspaces are: "
                            "'default'\n")
