"""`--profile n2n --project-files`: a project's memory mirrored into `.mcp/memory.json` and
`.mcp/context.json` in n2n's format, and exchanged between two clones of one repository
through real `git commit` / `git pull`, each clone with its own store."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client
from support.mcp import call

pytestmark = pytest.mark.anyio
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture(autouse=True)
def own_git_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git reads an empty global configuration of the test's own (not the user's, not /dev/null)."""
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))


def git(where: Path, *arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *arguments], cwd=where, env={**os.environ, **GIT_ENV}, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 or not check, f"git {' '.join(arguments)}: {done.stderr}"
    return done


def commit_and_push(clone: Path, message: str) -> None:
    git(clone, "add", ".mcp")
    git(clone, "commit", "-q", "-m", message)
    git(clone, "push", "-q", "origin", "main")


def pull(clone: Path) -> bool:
    """git pull; on a conflict in .mcp, take theirs (ours is in the clone's log). True if it conflicted."""
    if git(clone, "pull", "-q", "--no-rebase", "origin", "main", check=False).returncode == 0:
        return False
    conflicted = git(clone, "diff", "--name-only", "--diff-filter=U").stdout.split()
    assert conflicted and all(path.startswith(".mcp/") for path in conflicted), conflicted
    git(clone, "checkout", "--theirs", *conflicted)
    git(clone, "add", *conflicted)
    git(clone, "commit", "-q", "--no-edit")
    return True


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    origin, a, b = tmp_path / "origin.git", tmp_path / "a" / "project", tmp_path / "b" / "project"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(tmp_path, "clone", "-q", str(origin), str(a))
    git(a, "checkout", "-q", "-b", "main")
    (a / "README.md").write_text("a project\n")
    git(a, "add", "README.md")
    git(a, "commit", "-q", "-m", "start")
    git(a, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", "-b", "main", str(origin), str(b))
    return a, b


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[tuple[Client, Client]]:
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(create_server(Settings(
            store=tmp_path / side / "store", embeddings="off", profile="n2n", mirror_projects=True))))
            for side in ("a", "b")]
        yield clients[0], clients[1]


