"""`--profile n2n`: n2n-memory's twelve tools through a real MCP client: the project found
from projectPath with its confirmation handshake, the hot context, fuzzy search, the
Markdown export inside the root, and the documented refusals."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client, StdioServerParameters
from support.mcp import call

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
async def n2n(backend_store: dict[str, Any]) -> AsyncIterator[Client]:
    async with Client(create_server(Settings(**backend_store, embeddings="off", profile="n2n"))) as c:
        yield c


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


async def refusal(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    shaped = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert shaped == result.structured_content
    return shaped


async def adopt(client: Client, root: Path) -> dict[str, str]:
    """The handshake: a new root is refused until confirmed, then has its .mcp."""
    waiting = await refusal(client, "n2n_read_graph", {"projectPath": str(root)})
    assert (waiting["status"], waiting["code"], waiting["detectedRoot"]) == (
        "AWAITING_CONFIRMATION", "awaiting_confirmation", str(root))
    assert not (root / ".mcp").exists()
    await call(client, "n2n_read_graph", {"projectPath": str(root), "confirmNewProjectRoot": waiting["detectedRoot"]})
    assert (root / ".mcp").is_dir()
    return {"projectPath": str(root)}


async def test_the_profile_offers_the_twelve_tools(n2n: Client) -> None:
    assert [t.name for t in (await n2n.list_tools()).tools] == [
        "n2n_add_entities", "n2n_add_observations", "n2n_create_relations", "n2n_read_graph",
        "n2n_get_graph_summary", "n2n_update_context", "n2n_search", "n2n_delete_entities",
        "n2n_delete_observations", "n2n_delete_relations", "n2n_open_nodes", "n2n_export_markdown"]


async def test_a_session_as_the_reference_describes_it(n2n: Client, repo: Path) -> None:
    project = await adopt(n2n, repo)
    added = await call(n2n, "n2n_add_entities", {**project, "entities": [
        {"name": "MemoryService", "entityType": "CLASS", "observations": ["Coordinates graph and context reads"]},
        {"name": "MemoryManager", "entityType": "CLASS", "observations": []}]})
    assert added["status"] == "success" and added["_protocol"]["action"] == "MEMORY_UPDATED"
    merged = await call(n2n, "n2n_add_entities", {**project, "entities": [
        {"name": "MemoryService", "entityType": "MODULE", "observations": ["coordinates graph and context reads.",
                                                                         "Owns the cache"]}]})
    assert merged["mergedObservations"] == 1  # the near-duplicate is skipped, the type kept
    await call(n2n, "n2n_create_relations", {**project, "relations": [
        {"from": "MemoryService", "to": "MemoryManager", "relationType": "USES"}]})
    more = await call(n2n, "n2n_add_observations", {**project, "observations": [
        {"entityName": "MemoryManager", "contents": ["Writes atomically"]},
        {"entityName": "Ghost", "contents": ["x"]}]})
    assert (more["addedCount"], more["skippedEntities"]) == (1, ["Ghost"])
    context = await call(n2n, "n2n_update_context", {
        **project, "activeTask": "Refactor MCP error handling", "status": "IN_PROGRESS",
        "nextSteps": ["Run tests", "Update docs"], "reason": "Refactor without changing public API"})
    assert context["_protocol"]["action"] == "CONTEXT_SYNCED" and context["context"]["updatedAt"].endswith("Z")
    summary = await call(n2n, "n2n_read_graph", {**project, "summaryMode": True})
    assert summary["context"]["activeTask"] == "Refactor MCP error handling"
    assert summary["totalEntityCount"] == 2 and summary["isTruncated"] is False
    service = next(e for e in summary["graph"]["entities"] if e["name"] == "MemoryService")
    assert "observations" not in service and service["entityType"] == "CLASS"
    page = await call(n2n, "n2n_read_graph", {**project, "limit": 1})
    assert page["isTruncated"] is True and page["graph"]["relations"] == []  # its other end is not on the page
    index = await call(n2n, "n2n_get_graph_summary", {**project})
    assert (index["relationCount"], index["entities"][0]) == (1, {"name": "MemoryService", "type": "CLASS"})
    found = await call(n2n, "n2n_search", {**project, "query": "cahce"})  # fuzzy by default
    assert [(e["name"], e["score"]) for e in found["entities"]] == [("MemoryService", 1.0)]
    assert found["totalResults"] == 1 and found["relations"][0]["relationType"] == "USES"
    exact = await call(n2n, "n2n_search", {**project, "query": "cahce", "fuzzy": False})
    assert exact["totalResults"] == 0
    opened = await call(n2n, "n2n_open_nodes", {**project, "names": ["MemoryService"]})
    assert [e["name"] for e in opened["entities"]] == ["MemoryService"] and opened["relations"] == []
    exported = await call(n2n, "n2n_export_markdown", {**project})
    assert exported["path"] == "KNOWLEDGE_GRAPH.md" and "MemoryService" in (repo / "KNOWLEDGE_GRAPH.md").read_text()
    await call(n2n, "n2n_delete_relations", {**project, "relations": [
        {"from": "MemoryService", "to": "MemoryManager", "relationType": "USES"}]})
    gone = await call(n2n, "n2n_delete_observations", {**project, "deletions": [
        {"entityName": "MemoryManager", "observations": ["Writes atomically"]}]})
    assert gone["deletedCount"] == 1
    assert (await call(n2n, "n2n_delete_entities", {**project, "entityNames": ["MemoryManager"]}))["deletedCount"] == 1
    tools = {t.name: t for t in (await n2n.list_tools()).tools}
    assert tools["n2n_export_markdown"].annotations.read_only_hint is False  # type: ignore[union-attr]
    resource = await n2n.read_resource(f"mcp://memory/graph?path={repo}")
    assert [e["name"] for e in json.loads(resource.contents[0].text)["graph"]["entities"]] == [  # type: ignore[union-attr]
        "MemoryService"]


async def test_two_projects_keep_two_memories(n2n: Client, tmp_path: Path, repo: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "package.json").write_text("{}")
    first, second = await adopt(n2n, repo), await adopt(n2n, other)
    await call(n2n, "n2n_add_entities", {**first, "entities": [{"name": "A", "entityType": "T", "observations": []}]})
    assert (await call(n2n, "n2n_get_graph_summary", second))["totalEntityCount"] == 0


@pytest.mark.parametrize(("path", "code", "words"), [
    ("relative/path", "invalid", "not absolute"),
    ("/nonexistent/chronograph-test", "not_found", "does not exist"),
    ("{repo}/../repo", "invalid", ".."),
    ("{repo}\x00", "invalid", "NUL"),
    ("{readme}", "invalid", "weak root"),
])
async def test_a_bad_project_path_is_refused_in_n2n_s_shape_and_writes_nothing(
    n2n: Client, repo: Path, tmp_path: Path, path: str, code: str, words: str
) -> None:
    readme = tmp_path / "docs"
    readme.mkdir()
    (readme / "README.md").write_text("hi")
    shaped = await refusal(n2n, "n2n_add_entities", {
        "projectPath": path.format(repo=repo, readme=readme),
        "entities": [{"name": "A", "entityType": "T", "observations": []}]})
    assert (shaped["status"], shaped["code"]) == ("error", code) and words in shaped["message"]
    assert not (repo / ".mcp").exists() and not (readme / ".mcp").exists()


async def test_a_wrong_confirmation_does_not_adopt_the_root(n2n: Client, repo: Path, tmp_path: Path) -> None:
    shaped = await refusal(n2n, "n2n_read_graph", {"projectPath": str(repo), "confirmNewProjectRoot": str(tmp_path)})
    assert shaped["status"] == "AWAITING_CONFIRMATION" and not (repo / ".mcp").exists()


@pytest.mark.parametrize("output", ["/tmp/x.md", "../outside.md", ".git/hooks/x.md", "notes.txt", "missing/x.md"])
async def test_the_export_stays_a_markdown_file_inside_the_root(n2n: Client, repo: Path, output: str) -> None:
    project = await adopt(n2n, repo)
    shaped = await refusal(n2n, "n2n_export_markdown", {**project, "outputPath": output})
    assert shaped["status"] == "error"
    assert not (repo.parent / "outside.md").exists() and not (repo / "notes.txt").exists()


async def test_relations_to_missing_entities_are_refused_whole(n2n: Client, repo: Path) -> None:
    project = await adopt(n2n, repo)
    await call(n2n, "n2n_add_entities", {**project, "entities": [{"name": "A", "entityType": "T", "observations": []}]})
    shaped = await refusal(n2n, "n2n_create_relations", {**project, "relations": [
        {"from": "A", "to": "Nowhere", "relationType": "USES"}]})
    assert shaped["code"] == "not_found"
    assert (await call(n2n, "n2n_get_graph_summary", project))["relationCount"] == 0


async def test_a_planted_temporary_file_link_in_a_cloned_repository_is_never_written_through(
    n2n: Client, repo: Path, tmp_path: Path,
) -> None:
    """Issue 27.1: `.mcp/chronograph.tmp` a link to another file: any n2n call overwrote it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own\n")
    (repo / ".mcp").mkdir()
    for planted in ("chronograph.tmp", ".chronograph.json.tmp"):
        (repo / ".mcp" / planted).symlink_to(victim)
    graph = await call(n2n, "n2n_read_graph", {"projectPath": str(repo)})
    assert graph["status"] == "success" and victim.read_text() == "the user's own\n"
    assert json.loads((repo / ".mcp" / "chronograph.json").read_text())["store"] == "chronograph"


