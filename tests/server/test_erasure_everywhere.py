"""Erasure is a property of every place data can live: an entity and a team entry, written and
read through each profile on both backends (with what a session leaves behind: conflict
errors, remembered answers, search images, snapshots of the past), then forgotten through the
profile's own tool where it has one and the command line where it has none; after that no byte
of the store, its cache, or PostgreSQL's tables, indexes and statistics holds what they said."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.app import Runtime, create_server
from chronograph.server.config import Settings
from chronograph.tools.cli import main as cli
from mcp import Client
from support.mcp import call
from support.postgres import analyse, server_bytes

pytestmark = pytest.mark.anyio

NAME, SAID, LATER = "Ottoline Brackenridge-Soames", "banks with Quorvath Mutual", "moved to Yelverstead"
TITLE, CONTENT = "Escrow contact Wilhelmina Dargavel", "account 4471-Zephyrine-0092"
SECRETS = (NAME, SAID, LATER, TITLE, CONTENT, "Brackenridge", "Quorvath", "Yelverstead", "Wilhelmina", "Dargavel",
           "Zephyrine")
PROFILES = ("official", "chronograph", "n2n", "workspace", "kuzu", "agent-memory", "full")
Tool = Callable[[str, dict[str, Any]], Awaitable[Any]]


def residue(places: dict[str, bytes]) -> list[tuple[str, str]]:
    return [(where, secret) for where, data in places.items() for secret in SECRETS if secret.encode() in data]


def every_byte(tmp_path: Path, store: dict[str, Any]) -> dict[str, bytes]:
    """Every file under the test's folder (the store or the cache, the project root) and, for a
    PostgreSQL log, every relation file of its schema and of the planner's statistics."""
    places = {str(file.relative_to(tmp_path)): file.read_bytes() for file in tmp_path.rglob("*") if file.is_file()}
    if "cache" in store:
        places.update(server_bytes(str(store["store"])))
    return places


async def write_entity(profile: str, tool: Tool, root: Path) -> tuple[str, dict[str, Any]]:
    """Write the entity (and a relation naming it, a later observation) through the profile's own
    tools; return its workspace and how to read it back through them."""
    if profile == "n2n":
        project = {"projectPath": str(root)}
        await tool("n2n_read_graph", {**project, "confirmNewProjectRoot": str(root)})
        await tool("n2n_add_entities", {**project, "entities": [
            {"name": NAME, "entityType": "person", "observations": [SAID]},
            {"name": "Bob", "entityType": "person", "observations": []}]})
        await tool("n2n_create_relations", {**project, "relations": [
            {"from": "Bob", "to": NAME, "relationType": "knows"}]})
        await tool("n2n_add_observations", {**project, "observations": [{"entityName": NAME, "contents": [LATER]}]})
        marker = json.loads((root / ".mcp" / "chronograph.json").read_text())
        return marker["workspace"], {"n2n_search": {**project, "query": "Quorvath"}}
    if profile == "workspace":
        await tool("upsert_entity", {"workspaceName": "demo", "name": NAME, "entityType": "person",
                                     "observations": [SAID], "metadata": {"note": LATER}})
        await tool("upsert_entity", {"workspaceName": "demo", "name": "Bob", "entityType": "person"})
        await tool("upsert_relation", {"workspaceName": "demo", "from": "Bob", "to": NAME, "relationType": "knows"})
        return "demo", {"read_graph": {"workspaceName": "demo"}}
    if profile == "kuzu":
        await tool("create_entity", {"database": "memory", "name": NAME, "entity_type": "person",
                                     "observations": [SAID]})
        await tool("create_entity", {"database": "memory", "name": "Bob", "entity_type": "person"})
        await tool("create_relationship", {"database": "memory", "from_entity": "Bob", "to_entity": NAME,
                                           "relationship_type": "knows"})
        await tool("add_observations", {"database": "memory", "entity_name": NAME, "observations": [LATER]})
        return "memory", {"search_entities": {"database": "memory", "query": "Quorvath"}}
    await tool("create_entities", {"requestId": "first", "entities": [
        {"name": NAME, "entityType": "person", "observations": [SAID]},
        {"name": "Bob", "entityType": "person", "observations": []}]})
    await tool("create_relations", {"relations": [{"from": "Bob", "to": NAME, "relationType": "knows"}]})
    await tool("add_observations", {"observations": [{"entityName": NAME, "contents": [LATER]}]})
    return "default", {"search_nodes": {"query": "Quorvath"}, "read_graph": {}}


@pytest.mark.parametrize("profile", PROFILES)
async def test_an_entity_and_a_team_entry_forgotten_through_a_profile_leave_no_byte_anywhere(
    tmp_path: Path, backend_store: dict[str, Any], profile: str
) -> None:
    settings = Settings(**backend_store, embeddings="off", profile=profile)
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    runtime = Runtime(settings)
    async with Client(create_server(settings, runtime)) as client:
        offered = {t.name for t in (await client.list_tools()).tools}
        memory = runtime.memory

        async def tool(name: str, arguments: dict[str, Any]) -> Any:
            if name in offered:  # through the profile, as its clients call it
                return await call(client, name, arguments)
            return memory.call(name, arguments, actor="core").output  # what the profile has no tool for

        workspace, reads = await write_entity(profile if profile in ("n2n", "workspace", "kuzu") else "", tool, root)
        conflict = await client.call_tool(*(("add_observations", {"observations": [
            {"entityName": NAME, "contents": ["x"], "expectedVersion": 9}]}) if "add_observations" in offered
            and profile not in ("kuzu",) else ("memory_knowledge", {"action": "get", "id": "kn_missing"})))
        assert conflict.is_error
        entry = await tool("memory_knowledge", {"action": "add", "scopeType": "global", "title": TITLE,
                                                "content": CONTENT})
        entry_id = (entry if isinstance(entry, dict) else entry.reply)["knowledge"]["id"]
        await tool("memory_knowledge", {"action": "update", "id": entry_id, "content": f"{CONTENT} (checked)"})
        for read, arguments in reads.items():
            await tool(read, arguments)
        memory.views.snapshots.spacing = 4
        memory.read("read_graph", {"workspace": workspace, "asOf": memory.log.head()})  # a snapshot of the past
        memory.prepare_search()  # search images
        if "cache" in backend_store:
            analyse(str(backend_store["store"]))  # as autovacuum does, once a table has changed enough
        assert residue(every_byte(tmp_path, backend_store))  # the secrets are there to be forgotten
        if "forget_entity" in offered:
            assert (await tool("forget_entity", {"name": NAME, "reason": "asked", "workspace": workspace}))["scrubbed"]
        if "memory_forget" in offered:
            assert (await tool("memory_forget", {"id": entry_id, "reason": "asked"}))["scrubbed"]
    store = ["--store", str(settings.store), *(["--cache", str(settings.cache)] if settings.cache else [])]
    if "forget_entity" not in offered:
        assert cli(["forget", *store, NAME, "--workspace", workspace, "--reason", "asked"]) == 0
    if "memory_forget" not in offered:
        assert cli(["forget", *store, "--entry", entry_id, "--reason", "asked"]) == 0
    assert residue(every_byte(tmp_path, backend_store)) == []
    runtime = Runtime(settings)
    async with Client(create_server(settings, runtime)) as client:  # nothing comes back from any cache
        for read, arguments in reads.items():
            if read in offered:
                assert NAME not in json.dumps(await call(client, read, arguments))
    assert residue(every_byte(tmp_path, backend_store)) == []