async def memory_of(client: Client, project: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    read = await call(client, "n2n_read_graph", {"projectPath": str(project)})
    graph = read["graph"]
    entities = sorted(({"name": e["name"], "entityType": e["entityType"], "observations": sorted(e["observations"])}
                       for e in graph["entities"]), key=lambda e: e["name"])
    relations = sorted((r["from"], r["relationType"], r["to"]) for r in graph["relations"])
    context = {k: v for k, v in read["context"].items() if k not in ("version", "updatedAt")}  # each log's own
    return {"entities": entities, "relations": relations}, context


async def test_two_clones_exchange_their_memory_through_git_and_park_a_conflict(
    clones: tuple[Path, Path], servers: tuple[Client, Client]
) -> None:
    a, b = clones
    alice, bob = servers
    await call(alice, "n2n_add_entities", {"projectPath": str(a), "confirmNewProjectRoot": str(a), "entities": [
        {"name": "MemoryService", "entityType": "CLASS", "observations": ["Coordinates graph and context reads"]},
        {"name": "MemoryManager", "entityType": "CLASS", "observations": ["Writes files atomically"]}]})
    await call(alice, "n2n_create_relations", {"projectPath": str(a), "relations": [
        {"from": "MemoryService", "to": "MemoryManager", "relationType": "USES"}]})
    await call(alice, "n2n_update_context", {"projectPath": str(a), "activeTask": "Refactor storage layer",
                                             "status": "IN_PROGRESS", "nextSteps": ["Run tests"]})
    stored = json.loads((a / ".mcp" / "memory.json").read_text())
    assert stored == {"entities": [
        {"name": "MemoryManager", "entityType": "CLASS", "observations": ["Writes files atomically"]},
        {"name": "MemoryService", "entityType": "CLASS", "observations": ["Coordinates graph and context reads"]}],
        "relations": [{"from": "MemoryService", "to": "MemoryManager", "relationType": "USES"}]}
    context = json.loads((a / ".mcp" / "context.json").read_text())
    assert {k: context[k] for k in ("activeTask", "status", "nextSteps")} == {
        "activeTask": "Refactor storage layer", "status": "IN_PROGRESS", "nextSteps": ["Run tests"]}
    assert context["updatedAt"].endswith("Z")
    commit_and_push(a, "memory: storage refactor")

    assert not pull(b)  # bob's server folds what the pull brought at its next call
    assert await memory_of(bob, b) == await memory_of(alice, a)
    await call(bob, "n2n_add_observations", {"projectPath": str(b), "observations": [
        {"entityName": "MemoryManager", "contents": ["Refuses unreadable JSON"]}]})
    await call(bob, "n2n_add_entities", {"projectPath": str(b), "entities": [
        {"name": "PathUtils", "entityType": "MODULE", "observations": ["Keeps exports inside the root"]}]})
    await call(bob, "n2n_update_context", {"projectPath": str(b), "activeTask": "Write the storage tests"})
    commit_and_push(b, "memory: tests")

    assert not pull(a)
    graph, context = await memory_of(alice, a)
    assert (graph, context) == await memory_of(bob, b)  # bob's context followed alice's: taken, no conflict
    assert context["activeTask"] == "Write the storage tests"
    assert "Refuses unreadable JSON" in next(e for e in graph["entities"] if e["name"] == "MemoryManager")[
        "observations"]

    await call(alice, "n2n_update_context", {"projectPath": str(a), "activeTask": "Ship the refactor"})
    await call(bob, "n2n_update_context", {"projectPath": str(b), "activeTask": "Rename the manager"})
    commit_and_push(a, "memory: ship")
    git(b, "add", ".mcp")
    git(b, "commit", "-q", "-m", "memory: rename")
    assert pull(b)  # both edited context.json: git conflicts, bob takes theirs
    bob_graph, bob_context = await memory_of(bob, b)
    assert bob_context["activeTask"] == "Rename the manager"  # his own stays current, theirs is parked
    conflicts = next(e for e in bob_graph["entities"] if e["name"] == "Project file conflicts")
    assert conflicts["entityType"] == "CONFLICT"
    assert any("Ship the refactor" in o for o in conflicts["observations"])
    commit_and_push(b, "memory: merged")

    assert not pull(a)
    alice_graph, alice_context = await memory_of(alice, a)
    assert alice_context["activeTask"] == "Ship the refactor"
    conflicts = next(e for e in alice_graph["entities"] if e["name"] == "Project file conflicts")
    assert any("Ship the refactor" in o for o in conflicts["observations"])
    assert any("Rename the manager" in o for o in conflicts["observations"])  # both sides shown, nothing lost
    commit_and_push(a, "memory: both conflicts")
    assert not pull(b)
    assert (await memory_of(bob, b))[0] == alice_graph  # the same graph in both clones


async def test_folded_events_are_recorded_as_the_project_file_and_folded_once(
    clones: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = clones
    settings = {"embeddings": "off", "profile": "full", "mirror_projects": True}
    async with Client(create_server(Settings(store=tmp_path / "sa", **settings))) as alice, \
            Client(create_server(Settings(store=tmp_path / "sb", **settings))) as bob:
        await call(alice, "n2n_add_entities", {"projectPath": str(a), "confirmNewProjectRoot": str(a), "entities": [
            {"name": "Cache", "entityType": "MODULE", "observations": ["Keeps hot entries"]}]})
        commit_and_push(a, "memory")
        pull(b)
        await call(bob, "n2n_read_graph", {"projectPath": str(b)})
        await call(bob, "n2n_read_graph", {"projectPath": str(b)})  # unchanged files are not folded again
        audit = await call(bob, "get_audit_log", {"allWorkspaces": True})
    assert [(e["type"], e["actor"]) for e in audit["events"]] == [("entity_created", "project file")]


async def test_a_file_left_unreadable_by_a_merge_is_refused_with_what_to_do(
    clones: tuple[Path, Path], servers: tuple[Client, Client]
) -> None:
    a, _ = clones
    alice, _ = servers
    await call(alice, "n2n_add_entities", {"projectPath": str(a), "confirmNewProjectRoot": str(a), "entities": [
        {"name": "Cache", "entityType": "MODULE"}]})
    (a / ".mcp" / "memory.json").write_text("<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> theirs\n")
    result = await alice.call_tool("n2n_read_graph", {"projectPath": str(a)})
    assert result.is_error
    message = json.loads(result.content[0].text)["message"]  # type: ignore[union-attr]
    assert "not valid JSON" in message and "git checkout --theirs" in message


async def test_a_project_can_ask_for_its_files_without_the_server_flag(tmp_path: Path) -> None:
    asks, quiet = tmp_path / "asks", tmp_path / "quiet"
    for root in (asks, quiet):
        (root / ".git").mkdir(parents=True)
    (asks / ".mcp").mkdir()
    (asks / ".mcp" / "chronograph.json").write_text('{"projectFiles": true}\n')
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="n2n")
    async with Client(create_server(settings)) as client:
        for root in (asks, quiet):
            await call(client, "n2n_add_entities", {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                                                    "entities": [{"name": "Cache", "entityType": "MODULE"}]})
    assert json.loads((asks / ".mcp" / "memory.json").read_text())["entities"][0]["name"] == "Cache"
    assert not (quiet / ".mcp" / "memory.json").exists()


async def test_the_files_are_never_written_through_a_symbolic_link(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "project", tmp_path / "elsewhere.json"
    (root / ".mcp").mkdir(parents=True)
    elsewhere.write_text("keep\n")
    (root / ".mcp" / "memory.json").symlink_to(elsewhere)
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="n2n", mirror_projects=True)
    async with Client(create_server(settings)) as client:
        result = await client.call_tool("n2n_add_entities", {"projectPath": str(root), "entities": [
            {"name": "Cache", "entityType": "MODULE"}]})
    assert result.is_error and "symbolic link" in result.content[0].text  # type: ignore[union-attr]
    assert elsewhere.read_text() == "keep\n"


async def test_what_would_overwrite_or_resurrect_is_parked_and_the_rest_folded(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="n2n", mirror_projects=True)
    async with Client(create_server(settings)) as client:
        await call(client, "n2n_add_entities", {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                                                "entities": [{"name": "Cache", "entityType": "MODULE"},
                                                             {"name": "Old", "entityType": "MODULE"}]})
        await call(client, "n2n_delete_entities", {"projectPath": str(root), "entityNames": ["Old"]})
        await call(client, "n2n_add_entities", {"projectPath": str(root), "entities": [
            {"name": "Queue", "entityType": "MODULE", "observations": ["Was blocking"]}]})
        await call(client, "n2n_create_relations", {"projectPath": str(root), "relations": [
            {"from": "Queue", "to": "Cache", "relationType": "BLOCKS"}]})
        await call(client, "n2n_delete_observations", {"projectPath": str(root), "deletions": [
            {"entityName": "Queue", "observations": ["Was blocking"]}]})
        await call(client, "n2n_delete_relations", {"projectPath": str(root), "relations": [
            {"from": "Queue", "to": "Cache", "relationType": "BLOCKS"}]})
        teammate = {"entities": [
            {"name": "Cache", "entityType": "CLASS", "observations": ["Evicts least recently used"]},
            {"name": "Old", "entityType": "MODULE", "observations": ["Still here?"]},
            {"name": "Queue", "entityType": "MODULE", "observations": ["Was blocking", "Batches writes"]}],
            "relations": [{"from": "Queue", "to": "Cache", "relationType": "FEEDS"},
                          {"from": "Queue", "to": "Cache", "relationType": "BLOCKS"},
                          {"from": "Queue", "to": "Ghost", "relationType": "HAUNTS"}]}
        (root / ".mcp" / "memory.json").write_text(json.dumps(teammate))
        graph, _ = await memory_of(client, root)
    by_name = {e["name"]: e for e in graph["entities"]}
    assert set(by_name) == {"Cache", "Queue", "Project file conflicts"}  # Old stays deleted
    assert by_name["Cache"] == {"name": "Cache", "entityType": "MODULE", "observations": [
        "Evicts least recently used"]}  # its observation folded, its type kept
    assert graph["relations"] == [("Queue", "FEEDS", "Cache")]
    assert by_name["Queue"]["observations"] == ["Batches writes"]
    parked = by_name["Project file conflicts"]["observations"]
    assert len(parked) == 5
    assert any("'Was blocking'" in p and "deleted" in p for p in parked)
    assert any("BLOCKS" in p and "deleted" in p for p in parked)
    assert any("'Old'" in p and "deleted" in p and "Still here?" in p for p in parked)
    assert any("'Cache'" in p and "'CLASS'" in p for p in parked)
    assert any("HAUNTS" in p and "Ghost" in p for p in parked)
    assert json.loads((root / ".mcp" / "memory.json").read_text())["entities"][0]["name"] == "Cache"  # written back


async def test_a_restarted_server_finds_its_own_files_in_step_with_its_log(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="n2n", mirror_projects=True)
    async with Client(create_server(settings)) as client:
        await call(client, "n2n_update_context", {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                                                  "activeTask": "Only a task"})
        await call(client, "n2n_update_context", {"projectPath": str(root), "reason": "and a reason"})
    written = json.loads((root / ".mcp" / "context.json").read_text())
    assert (written["status"], written["nextSteps"]) == ("PLANNING", [])  # n2n's reader needs them
    async with Client(create_server(settings)) as client:  # a new process: it folds the files first
        graph, context = await memory_of(client, root)
    assert graph == {"entities": [], "relations": []}  # nothing parked: the file is the log's own
    assert (context["activeTask"], context["reason"]) == ("Only a task", "and a reason")


async def test_a_forget_on_a_project_s_workspace_rewrites_its_files_so_nothing_gives_it_back(tmp_path: Path) -> None:
    """The files mirror the project; a forget is a change like any other, or the next fold (a
    restart's first call) would create again what it erased."""
    from chronograph.application.surfaces.projectroot import workspace_name

    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="full", mirror_projects=True)
    async with Client(create_server(settings)) as client:
        await call(client, "n2n_add_entities", {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                                                "entities": [{"name": "Zqx Secret", "entityType": "PERSON",
                                                              "observations": ["zqx phone"]},
                                                             {"name": "Cache", "entityType": "MODULE"}]})
        assert "Zqx Secret" in (root / ".mcp" / "memory.json").read_text()
        out = await call(client, "forget_entity", {"workspace": workspace_name(root), "name": "Zqx Secret",
                                                   "reason": "asked"})
    assert "zqx" not in (root / ".mcp" / "memory.json").read_text().lower()
    assert "elsewhere" not in out  # the answer's note on the file went with what it said
    async with Client(create_server(settings)) as client:  # a new process folds the files first
        graph, _ = await memory_of(client, root)
    assert [e["name"] for e in graph["entities"]] == ["Cache"]


