"""Project roots as n2n names them: a store's folder is no project, refused before anything
is created in it."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application.errors import InvalidArgumentsError
from chronograph.application.surfaces.projectroot import ProjectChangedError, project_workspace, resolve_project
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


def test_a_project_whose_folder_was_replaced_at_the_same_path_is_refused_when_pinned(tmp_path: Path) -> None:
    """The same real path, another folder (moved aside, a new one made): not the project resolved."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    project = resolve_project("n2n_read_graph", str(root))
    root.rename(tmp_path / "elsewhere")
    (root / ".git").mkdir(parents=True)
    with pytest.raises(ProjectChangedError, match="changed while the call ran"), project.pinned("n2n_read_graph"):
        pass


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="a folder reached through its descriptor: Linux")
def test_a_pinned_project_is_reached_through_its_descriptor_whatever_is_put_at_its_path(tmp_path: Path) -> None:
    root, other = tmp_path / "repo", tmp_path / "other"
    for folder in (root, other):
        (folder / ".git").mkdir(parents=True)
    project = resolve_project("n2n_read_graph", str(root))
    with project.pinned("n2n_read_graph") as pinned:
        root.rename(tmp_path / "moved")
        root.symlink_to(other, target_is_directory=True)
        (pinned / "written.md").write_text("here\n")
    assert (tmp_path / "moved" / "written.md").is_file() and not (other / "written.md").exists()
