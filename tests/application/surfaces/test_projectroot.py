"""Project roots as n2n names them: a store's folder is no project, refused before anything
is created in it."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application.errors import InvalidArgumentsError
from chronograph.application.surfaces.projectroot import project_workspace
from chronograph.eventstore import LmdbLog


@pytest.mark.parametrize("inside", ["", "sub"])
def test_a_folder_in_a_store_is_refused_as_a_project_before_its_mcp_folder_is_made(
        tmp_path: Path, inside: str) -> None:
    store = tmp_path / "store"
    LmdbLog(store).close()
    root = store / inside
    (root / ".git").mkdir(parents=True)
    before = sorted(p.name for p in root.iterdir())
    with pytest.raises(InvalidArgumentsError, match="lies inside the store at"):
        project_workspace("n2n_add_entities", str(root), confirmed=str(root))
    assert sorted(p.name for p in root.iterdir()) == before