async def test_an_mcp_folder_that_is_a_link_is_refused_and_a_marker_that_is_one_left_alone(
    n2n: Client, repo: Path, tmp_path: Path,
) -> None:
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    (repo / ".mcp").symlink_to(victim, target_is_directory=True)
    shaped = await refusal(n2n, "n2n_read_graph", {"projectPath": str(repo), "confirmNewProjectRoot": str(repo)})
    assert shaped["code"] == "invalid" and "link" in shaped["message"]
    (repo / ".mcp").unlink()
    (repo / ".mcp").write_text("a file")
    shaped = await refusal(n2n, "n2n_read_graph", {"projectPath": str(repo), "confirmNewProjectRoot": str(repo)})
    assert shaped["code"] == "invalid" and (repo / ".mcp").read_text() == "a file"
    (repo / ".mcp").unlink()
    (repo / ".mcp").mkdir()
    (repo / ".mcp" / "chronograph.json").symlink_to(victim / "chronograph.json")  # dangling
    await call(n2n, "n2n_read_graph", {"projectPath": str(repo)})
    assert list(victim.iterdir()) == [] and (repo / ".mcp" / "chronograph.json").is_symlink()


async def test_the_markdown_export_replaces_an_existing_file_only_when_asked(n2n: Client, repo: Path) -> None:
    """Issue 27.5: n2n_export_markdown overwrote a project's NOTES.md with no overwrite flag."""
    project = await adopt(n2n, repo)
    (repo / "NOTES.md").write_text("# my notes\n")
    shaped = await refusal(n2n, "n2n_export_markdown", {**project, "outputPath": "NOTES.md"})
    assert shaped["code"] == "invalid" and "overwrite: true" in shaped["message"]
    assert (repo / "NOTES.md").read_text() == "# my notes\n"
    done = await call(n2n, "n2n_export_markdown", {**project, "outputPath": "NOTES.md", "overwrite": True})
    assert done["path"] == "NOTES.md" and (repo / "NOTES.md").read_text() != "# my notes\n"
    assert sorted(p.name for p in repo.iterdir()) == [".git", ".mcp", "NOTES.md"]  # no temporary file left


