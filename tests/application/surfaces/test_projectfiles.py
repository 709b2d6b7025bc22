"""The project files read and written by an n2n server: each opened without following a
link or waiting on a FIFO, checked to be a regular file of bounded size, and every refusal
an `invalid` error naming the file."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.errors import ChronographError
from chronograph.application.surfaces import projectfiles, projectio
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client
from support.fifo import never_waited_on
from support.mcp import ToolFailed, call
from support.projects import SECRET, projects, swap_for_link

pytestmark = pytest.mark.anyio


def server(store: Path, *, mirror: bool = True) -> Client:
    return Client(create_server(Settings(store=store, embeddings="off", profile="n2n", mirror_projects=mirror)))


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


async def adopt(client: Client, root: Path) -> None:
    await call(client, "n2n_add_entities", {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                                            "entities": [{"name": "A", "entityType": "t", "observations": ["o"]}]})


async def refusal(client: Client, root: Path) -> dict[str, str]:
    with pytest.raises(ToolFailed) as failed:
        await call(client, "n2n_read_graph", {"projectPath": str(root)})
    answer: dict[str, str] = json.loads(str(failed.value))
    return answer


@pytest.mark.parametrize("name", ["memory.json", "context.json", "chronograph.json"])
async def test_a_fifo_at_a_project_file_is_refused_as_invalid_naming_it_and_never_waited_on(
        tmp_path: Path, name: str) -> None:
    root = project(tmp_path)
    async with server(tmp_path / "store", mirror=name != "chronograph.json") as client:  # the marker is read
        await adopt(client, root)                                                          # when the server
        (root / ".mcp" / name).unlink(missing_ok=True)                                     # does not mirror all
        with never_waited_on(root / ".mcp" / name):
            answer = await refusal(client, root)
    assert answer["code"] == "invalid"
    assert f".mcp/{name} is not a regular file" in answer["message"]


async def test_a_folder_at_memory_json_is_refused_as_invalid_naming_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    async with server(tmp_path / "store") as client:
        await adopt(client, root)
        (root / ".mcp" / "memory.json").unlink()
        (root / ".mcp" / "memory.json").mkdir()
        answer = await refusal(client, root)
    assert answer["code"] == "invalid" and ".mcp/memory.json is a folder" in answer["message"]


async def test_a_memory_json_past_the_size_cap_is_refused_unread(tmp_path: Path) -> None:
    root = project(tmp_path)
    async with server(tmp_path / "store") as client:
        await adopt(client, root)
        with (root / ".mcp" / "memory.json").open("r+b") as file:
            file.truncate(projectio.FILE_LIMIT + 1)  # sparse: nothing of it is on the disk
        answer = await refusal(client, root)
    assert answer["code"] == "invalid"
    assert ".mcp/memory.json is larger than the 64 MiB a project file may be" in answer["message"]


async def test_a_mirror_past_the_size_cap_is_not_written_so_every_file_written_reads_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path)
    monkeypatch.setattr(projectio, "FILE_LIMIT", 400)
    async with server(tmp_path / "store") as client:
        await adopt(client, root)
        written = (root / ".mcp" / "memory.json").read_bytes()
        with pytest.raises(ToolFailed, match="past the 400 a project file may hold"):
            await call(client, "n2n_add_observations", {"projectPath": str(root), "observations": [
                {"entityName": "A", "contents": ["x" * 400]}]})
        assert (root / ".mcp" / "memory.json").read_bytes() == written
    graph, _ = projectio.read_project_files(root / ".mcp")  # what is there reads back
    assert graph is not None and [e.name for e in graph.entities] == ["A"]


async def test_a_project_past_the_size_cap_still_answers_after_a_restart_and_a_delete_brings_it_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mirror before each call failed too: every call, the deletes that would shrink the
    project included, answered that its change was in the log, and none ran."""
    root = project(tmp_path)
    monkeypatch.setattr(projectio, "FILE_LIMIT", 400)
    async with server(tmp_path / "store") as client:
        await adopt(client, root)
        with pytest.raises(ToolFailed, match="past the 400"):
            await call(client, "n2n_add_observations", {"projectPath": str(root), "observations": [
                {"entityName": "A", "contents": ["x" * 400]}]})
    async with server(tmp_path / "store") as client:  # a new process: it mirrors before the first call
        graph = await call(client, "n2n_read_graph", {"projectPath": str(root)})
        assert "x" * 400 in json.dumps(graph)
        await call(client, "n2n_delete_observations", {"projectPath": str(root), "deletions": [
            {"entityName": "A", "observations": ["x" * 400]}]})
    assert "x" * 400 not in (root / ".mcp" / "memory.json").read_text()


