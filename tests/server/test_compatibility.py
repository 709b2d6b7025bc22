"""Drop-in compatibility: the official tools' names, schemas, annotations and output shapes."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client
from support.mcp import call, entity, relation, text

OFFICIAL = json.loads((Path(__file__).parent / "official_tools.json").read_text())["tools"]
pytestmark = pytest.mark.anyio


def shape(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": schema.get("type")}
    if "description" in schema:
        out["description"] = schema["description"]
    if schema.get("type") == "object":
        out["required"] = schema.get("required", [])
        out["properties"] = {k: shape(v) for k, v in schema.get("properties", {}).items()}
    elif schema.get("type") == "array":
        out["items"] = shape(schema["items"])
    return out


# Fields an opt-in argument leaves out, so the schema cannot require them: summaryMode
# (names and types only). Without it they are always sent (tested below).
OPT_IN_OMISSIONS = {f"{tool}.entities[]": {"observations"} for tool in ("read_graph", "search_nodes", "open_nodes")}


def differences(official: dict[str, Any], ours: dict[str, Any], path: str, *, inputs: bool) -> list[str]:
    """Where `ours` does not offer what `official` does (extra optional properties are fine)."""
    found = []
    for key in ("type", "description"):
        if key in official and official.get(key) != ours.get(key):
            found.append(f"{path}: {key} {ours.get(key)!r} != {official.get(key)!r}")
    if "required" in official:
        if inputs and official["required"] != ours.get("required"):
            found.append(f"{path}: required {ours.get('required')} != {official['required']}")
        optional = OPT_IN_OMISSIONS.get(path, set())
        if not inputs and not set(official["required"]) - optional <= set(ours.get("required", [])):
            found.append(f"{path}: output may lack {official['required']}")
    for name, sub in official.get("properties", {}).items():
        if name not in ours.get("properties", {}):
            found.append(f"{path}.{name}: missing")
        else:
            found += differences(sub, ours["properties"][name], f"{path}.{name}", inputs=inputs)
    if "items" in official:
        found += differences(official["items"], ours.get("items", {}), f"{path}[]", inputs=inputs)
    return found


async def test_the_nine_official_tools_keep_their_names_titles_and_descriptions(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for official in OFFICIAL:
        ours = tools[official["name"]]
        assert (ours.title, ours.description) == (official["title"], official["description"])


async def test_input_schemas_keep_every_official_property_description_and_required_list(
    client: Client,
) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    problems = [
        problem
        for official in OFFICIAL
        for problem in differences(official["input"], shape(tools[official["name"]].input_schema),
                                   official["name"], inputs=True)
    ]
    assert problems == []


async def test_the_official_profile_declares_output_schemas_offering_every_official_field(
    settings: Settings,
) -> None:
    async with Client(create_server(Settings(store=settings.store, profile="official"))) as official_client:
        tools = {t.name: t for t in (await official_client.list_tools()).tools}
    problems = [
        problem
        for official in OFFICIAL
        for problem in differences(official["output"], shape(tools[official["name"]].output_schema or {}),
                                   official["name"], inputs=False)
    ]
    assert problems == []


async def test_the_default_profile_declares_no_output_schema_and_answers_the_same_shapes_with_versions(
    tmp_path: Path, client: Client
) -> None:
    assert all(t.output_schema is None for t in (await client.list_tools()).tools)
    graphs = []
    for c in (client, Client(create_server(Settings(store=tmp_path / "official", profile="official")))):
        async with AsyncExitStack() as stack:
            if c is not client:
                await stack.enter_async_context(c)
            await call(c, "create_entities", {"entities": [entity("Ada", "person", "o"), entity("Bob")]})
            await call(c, "create_relations", {"relations": [relation("Ada", "knows", "Bob")]})
            graphs.append(await call(c, "read_graph"))
    ours, official = ({key: sorted(items[0]) for key, items in graph.items()} for graph in graphs)
    assert ours == {key: sorted([*fields, "version"]) for key, fields in official.items()}  # for expectedVersion


@pytest.mark.parametrize(("tool", "arguments"), [
    ("read_graph", {}), ("search_nodes", {"query": "ada"}), ("open_nodes", {"names": ["Ada"]})])
async def test_reads_send_every_official_field_unless_summary_mode_is_asked_for(
    client: Client, tool: str, arguments: dict[str, Any]
) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada", "person", "o")]})
    [full] = (await call(client, tool, arguments))["entities"]
    [brief] = (await call(client, tool, {**arguments, "summaryMode": True}))["entities"]
    assert {"name", "entityType", "observations"} <= set(full)
    assert brief == {"name": "Ada", "entityType": "person"}


@pytest.mark.parametrize(("tool", "arguments"), [
    ("read_graph", {}), ("search_nodes", {"query": "a"}), ("open_nodes", {"names": ["Ada", "Bob"]})])
async def test_a_summary_is_names_types_and_counts(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada", "person", "o" * 400), entity("Bob", "cat")]})
    await call(client, "create_relations", {"relations": [
        relation("Ada", "feeds", "Bob", confidence=0.9, metadata={"since": 2020})]})
    full = await call(client, tool, arguments)
    brief = await call(client, tool, {**arguments, "summaryMode": True})
    assert brief["relations"] == [{"from": "Ada", "to": "Bob", "relationType": "feeds"}]
    assert len(json.dumps(brief)) * 2 < len(json.dumps(full))
    if tool == "read_graph":
        assert {k: brief[k] for k in ("totalEntities", "totalRelations", "entityTypes", "relationTypes")} == {
            "totalEntities": 2, "totalRelations": 1, "entityTypes": {"cat": 1, "person": 1},
            "relationTypes": {"feeds": 1}}


async def test_annotations_match_the_official_hints(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for official in OFFICIAL:
        hints = tools[official["name"]].annotations.model_dump(by_alias=True, exclude_none=True)  # type: ignore[union-attr]
        assert hints == official["annotations"], official["name"]


async def test_the_official_profile_exposes_exactly_the_nine_tools(settings: Settings) -> None:
    async with Client(create_server(Settings(store=settings.store, profile="official"))) as c:
        assert [t.name for t in (await c.list_tools()).tools] == [t["name"] for t in OFFICIAL]


async def test_the_text_block_is_the_structured_answer_as_compact_json(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada", "person", "ünïcode")]})
    graph = await call(client, "read_graph")
    assert await text(client, "read_graph") == json.dumps(graph, separators=(",", ":"), ensure_ascii=False)


async def test_the_official_profile_prints_it_with_two_spaces_as_the_official_server(settings: Settings) -> None:
    async with Client(create_server(Settings(store=settings.store, profile="official"))) as c:
        await call(c, "create_entities", {"entities": [entity("Ada", "person", "ünïcode")]})
        graph = await call(c, "read_graph")
        assert await text(c, "read_graph") == json.dumps(graph, indent=2, ensure_ascii=False)


async def test_create_tools_print_a_bare_array_as_the_official_server_does(client: Client) -> None:
    result = await client.call_tool("create_entities", {"entities": [entity("Ada")]})
    printed = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert printed == result.structured_content["entities"]  # type: ignore[index]


async def test_delete_tools_print_their_message_and_report_success(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada")]})
    result = await client.call_tool("delete_entities", {"entityNames": ["Ada"]})
    structured = result.structured_content
    assert structured is not None and structured["success"] is True
    assert result.content[0].text == structured["message"]  # type: ignore[union-attr]


async def test_an_empty_store_reads_as_an_empty_graph(client: Client) -> None:
    assert await text(client, "read_graph") == '{"entities":[],"relations":[]}'


async def test_the_knowledge_graph_resource_reads_like_read_graph(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada")]})
    await call(client, "create_relations", {"relations": [relation("Ada", "knows", "Ada")]})
    resource = await client.read_resource("memory://knowledge-graph")
    assert resource.contents[0].text == await text(client, "read_graph")  # type: ignore[union-attr]
    listed = (await client.list_resources()).resources
    assert [(r.uri, r.mime_type) for r in listed][0] == ("memory://knowledge-graph", "application/json")
