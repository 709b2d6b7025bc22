"""`--profile kuzu`: the Kuzu memory graph's seven tools and its database list, through a real
MCP client, with its reference's examples and error cases."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client
from support.mcp import call

pytestmark = pytest.mark.anyio
ALICE = {"database": "memory", "name": "Alice Johnson", "entity_type": "person", "observations": [
    "Software engineer at TechCorp", "Lives in San Francisco", "Expert in Python and machine learning"]}


@pytest.fixture
async def kuzu(backend_store: dict[str, Any]) -> AsyncIterator[Client]:
    async with Client(create_server(Settings(**backend_store, embeddings="off", profile="kuzu"))) as c:
        yield c


async def refusal(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    shaped = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert shaped == result.structured_content and shaped["status"] == "error"
    return shaped


async def test_the_profile_offers_the_seven_tools_and_the_database_list(kuzu: Client) -> None:
    assert [t.name for t in (await kuzu.list_tools()).tools] == [
        "create_entity", "create_relationship", "add_observations", "search_entities", "semantic_search",
        "get_related_entities", "get_graph_summary"]
    await call(kuzu, "create_entity", {**ALICE, "database": "research_papers", "create": True})
    listed = json.loads((await kuzu.read_resource("kuzu://databases/list")).contents[0].text)  # type: ignore[union-attr]
    assert listed["primary_database"] == "memory" and listed["count"] == 2
    assert {d["name"]: d["is_primary"] for d in listed["databases"]} == {"memory": True, "research_papers": False}


async def test_the_reference_examples_work(kuzu: Client) -> None:
    created = await call(kuzu, "create_entity", ALICE)
    assert {k: created[k] for k in ("status", "database", "name", "type", "observations_count")} == {
        "status": "created", "database": "memory", "name": "Alice Johnson", "type": "person", "observations_count": 3}
    again = await call(kuzu, "create_entity", ALICE)
    assert (again["status"], again["message"]) == ("exists", "Entity already exists")
    await call(kuzu, "create_entity", {"database": "memory", "name": "Machine Learning", "entity_type": "concept"})
    await call(kuzu, "create_entity", {"database": "memory", "name": "Deep Learning", "entity_type": "concept"})
    related = await call(kuzu, "create_relationship", {
        "database": "memory", "from_entity": "Alice Johnson", "to_entity": "Machine Learning",
        "relationship_type": "EXPERT_IN", "confidence": 0.9})
    assert (related["status"], related["from"], related["confidence"]) == ("created", "Alice Johnson", 0.9)
    await call(kuzu, "create_relationship", {"database": "memory", "from_entity": "Machine Learning",
                                             "to_entity": "Deep Learning", "relationship_type": "INCLUDES"})
    added = await call(kuzu, "add_observations", {"database": "memory", "entity_name": "Alice Johnson",
                                                  "observations": ["Recently completed TensorFlow certification",
                                                                   "Contributing to open source projects"]})
    assert (added["status"], added["total_observations"], len(added["added_observations"])) == ("updated", 5, 2)
    same = await call(kuzu, "add_observations", {"database": "memory", "entity_name": "Alice Johnson",
                                                 "observations": ["Lives in San Francisco"]})
    assert same["status"] == "no_change"
    found = await call(kuzu, "search_entities", {"database": "memory", "query": "software engineer", "limit": 5})
    assert found["count"] == 1 and found["entities"][0]["name"] == "Alice Johnson"
    assert len(found["entities"][0]["created_date"]) == 10
    near = await call(kuzu, "get_related_entities", {"database": "memory", "entity_name": "Alice Johnson",
                                                     "max_depth": 2, "limit": 10})
    assert [(e["name"], e["distance"], e["relationship_path"], e["confidence_path"]) for e in near["entities"]] == [
        ("Machine Learning", 1, ["EXPERT_IN"], [0.9]), ("Deep Learning", 2, ["EXPERT_IN", "INCLUDES"], [0.9, 1.0])]
    one = await call(kuzu, "get_graph_summary", {"database": "memory"})
    assert one["scope"] == "single_database" and one["stats"] == {
        "entities": 3, "relationships": 2, "entity_types": 2, "relationship_types": 2}
    assert one["entity_types"][0] == {"type": "concept", "count": 2}
    every = await call(kuzu, "get_graph_summary", {})
    assert every == {"scope": "all_databases", "databases": {"memory": {"entities": 3, "relationships": 2}},
                     "total_databases": 1}


async def test_the_reference_s_errors_come_in_its_shape_with_a_code(kuzu: Client) -> None:
    missing = await refusal(kuzu, "add_observations", {"database": "memory", "entity_name": "Nobody",
                                                       "observations": ["x"]})
    assert (missing["message"], missing["code"]) == ("Entity 'Nobody' not found", "not_found")
    await call(kuzu, "create_entity", ALICE)
    ends = await refusal(kuzu, "create_relationship", {"database": "memory", "from_entity": "Alice Johnson",
                                                       "to_entity": "Bob", "relationship_type": "KNOWS"})
    assert ends["message"] == "One or both entities not found: Bob"
    threshold = await refusal(kuzu, "semantic_search", {"database": "memory", "query": "x", "threshold": 1.5})
    assert threshold["code"] == "invalid" and "threshold" in threshold["message"]
    for bad in ("../etc", "a/b", "..", "x\x00y"):
        path = await refusal(kuzu, "create_entity", {**ALICE, "database": bad})
        assert path["code"] == "invalid"
    off = await refusal(kuzu, "semantic_search", {"database": "memory", "query": "AI programming expertise"})
    assert off["code"] == "unavailable"
    listed = json.loads((await kuzu.read_resource("kuzu://databases/list")).contents[0].text)  # type: ignore[union-attr]
    assert [d["name"] for d in listed["databases"]] == ["memory"]  # no refused call made a database


async def test_semantic_search_finds_by_meaning_with_the_bundled_model(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    settings = Settings(store=tmp_path / "s", embeddings="local", profile="kuzu")
    async with Client(create_server(settings)) as kuzu:
        await call(kuzu, "create_entity", {**ALICE, "database": "research_papers", "create": True})
        await call(kuzu, "create_entity", {"database": "research_papers", "name": "Sourdough", "entity_type": "recipe",
                                           "observations": ["Bread made with a fermented starter"]})
        found = await call(kuzu, "semantic_search", {"database": "research_papers", "query": "AI programming expertise",
                                                     "limit": 5, "threshold": 0.2})
    assert found["entities"][0]["name"] == "Alice Johnson" and found["method"] == "vector_similarity"
    assert found["entities"][0]["similarity"] > found["threshold"]


async def databases_listed(client: Client) -> list[str]:
    listed = json.loads((await client.read_resource("kuzu://databases/list")).contents[0].text)  # type: ignore[union-attr]
    return [d["name"] for d in listed["databases"]]


async def test_a_misspelt_database_is_refused_and_never_created(kuzu: Client) -> None:
    await call(kuzu, "create_entity", ALICE)
    typo = {"database": "no_such_database"}
    for tool, arguments in [
        ("search_entities", {"query": "Alice"}), ("semantic_search", {"query": "Alice"}),
        ("create_entity", {"name": "Bob", "entity_type": "person"}),
        ("create_relationship", {"from_entity": "Alice Johnson", "to_entity": "Alice Johnson",
                                 "relationship_type": "KNOWS"}),
        ("add_observations", {"entity_name": "Alice Johnson", "observations": ["x"]}),
        ("get_related_entities", {"entity_name": "Alice Johnson"}), ("get_graph_summary", {}),
    ]:
        refused = await refusal(kuzu, tool, {**typo, **arguments})
        assert set(refused) == {"status", "message", "code"} and refused["code"] == "not_found", tool
        assert refused["message"].startswith("Database 'no_such_database' not found. Available databases: memory")
        assert "create: true" in refused["message"]
    assert await databases_listed(kuzu) == ["memory"]
    assert (await call(kuzu, "get_graph_summary", {}))["total_databases"] == 1


async def test_a_workspace_whose_name_no_database_may_have_is_not_listed(backend_store: dict[str, Any]) -> None:
    settings = {**backend_store, "embeddings": "off"}
    async with Client(create_server(Settings(**settings))) as other:  # another profile's workspace
        await call(other, "create_entities", {"workspace": "my notes", "entities": [
            {"name": "Ada", "entityType": "person", "observations": []}]})
        await call(other, "create_entities", {"workspace": "lab", "entities": [
            {"name": "Bob", "entityType": "person", "observations": []}]})
    async with Client(create_server(Settings(**settings, profile="kuzu"))) as kuzu:
        assert await databases_listed(kuzu) == ["memory", "lab"]
        summary = await call(kuzu, "get_graph_summary", {})
        assert set(summary["databases"]) == {"lab"} and summary["total_databases"] == 1
        missing = await refusal(kuzu, "search_entities", {"database": "nope", "query": "x"})
        assert "my notes" not in missing["message"] and "lab" in missing["message"]


async def test_create_true_creates_a_database_which_is_listed_from_then_on(kuzu: Client) -> None:
    made = await call(kuzu, "create_entity", {**ALICE, "database": "prompt_engineer", "create": True})
    assert (made["status"], made["database"]) == ("created", "prompt_engineer")
    assert await databases_listed(kuzu) == ["memory", "prompt_engineer"]
    found = await call(kuzu, "search_entities", {"database": "prompt_engineer", "query": "Alice"})
    assert [e["name"] for e in found["entities"]] == ["Alice Johnson"]
    again = await call(kuzu, "create_entity", {"database": "prompt_engineer", "name": "Bob", "entity_type": "person"})
    assert again["status"] == "created"  # an existing database needs no create
    empty = await call(kuzu, "search_entities", {"database": "memory", "query": "Alice"})
    assert empty["count"] == 0  # the primary exists before anything is written to it
    tools = {t.name: t.input_schema for t in (await kuzu.list_tools()).tools}
    assert "database" in tools["create_entity"]["properties"]["create"]["description"]


async def test_with_the_model_loaded_writes_answer_embedded_true_and_are_found_at_once(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    settings = Settings(store=tmp_path / "s", embeddings="local", profile="kuzu")
    async with Client(create_server(settings)) as kuzu:
        warm = await call(kuzu, "semantic_search", {"database": "memory", "query": "anything"})  # loads the model
        assert warm["count"] == 0
        created = await call(kuzu, "create_entity", ALICE)
        assert created == {"status": "created", "database": "memory", "name": "Alice Johnson", "type": "person",
                           "observations_count": 3, "embedded": True}
        found = await call(kuzu, "semantic_search", {"database": "memory", "query": "AI programming expertise",
                                                     "limit": 5, "threshold": 0.2})
        assert [e["name"] for e in found["entities"]] == ["Alice Johnson"]
        added = await call(kuzu, "add_observations", {"database": "memory", "entity_name": "Alice Johnson",
                                                      "observations": ["Recently completed TensorFlow certification"]})
        assert (added["status"], added["reembedded"]) == ("updated", True)
        again = await call(kuzu, "semantic_search", {"database": "memory", "query": "TensorFlow certificate",
                                                     "limit": 5, "threshold": 0.2})
        assert "Recently completed TensorFlow certification" in again["entities"][0]["observations"]


async def test_without_embeddings_writes_answer_embedded_false(kuzu: Client) -> None:
    created = await call(kuzu, "create_entity", ALICE)
    assert created["embedded"] is False
    added = await call(kuzu, "add_observations", {"database": "memory", "entity_name": "Alice Johnson",
                                                  "observations": ["Contributing to open source projects"]})
    assert added["reembedded"] is False


async def test_semantic_search_points_at_the_matched_observations_and_can_limit_them(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    settings = Settings(store=tmp_path / "s", embeddings="local", profile="kuzu")
    async with Client(create_server(settings)) as kuzu:
        await call(kuzu, "create_entity", ALICE)
        found = await call(kuzu, "semantic_search", {"database": "memory", "query": "AI programming expertise",
                                                     "threshold": 0.1, "matches_per_entity": 1})
        cut = await call(kuzu, "semantic_search", {"database": "memory", "query": "where does she live",
                                                   "threshold": 0.1, "observations_limit": 1})
    alice = found["entities"][0]
    assert alice["matched_observations"][0]["text"] == "Expert in Python and machine learning"
    assert len(alice["matched_observations"]) == 1 and len(alice["observations"]) == 3
    assert cut["entities"][0]["observations"] == ["Lives in San Francisco"]
