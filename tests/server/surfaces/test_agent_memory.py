"""`--profile agent-memory`: Agent Memory's fifteen tools through a real MCP client, walked
through with the examples of its API reference."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client
from mcp_types import Implementation
from support.mcp import ToolFailed, call

pytestmark = pytest.mark.anyio

REFERENCE_TOOLS = [
    "memory_org", "memory_project", "memory_session", "memory_tool", "memory_guideline", "memory_knowledge",
    "memory_tag", "memory_relation", "memory_file_lock", "memory_query", "memory_conflict", "memory_health",
    "memory_init", "memory_export", "memory_import",
]
REFERENCE_ACTIONS = {
    "memory_org": {"create", "list"},
    "memory_project": {"create", "list", "get", "update"},
    "memory_session": {"start", "end", "list"},
    "memory_tool": {"add", "update", "get", "list", "history", "deactivate"},
    "memory_guideline": {"add", "update", "get", "list", "history", "deactivate"},
    "memory_knowledge": {"add", "update", "get", "list", "history", "deactivate"},
    "memory_tag": {"create", "list", "attach", "detach", "for_entry"},
    "memory_relation": {"create", "list", "delete"},
    "memory_file_lock": {"checkout", "checkin", "status", "list", "force_unlock"},
    "memory_query": {"search", "context"},
    "memory_conflict": {"list", "resolve"},
    "memory_init": {"init", "status", "reset"},
    "memory_export": {"export"},
    "memory_import": {"import"},
}


@pytest.fixture
async def agent(backend_store: dict[str, Any]) -> AsyncIterator[Client]:
    server = create_server(Settings(**backend_store, embeddings="off", profile="agent-memory"))
    async with Client(server, client_info=Implementation(name="claude-code", version="1")) as c:
        yield c


async def test_the_profile_offers_the_fifteen_tools_in_the_reference_order_with_its_actions(agent: Client) -> None:
    tools = (await agent.list_tools()).tools
    assert [t.name for t in tools] == [*REFERENCE_TOOLS, "memory_forget"]  # and our erasure, after them
    for tool in tools:
        if tool.name in REFERENCE_ACTIONS:
            offered = set(tool.input_schema["properties"]["action"]["enum"])
            assert REFERENCE_ACTIONS[tool.name] <= offered, tool.name


async def test_health_names_the_backend_that_holds_the_log(agent: Client, backend_store: dict[str, Any]) -> None:
    database = (await call(agent, "memory_health"))["database"]
    on_postgres = "cache" in backend_store
    assert database["type"] == ("PostgreSQL event log" if on_postgres else "LMDB event log")
    assert database["walEnabled"] is on_postgres


async def test_an_error_is_the_reference_s_json_object_with_a_code(agent: Client) -> None:
    result = await agent.call_tool("memory_tool", {"action": "get", "id": "tool_missing"})
    assert result.is_error
    error = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert error == {"error": "Tool 'tool_missing' not found", "code": "not_found"}
    result = await agent.call_tool("memory_org", {"action": "explode"})
    assert result.is_error and "action" in json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]


async def test_a_lock_refusal_names_the_holder_and_the_expiry(agent: Client) -> None:
    await call(agent, "memory_file_lock", {"action": "checkout", "file_path": "/path/to/file.ts",
                                           "agent_id": "claude-code-1"})
    result = await agent.call_tool("memory_file_lock", {"action": "checkout", "file_path": "/path/to/file.ts",
                                                        "agent_id": "claude-code-2"})
    error = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert error["code"] == "locked" and error["lock"]["checkedOutBy"] == "claude-code-1"
    assert error["lock"]["expiresAt"] in error["error"]


async def test_the_reference_examples_work_one_after_another(agent: Client) -> None:
    org = (await call(agent, "memory_org", {"action": "create", "name": "My Company",
                                            "metadata": {"plan": "enterprise"}}))["organization"]
    assert org["id"].startswith("org_") and org["name"] == "My Company" and org["createdAt"].endswith("Z")
    assert (await call(agent, "memory_org", {"action": "list", "limit": 20, "offset": 0}))["organizations"] == [org]
    project = (await call(agent, "memory_project", {
        "action": "create", "name": "My Project", "orgId": org["id"], "description": "A sample project",
        "rootPath": "/path/to/project", "metadata": {"goals": ["ship v1"]}}))["project"]
    by_name = await call(agent, "memory_project", {"action": "get", "name": "My Project", "orgId": org["id"]})
    assert by_name["project"]["id"] == project["id"]
    await call(agent, "memory_project", {"action": "update", "id": project["id"], "description": "Updated description",
                                         "metadata": {"status": "active"}})
    session = (await call(agent, "memory_session", {
        "action": "start", "projectId": project["id"], "name": "Feature Development",
        "purpose": "Implement user authentication", "agentId": "claude-code-v1",
        "metadata": {"mode": "tdd"}}))["session"]
    tool = (await call(agent, "memory_tool", {
        "action": "add", "scopeType": "global", "name": "git_commit", "category": "cli",
        "description": "Commit staged changes to git", "parameters": {"message": {"type": "string", "required": True}},
        "examples": [{"message": "feat: add login"}], "constraints": "Only commit when tests pass"}))["tool"]
    await call(agent, "memory_tool", {"action": "update", "id": tool["id"], "description": "Updated description",
                                      "changeReason": "Clarified usage"})
    inherited = await call(agent, "memory_tool", {"action": "get", "name": "git_commit", "scopeType": "project",
                                                  "scopeId": project["id"], "inherit": True})
    assert inherited["tool"]["currentVersion"]["description"] == "Updated description"
    assert len((await call(agent, "memory_tool", {"action": "history", "id": tool["id"]}))["versions"]) == 2
    guideline = (await call(agent, "memory_guideline", {
        "action": "add", "scopeType": "global", "name": "error-handling", "category": "code_style", "priority": 80,
        "content": "Always use try-catch for async operations", "rationale": "Prevents unhandled promise rejections",
        "examples": {"good": ["try { await fetch() } catch (e) { ... }"], "bad": ["await fetch()"]}}))["guideline"]
    await call(agent, "memory_guideline", {"action": "update", "id": guideline["id"], "priority": 90,
                                           "changeReason": "Elevated priority after incident"})
    knowledge = (await call(agent, "memory_knowledge", {
        "action": "add", "scopeType": "project", "scopeId": project["id"], "title": "API Rate Limits",
        "category": "fact", "content": "The API allows 1000 requests per minute", "source": "API documentation",
        "confidence": 1.0, "validUntil": "2099-12-31T23:59:59Z"}))["knowledge"]
    await call(agent, "memory_tag", {"action": "create", "name": "python", "category": "language",
                                     "description": "Python programming language"})
    await call(agent, "memory_tag", {"action": "attach", "entryType": "guideline", "entryId": guideline["id"],
                                     "tagName": "security"})
    relation = await call(agent, "memory_relation", {
        "action": "create", "sourceType": "guideline", "sourceId": guideline["id"], "targetType": "project",
        "targetId": project["id"], "relationType": "applies_to"})
    assert relation["relation"]["id"].startswith("rel_")
    await call(agent, "memory_file_lock", {
        "action": "checkout", "file_path": "/path/to/file.ts", "agent_id": "claude-code-1",
        "session_id": session["id"], "project_id": project["id"], "expires_in": 3600,
        "metadata": {"reason": "refactoring"}})
    status = await call(agent, "memory_file_lock", {"action": "status", "file_path": "/path/to/file.ts"})
    assert status["isLocked"] and status["lock"]["checkedOutBy"] == "claude-code-1"
    assert len((await call(agent, "memory_file_lock", {"action": "list", "project_id": project["id"],
                                                       "agent_id": "claude-code-1"}))["locks"]) == 1
    await call(agent, "memory_file_lock", {"action": "checkin", "file_path": "/path/to/file.ts",
                                           "agent_id": "claude-code-1"})
    found = await call(agent, "memory_query", {
        "action": "search", "types": ["tools", "guidelines", "knowledge"],
        "scope": {"type": "project", "id": project["id"], "inherit": True}, "tags": {"include": ["security"]},
        "search": "async", "relatedTo": {"type": "project", "id": project["id"], "relation": "applies_to"},
        "limit": 20, "compact": False})
    [hit] = found["results"]
    assert (hit["type"], hit["id"], hit["tags"][0]["name"], hit["guideline"]["priority"]) == (
        "guideline", guideline["id"], "security", 90)
    assert found["meta"] == {"totalCount": 1, "returnedCount": 1, "truncated": False, "hasMore": False}
    context = await call(agent, "memory_query", {"action": "context", "scopeType": "project",
                                                 "scopeId": project["id"], "inherit": True, "limit": 10})
    assert [len(context[k]) for k in ("tools", "guidelines", "knowledge")] == [1, 1, 1]
    assert context["knowledge"][0]["id"] == knowledge["id"]
    await call(agent, "memory_relation", {
        "action": "delete", "sourceType": "guideline", "sourceId": guideline["id"], "targetType": "project",
        "targetId": project["id"], "relationType": "applies_to"})
    await call(agent, "memory_session", {"action": "end", "id": session["id"], "status": "completed"})
    listed = await call(agent, "memory_session", {"action": "list", "projectId": project["id"],
                                                  "status": "completed"})
    assert [s["id"] for s in listed["sessions"]] == [session["id"]]
    health = await call(agent, "memory_health")
    assert health["status"] == "healthy" and health["tables"]["guidelines"] == 1
    assert (await call(agent, "memory_init", {"action": "status"}))["initialized"] is True
    exported = await call(agent, "memory_export", {"action": "export", "types": ["tools", "guidelines"],
                                                   "format": "json", "includeVersions": True})
    document = json.loads(exported["content"])
    assert len(document["entries"]["guidelines"][0]["versions"]) == 2 and exported["metadata"]["entryCount"] == 2
    for form in ("markdown", "yaml"):
        text = (await call(agent, "memory_export", {"action": "export", "format": form}))["content"]
        assert "error-handling" in text
    imported = await call(agent, "memory_import", {"action": "import", "content": exported["content"],
                                                   "format": "json", "conflictStrategy": "update",
                                                   "importedBy": "admin-user"})
    assert imported["skipped"] == 2 and imported["errors"] == []


async def test_yaml_and_markdown_import_are_refused_as_the_reference_says(agent: Client) -> None:
    with pytest.raises(ToolFailed, match="export-only"):
        await call(agent, "memory_import", {"action": "import", "content": "a: 1", "format": "yaml"})


async def test_the_default_profile_carries_only_the_team_s_sessions_and_locks(tmp_path: Path) -> None:
    async with Client(create_server(Settings(store=tmp_path / "s", embeddings="off"))) as c:
        names: list[Any] = [t.name for t in (await c.list_tools()).tools]
    assert [n for n in names if n.startswith("memory_")] == ["memory_session", "memory_file_lock"]


async def test_the_default_profile_records_a_connection_s_writes_within_its_session(client: Client) -> None:
    session = (await call(client, "memory_session", {"action": "start", "agentId": "claude"}))["session"]["id"]
    await call(client, "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]})
    await call(client, "memory_session", {"action": "end", "id": session})
    await call(client, "create_entities", {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]})
    audit = await call(client, "get_audit_log", {"eventTypes": ["entity_created"], "order": "oldest"})
    assert [(e["actor"], e["subject"]) for e in audit["events"]] == [
        (f"test-client/{session}", "Ada"), ("test-client", "Bob")]


async def test_the_default_profile_offers_file_locks(client: Client) -> None:
    await call(client, "memory_file_lock", {"action": "checkout", "file_path": "/a.py", "agent_id": "A"})
    with pytest.raises(ToolFailed, match="locked by A"):
        await call(client, "memory_file_lock", {"action": "checkout", "file_path": "/a.py", "agent_id": "B"})


async def test_a_query_finds_entries_by_meaning_when_the_server_has_embeddings(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    settings = Settings(store=tmp_path / "store", embeddings="local", profile="agent-memory")
    async with Client(create_server(settings)) as agent:
        for name, content in (("auth", "Validate login tokens and passwords before any request"),
                              ("bread", "Let sourdough rise overnight in a cool kitchen")):
            await call(agent, "memory_knowledge", {"action": "add", "scopeType": "global", "title": name,
                                                   "content": content})
        found = await call(agent, "memory_query", {"action": "search", "search": "user authentication security",
                                                   "semanticSearch": True, "semanticThreshold": 0.3})
        words = await call(agent, "memory_query", {"action": "search", "search": "user authentication security"})
    assert [r["knowledge"]["title"] for r in found["results"]] == ["auth"] and found["meta"]["semantic"] is True
    assert words["results"] == []  # no word of the query is in either entry


async def test_a_search_points_at_the_sentences_of_each_entry_that_matched(agent: Client) -> None:
    await call(agent, "memory_knowledge", {
        "action": "add", "scopeType": "global", "title": "Deploys", "category": "fact",
        "content": "Deploys run on Fridays. Rollbacks need a ticket. The staging cluster is rebuilt nightly."})
    found = await call(agent, "memory_query", {"action": "search", "search": "rollbacks ticket"})
    matched = found["results"][0]["matchedObservations"]
    assert matched[0] == {"text": "Rollbacks need a ticket.", "score": 1.0} and len(matched) == 1
    none = await call(agent, "memory_query", {"action": "search", "search": "rollbacks", "matchesPerEntity": 0})
    assert "matchedObservations" not in none["results"][0]
