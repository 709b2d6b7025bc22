"""`--profile workspace`: the workspace upsert server's four tools through a real MCP client,
walked through with its reference's examples and error cases."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from chronograph.server.app import Runtime, create_server
from chronograph.server.config import Settings
from mcp import Client
from support.mcp import call

pytestmark = pytest.mark.anyio


@pytest.fixture
async def workspace(backend_store: dict[str, Any]) -> AsyncIterator[Client]:
    async with Client(create_server(Settings(**backend_store, embeddings="off", profile="workspace"))) as c:
        yield c


async def refusal(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    shaped = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert shaped == result.structured_content and shaped["success"] is False
    return shaped


async def test_the_profile_offers_the_four_tools(workspace: Client) -> None:
    assert [t.name for t in (await workspace.list_tools()).tools] == [
        "read_graph", "upsert_entity", "upsert_relation", "get_entity_relations"]


async def test_the_reference_examples_work_and_ids_are_stable(workspace: Client) -> None:
    alice = await call(workspace, "upsert_entity", {
        "workspaceName": "demo", "name": "Alice", "entityType": "Person", "observations": ["Software engineer"],
        "metadata": "{\"dept\":\"Engineering\"}"})
    assert (alice["success"], alice["workspace"], alice["name"], alice["created"]) == (True, "demo", "Alice", True)
    project = await call(workspace, "upsert_entity", {"workspaceName": "demo", "name": "ProjectX",
                                                      "entityType": "Project"})
    by_names = await call(workspace, "upsert_relation", {"workspaceName": "demo", "from": "Alice", "to": "ProjectX",
                                                         "relationType": "works_on"})
    assert (by_names["fromEntityId"], by_names["toEntityId"]) == (alice["id"], project["id"])
    by_ids = await call(workspace, "upsert_relation", {
        "workspaceName": "demo", "fromEntityId": alice["id"], "toEntityId": project["id"],
        "relationType": "works_on", "metadata": "{\"since\":\"2025\"}"})
    assert by_ids["relationId"] == by_names["relationId"] and by_ids["created"] is False
    again = await call(workspace, "upsert_entity", {"workspaceName": "demo", "name": "Alice", "entityType": "Person",
                                                    "observations": ["Staff engineer"]})
    assert (again["id"], again["created"], again["version"]) == (alice["id"], False, 2)
    relations = await call(workspace, "get_entity_relations", {"workspaceName": "demo", "entityId": alice["id"]})
    assert relations["relations"][0]["toEntityId"] == project["id"]
    assert json.loads(relations["relations"][0]["metadata"]) == {"since": "2025"}
    assert (await call(workspace, "get_entity_relations", {"workspaceName": "demo", "entityName": "Alice"}
                       ))["entityId"] == alice["id"]
    graph = await call(workspace, "read_graph", {"workspaceName": "demo"})
    [stored] = [e for e in graph["entities"] if e["name"] == "Alice"]
    assert stored["observations"] == ["Staff engineer"] and json.loads(stored["metadata"]) == {"dept": "Engineering"}
    assert [r["relationType"] for r in graph["relations"]] == ["works_on"]
    assert (await call(workspace, "read_graph", {"workspaceName": "other"}))["entities"] == []


async def test_the_reference_s_errors_come_in_its_shape_with_a_code(workspace: Client) -> None:
    await call(workspace, "upsert_entity", {"workspaceName": "demo", "name": "Alice", "entityType": "Person"})
    missing = await refusal(workspace, "upsert_relation", {"workspaceName": "demo", "from": "Alice", "to": "Y",
                                                           "relationType": "knows"})
    assert (missing["message"], missing["code"]) == ("Target entity 'Y' not found.", "not_found")
    vague = await refusal(workspace, "upsert_relation", {"workspaceName": "demo", "relationType": "knows"})
    assert "Provide fromEntityId/toEntityId" in vague["message"] and vague["code"] == "invalid"
    unknown = await refusal(workspace, "get_entity_relations", {"workspaceName": "demo", "entityId": "entity-nope"})
    assert unknown["code"] == "not_found" and "not found in workspace 'demo'" in unknown["message"]
    invalid = await refusal(workspace, "upsert_entity", {"workspaceName": "demo", "name": "B"})
    assert invalid["code"] == "invalid" and "entityType" in invalid["message"]
    bad_json = await refusal(workspace, "upsert_entity", {"workspaceName": "demo", "name": "B", "entityType": "T",
                                                          "metadata": "{not json"})
    assert bad_json["code"] == "invalid"
    graph = await call(workspace, "read_graph", {"workspaceName": "demo"})
    assert [e["name"] for e in graph["entities"]] == ["Alice"]  # nothing of a refused call was written


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": NaN}', "not finite"), ('{"a": 1e400}', "not finite"),
    ('{"a": 100000000000000000000000000000}', "outside the 64-bit integers"),
    ('{"\\ud800": 1}', "unpaired surrogate"), (json.dumps({"k": "v" * 20_000}), "16384"),
])
async def test_metadata_sent_as_json_text_is_held_to_what_an_object_is_held_to(
    workspace: Client, text: str, expected: str
) -> None:
    refused = await refusal(workspace, "upsert_entity", {"workspaceName": "demo", "name": "B", "entityType": "T",
                                                         "metadata": text})
    assert refused["code"] == "invalid" and expected in refused["message"]
    assert (await call(workspace, "read_graph", {"workspaceName": "demo"}))["entities"] == []


ENTITY_SHAPE = {"workspaceName", "name", "entityType", "observations", "metadata", "id"}


async def test_entities_come_back_in_exactly_the_reference_s_shape(workspace: Client) -> None:
    await call(workspace, "upsert_entity", {"workspaceName": "demo", "name": "Alice", "entityType": "Person",
                                            "observations": ["Software engineer"],
                                            "metadata": "{\"dept\":\"Engineering\"}"})
    await call(workspace, "upsert_entity", {"workspaceName": "demo", "name": "ProjectX", "entityType": "Project"})
    graph = await call(workspace, "read_graph", {"workspaceName": "demo"})
    assert graph["workspaceName"] == "demo"
    assert [set(e) for e in graph["entities"]] == [ENTITY_SHAPE, ENTITY_SHAPE]
    [alice] = [e for e in graph["entities"] if e["name"] == "Alice"]
    assert {k: v for k, v in alice.items() if k != "id"} == {
        "workspaceName": "demo", "name": "Alice", "entityType": "Person", "observations": ["Software engineer"],
        "metadata": "{\"dept\": \"Engineering\"}"}


async def test_the_upserts_describe_expected_version_in_their_schema(workspace: Client) -> None:
    tools = {t.name: t.input_schema for t in (await workspace.list_tools()).tools}
    for name in ("upsert_entity", "upsert_relation"):
        field = tools[name]["properties"]["expectedVersion"]
        assert field["type"] == "integer" and "version" in field["description"]
        assert "conflict" in field["description"] and "expectedVersion" not in tools[name].get("required", [])


async def test_an_upsert_with_a_stale_expected_version_is_refused_and_writes_nothing(workspace: Client) -> None:
    alice = {"workspaceName": "demo", "name": "Alice", "entityType": "Person"}
    first = await call(workspace, "upsert_entity", {**alice, "observations": ["a"], "expectedVersion": 0})
    assert first["version"] == 1
    second = await call(workspace, "upsert_entity", {**alice, "observations": ["b"], "expectedVersion": 1})
    assert second["version"] == 2
    stale = await refusal(workspace, "upsert_entity", {**alice, "observations": ["c"], "expectedVersion": 1})
    assert stale["code"] == "conflict" and "version 2" in stale["message"]
    exists = await refusal(workspace, "upsert_entity", {**alice, "expectedVersion": 0})
    assert exists["code"] == "conflict"
    await call(workspace, "upsert_entity", {"workspaceName": "demo", "name": "ProjectX", "entityType": "Project"})
    link = {"workspaceName": "demo", "from": "Alice", "to": "ProjectX", "relationType": "works_on"}
    made = await call(workspace, "upsert_relation", {**link, "expectedVersion": 0})
    assert made["version"] == 1
    late = await refusal(workspace, "upsert_relation", {**link, "metadata": "{\"since\":\"2025\"}",
                                                        "expectedVersion": 0})
    assert late["code"] == "conflict"
    graph = await call(workspace, "read_graph", {"workspaceName": "demo"})
    [stored] = [e for e in graph["entities"] if e["name"] == "Alice"]
    assert stored["observations"] == ["b"] and json.loads(graph["relations"][0]["metadata"]) == {}


async def test_an_upsert_guarded_by_the_version_of_an_entity_renamed_since_is_a_conflict_that_names_it(
        backend_store: dict[str, Any]) -> None:
    runtime = Runtime(Settings(**backend_store, embeddings="off", profile="workspace"))
    async with Client(create_server(runtime.settings, runtime)) as workspace:
        alice = {"workspaceName": "demo", "name": "Alice", "entityType": "Person"}
        await call(workspace, "upsert_entity", alice)
        await call(workspace, "upsert_entity", {"workspaceName": "demo", "name": "ProjectX", "entityType": "Project"})
        link = {"workspaceName": "demo", "from": "Alice", "to": "ProjectX", "relationType": "works_on"}
        await call(workspace, "upsert_relation", link)
        runtime.memory.write("rename_entity", {"workspace": "demo", "name": "Alice", "newName": "Alicia"},
                             actor="another client")  # between this client's read and its write
        stale = await refusal(workspace, "upsert_entity", {**alice, "observations": ["x"], "expectedVersion": 1})
        assert stale["code"] == "conflict" and "it is 'Alicia' now, at version 2" in stale["message"]
        late = await refusal(workspace, "upsert_relation", {**link, "expectedVersion": 1})
        assert late["code"] == "conflict" and "it is 'Alicia' -[works_on]-> 'ProjectX' now" in late["message"]
        unguarded = await refusal(workspace, "upsert_relation", link)
        assert unguarded["code"] == "not_found"