async def test_the_markdown_export_never_writes_through_a_link(n2n: Client, repo: Path, tmp_path: Path) -> None:
    project = await adopt(n2n, repo)
    (repo / "inside.md").write_text("mine")
    (repo / "LINK.md").symlink_to(repo / "inside.md")
    (repo / "OUT.md").symlink_to(tmp_path / "outside.md")
    for output in ("LINK.md", "OUT.md"):
        shaped = await refusal(n2n, "n2n_export_markdown", {**project, "outputPath": output, "overwrite": True})
        assert "link" in shaped["message"]
    assert (repo / "inside.md").read_text() == "mine" and not (tmp_path / "outside.md").exists()


@pytest.mark.wire
async def test_a_cloned_repository_cannot_overwrite_the_store_of_a_stdio_server(repo: Path, tmp_path: Path) -> None:
    """Issue 27.1 as reported: `.mcp/chronograph.tmp` a link to the store's data.mdb; any n2n call
    replaced the store with 68 bytes of JSON and the server died of SIGBUS."""
    store = tmp_path / "store"
    params = StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", str(store),
                                                                  "--profile", "n2n"],
                                   env={**os.environ, "PYTHONPATH": str(ROOT), "CHRONOGRAPH_EMBEDDINGS": "off"})
    async with Client(params) as client:
        project = await adopt(client, repo)
        await call(client, "n2n_add_entities", {**project, "entities": [
            {"name": "Memory", "entityType": "T", "observations": ["kept"]}]})
    (repo / ".mcp" / "chronograph.json").unlink()  # a fresh clone: .mcp committed, the marker not
    (repo / ".mcp" / "chronograph.tmp").symlink_to(store / "data.mdb")
    before = (store / "data.mdb").read_bytes()
    async with Client(params) as client:
        graph = await call(client, "n2n_read_graph", project)
        assert [e["name"] for e in graph["graph"]["entities"]] == ["Memory"]
    assert (store / "data.mdb").read_bytes() == before
    async with Client(params) as client:
        assert (await call(client, "n2n_get_graph_summary", project))["totalEntityCount"] == 1


async def test_a_search_points_at_the_observations_that_matched_and_can_limit_them(n2n: Client, repo: Path) -> None:
    project = await adopt(n2n, repo)
    observations = ["Coordinates graph reads", "Owns the cache", "Flushes the cache on exit", "Logs to stderr"]
    await call(n2n, "n2n_add_entities", {**project, "entities": [
        {"name": "MemoryService", "entityType": "CLASS", "observations": observations}]})
    found = await call(n2n, "n2n_search", {**project, "query": "cahce"})
    service = found["entities"][0]
    assert [m["text"] for m in service["matchedObservations"]] == observations[1:3]
    cut = await call(n2n, "n2n_search", {**project, "query": "cahce", "observationsLimit": 1, "matchesPerEntity": 1})
    assert cut["entities"][0]["observations"] == ["Owns the cache"]
    assert len(cut["entities"][0]["matchedObservations"]) == 1