def zqx_project(tmp_path: Path) -> tuple[Path, str]:
    """A project root (not adopted yet), and its workspace."""
    from chronograph.application.surfaces.projectroot import workspace_name

    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root, workspace_name(root)


async def zqx_served(tmp_path: Path, root: Path) -> None:
    """An n2n server that keeps the project's files (ended: a client's session) wrote a secret into them."""
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="n2n", mirror_projects=True)
    async with Client(create_server(settings)) as client:
        await call(client, "n2n_add_entities", {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                                                "entities": [{"name": "Zqx Secret", "entityType": "PERSON",
                                                              "observations": ["zqx phone"]},
                                                             {"name": "Cache", "entityType": "MODULE"}]})
    assert "Zqx Secret" in (root / ".mcp" / "memory.json").read_text()


async def test_a_forget_through_a_new_server_rewrites_the_files_of_a_project_only_an_earlier_one_served(
        tmp_path: Path) -> None:
    """A client spawns a server per session: the one asked to forget never met the project's root,
    which the workspace's name cannot give back; the store keeps it from the session that did."""
    root, workspace = zqx_project(tmp_path)
    await zqx_served(tmp_path, root)
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="full", mirror_projects=True)
    async with Client(create_server(settings)) as client:
        out = await call(client, "forget_entity", {"workspace": workspace, "name": "Zqx Secret", "reason": "asked"})
    assert "zqx" not in (root / ".mcp" / "memory.json").read_text().lower()
    assert "elsewhere" not in out and out["message"].endswith(f"{root / '.mcp' / 'memory.json'} rewritten without it")
    async with Client(create_server(settings)) as client:  # a new process folds the files first
        graph, _ = await memory_of(client, root)
    assert [e["name"] for e in graph["entities"]] == ["Cache"]