async def test_a_loop_of_links_at_memory_json_is_refused_as_invalid_naming_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    async with server(tmp_path / "store") as client:
        await adopt(client, root)
        (root / ".mcp" / "memory.json").unlink()
        (root / ".mcp" / "memory.json").symlink_to("memory.json")
        answer = await refusal(client, root)
    assert answer["code"] == "invalid" and ".mcp/memory.json" in answer["message"]


def kept(memory: Memory) -> projectfiles.ProjectFiles:
    """Every project's files kept around `memory`'s calls, as `serve --project-files` wires them."""
    files = projectfiles.ProjectFiles(always=True)
    files.install(memory)
    return files


def test_project_files_are_read_and_written_in_the_project_the_call_resolved_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link aimed at the other project each time it is resolved: the hooks resolved it again and
    mirrored the victim's graph into the attacker's own `.mcp/memory.json`."""
    with Memory(tmp_path / "store", sync=False) as memory:
        kept(memory)
        two = projects(memory, tmp_path)
        theirs = (two.victim / ".mcp" / "memory.json").read_bytes()
        two.flipped_at_every_resolution(monkeypatch)
        two.read("n2n_get_graph_summary", {})
        two.aim(two.mine)  # each call starts with the link at its own project
        two.write("n2n_add_entities", {"entities": [{"name": "Planted", "entityType": "t", "observations": []}]})
        two.aim(two.mine)
        two.read("n2n_read_graph", {})
        ours = (two.mine / ".mcp" / "memory.json").read_text()
        assert SECRET not in ours and "Planted" in ours
        assert (two.victim / ".mcp" / "memory.json").read_bytes() == theirs


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_project_folder_swapped_after_the_check_has_its_files_neither_read_nor_written(
        tmp_path: Path, when: str) -> None:
    """Swapped before the call folds the files: refused, nothing folded; swapped after its write,
    before the mirror: the change is in the log, and no file of the other project is written."""
    with Memory(tmp_path / "store", sync=False) as memory:
        kept(memory)
        two = projects(memory, tmp_path)
        (two.victim / ".mcp" / "memory.json").write_text('{"entities": [{"name": "Stolen", "entityType": "t", '
                                                          '"observations": []}], "relations": []}\n')
        theirs = (two.victim / ".mcp" / "memory.json").read_bytes()
        swap = functools.partial(swap_for_link, two.mine, two.victim)
        if when == "before":
            two.after_the_check(swap)
        else:
            memory.after_commit.insert(0, lambda memory, tool, args, written: swap())
        with pytest.raises(ChronographError) as refused:
            two.write("n2n_add_entities", {"entities": [{"name": "Planted", "entityType": "t", "observations": []}]},
                      two.mine)
        assert "changed while the call ran" in str(refused.value)
        if when == "after":
            assert refused.value.code == "storage" and "The change is in the log" in str(refused.value)
        assert (two.victim / ".mcp" / "memory.json").read_bytes() == theirs
        for workspace in two.workspaces:  # nothing of the files folded anywhere
            assert "Stolen" not in str(memory.read("read_graph", {"workspace": workspace}))
