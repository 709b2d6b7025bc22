"""Where the projects whose files are kept are, remembered beside the views: a later process
asked to change a project's workspace by its name alone finds the files, and a forget's answer
says what it did with them, or why it could not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import PROFILES, Memory
from chronograph.application.surfaces import knownprojects, projectfiles
from chronograph.application.surfaces.projectroot import workspace_name

N2N = PROFILES["n2n"].tools


def kept(memory: Memory, *, always: bool) -> None:
    files = projectfiles.ProjectFiles(always=always)
    memory.before_call.append(files.before)
    memory.after_write.append(files.after)


def served(store: Path, root: Path, *, always: bool = True, asks: bool = False) -> None:
    """A session of an n2n server that wrote a secret into the project at `root` (adopted by it;
    its marker asking for the project's files when `asks`)."""
    (root / ".git").mkdir(parents=True)
    with Memory(store, sync=False) as memory:
        kept(memory, always=always)
        arguments: dict[str, Any] = {"projectPath": str(root), "confirmNewProjectRoot": str(root)}
        memory.call(N2N["n2n_read_graph"], arguments, actor="agent")  # adopts the root
        if asks:
            marker = root / ".mcp" / "chronograph.json"
            marker.write_text(json.dumps({**json.loads(marker.read_text()), "projectFiles": True}))
        memory.write(N2N["n2n_add_entities"], {**arguments, "entities": [
            {"name": "Zqx Secret", "entityType": "PERSON", "observations": ["zqx phone"]}]}, actor="agent")
    assert "Zqx Secret" in (root / ".mcp" / "memory.json").read_text()


def forget(store: Path, root: Path, *, always: bool = True) -> Any:
    """forget_entity in the project's workspace, in a new process that keeps project files."""
    with Memory(store, sync=False) as memory:
        kept(memory, always=always)
        return memory.write("forget_entity", {"workspace": workspace_name(root), "name": "Zqx Secret",
                                              "reason": "asked"}, actor="dpo").output


def test_a_project_s_root_is_recorded_by_the_process_that_served_it_and_read_back_by_the_next(tmp_path: Path) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root)
    with Memory(tmp_path / "store", sync=False) as memory:
        assert knownprojects.recall(memory, workspace_name(root)) == root
        assert knownprojects.recall(memory, "n2n:other:0123456789abcdef") is None


def test_a_project_whose_marker_asks_for_its_files_has_them_rewritten_by_a_forget_in_a_later_process(
        tmp_path: Path) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root, always=False, asks=True)
    out = forget(tmp_path / "store", root, always=False)
    assert out.elsewhere == [] and "zqx" not in (root / ".mcp" / "memory.json").read_text().lower()


def test_a_project_whose_marker_no_longer_asks_for_its_files_keeps_them_and_the_forget_says_so(
        tmp_path: Path) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root, always=False, asks=True)
    marker = root / ".mcp" / "chronograph.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "projectFiles": False}))
    [note] = forget(tmp_path / "store", root, always=False).elsewhere
    assert "was not rewritten" in note and "Zqx Secret" in (root / ".mcp" / "memory.json").read_text()


def test_a_forget_whose_project_file_cannot_be_written_answers_with_the_erasure_done_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root)
    monkeypatch.setattr(projectfiles, "FILE_LIMIT", 10)
    out = forget(tmp_path / "store", root)
    assert out.scrubbed and out.entities == 1
    [note] = out.elsewhere
    assert "was not rewritten" in note and "could not rewrite them" in note and "past the 10" in note