async def test_a_delete_through_a_new_server_rewrites_the_files_of_a_project_only_an_earlier_one_served(
        tmp_path: Path) -> None:
    root, workspace = zqx_project(tmp_path)
    await zqx_served(tmp_path, root)
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="full", mirror_projects=True)
    async with Client(create_server(settings)) as client:
        await call(client, "delete_entities", {"workspace": workspace, "entityNames": ["Zqx Secret"]})
    assert "zqx" not in (root / ".mcp" / "memory.json").read_text().lower()


async def test_a_forget_whose_server_never_rewrote_the_file_is_not_folded_back_by_the_next_server(
        tmp_path: Path) -> None:
    """A server killed between a forget's commit and the file's rewrite, or one that keeps no
    project files, leaves the file as the last mirror wrote it: the next server that keeps it
    rewrites it from the log, and creates nothing again."""
    root, workspace = zqx_project(tmp_path)
    await zqx_served(tmp_path, root)
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="full", project_files=False)
    async with Client(create_server(settings)) as client:
        await call(client, "forget_entity", {"workspace": workspace, "name": "Zqx Secret", "reason": "asked"})
    assert "Zqx Secret" in (root / ".mcp" / "memory.json").read_text()
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="n2n", mirror_projects=True)
    async with Client(create_server(settings)) as client:
        graph, _ = await memory_of(client, root)
    assert [e["name"] for e in graph["entities"]] == ["Cache"]
    assert "zqx" not in (root / ".mcp" / "memory.json").read_text().lower()


@pytest.mark.parametrize("why", ["no project files", "moved"])
async def test_a_forget_that_cannot_rewrite_a_project_s_file_says_so_and_what_to_do(tmp_path: Path, why: str) -> None:
    """A server that keeps no project files (over HTTP without --allow-http-export, or another
    profile), or whose project is not where it was: the file still holds the entity, and the
    answer says so, as `chronograph forget` does."""
    root, workspace = zqx_project(tmp_path)
    await zqx_served(tmp_path, root)
    if why == "moved":
        root = root.rename(tmp_path / "elsewhere")
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="full", mirror_projects=True,
                        project_files=why != "no project files")
    async with Client(create_server(settings)) as client:
        out = await call(client, "forget_entity", {"workspace": workspace, "name": "Zqx Secret", "reason": "asked"})
    assert out["scrubbed"] and "Zqx Secret" in (root / ".mcp" / "memory.json").read_text()
    [note] = out["elsewhere"]
    assert f"{workspace!r} is an n2n project's workspace, and its .mcp/memory.json was not rewritten" in note
    assert "folds it back if it changed since (an edit, a git pull): take the entity out of it first" in note
