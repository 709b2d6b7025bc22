"""The official semantics, and the deliberate improvements, tool by tool through a client."""

from __future__ import annotations

import pytest
from mcp import Client
from support.mcp import ToolFailed, call, entity, names, relation, triples

pytestmark = pytest.mark.anyio


async def seed(client: Client) -> None:
    await call(client, "create_entities", {"entities": [
        entity("Ada", "person", "wrote the first program", "likes tea"),
        entity("Babbage", "person", "designed the Analytical Engine"),
        entity("Engine", "machine", "never finished"),
    ]})
    await call(client, "create_relations", {"relations": [
        relation("Ada", "knows", "Babbage"), relation("Babbage", "designed", "Engine"),
    ]})


async def test_create_entities_returns_the_new_ones_with_their_version_and_no_timestamps(client: Client) -> None:
    created = await call(client, "create_entities", {"entities": [entity("Ada", "person", "a", "a", "b")]})
    [ada] = created["entities"]
    assert ada == {"name": "Ada", "entityType": "person", "observations": ["a", "b"], "version": 1}
    [read] = (await call(client, "open_nodes", {"names": ["Ada"], "includeMetadata": True}))["entities"]
    assert read["createdAt"] == read["updatedAt"] and read["createdAt"].endswith("Z")


async def test_create_entities_skips_names_that_exist(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada", "person", "first")]})
    again = await call(client, "create_entities", {"entities": [entity("Ada", "robot"), entity("Bob")]})
    assert names(again) == ["Bob"]
    [ada] = (await call(client, "open_nodes", {"names": ["Ada"]}))["entities"]
    assert ada["entityType"] == "person" and ada["observations"] == ["first"]


async def test_a_name_repeated_in_one_batch_is_created_once(client: Client) -> None:
    created = await call(client, "create_entities", {"entities": [entity("Ada", "a"), entity("Ada", "b")]})
    assert [(e["name"], e["entityType"]) for e in created["entities"]] == [("Ada", "a")]
    assert names(await call(client, "read_graph")) == ["Ada"]


async def test_create_relations_skips_existing_triples_and_repeats(client: Client) -> None:
    await seed(client)
    created = await call(client, "create_relations", {"relations": [
        relation("Ada", "knows", "Babbage"), relation("Ada", "admires", "Babbage"),
        relation("Ada", "admires", "Babbage"),
    ]})
    assert triples(created) == [("Ada", "admires", "Babbage")]


async def test_a_relation_to_a_missing_entity_is_refused_and_nothing_is_written(client: Client) -> None:
    await seed(client)
    with pytest.raises(ToolFailed, match="'Zed', 'Yan'"):
        await call(client, "create_relations", {"relations": [
            relation("Ada", "likes", "Engine"), relation("Zed", "knows", "Yan"),
        ]})
    assert ("Ada", "likes", "Engine") not in triples(await call(client, "read_graph"))


async def test_add_observations_adds_only_new_ones_and_reports_them(client: Client) -> None:
    await seed(client)
    result = await call(client, "add_observations", {"observations": [
        {"entityName": "Ada", "contents": ["likes tea", "plays chess", "plays chess"]},
    ]})
    assert result == {"results": [{"entityName": "Ada", "addedObservations": ["plays chess"]}]}


async def test_add_observations_on_a_missing_entity_fails_the_whole_call(client: Client) -> None:
    await seed(client)
    with pytest.raises(ToolFailed, match="Entity with name Nobody not found"):
        await call(client, "add_observations", {"observations": [
            {"entityName": "Ada", "contents": ["saved?"]}, {"entityName": "Nobody", "contents": ["x"]},
        ]})
    [ada] = (await call(client, "open_nodes", {"names": ["Ada"]}))["entities"]
    assert "saved?" not in ada["observations"]


async def test_deleting_an_entity_deletes_its_relations_and_counts_them(client: Client) -> None:
    await seed(client)
    result = await call(client, "delete_entities", {"entityNames": ["Babbage", "Nobody"]})
    assert (result["deleted"], result["relationsDeleted"], result["notFound"]) == (1, 2, ["Nobody"])
    assert "Nobody" in result["message"]
    graph = await call(client, "read_graph")
    assert names(graph) == ["Ada", "Engine"] and graph["relations"] == []


async def test_deleting_what_does_not_exist_is_not_an_error(client: Client) -> None:
    result = await call(client, "delete_relations", {"relations": [relation("A", "x", "B")]})
    assert result["success"] and result["deleted"] == 0 and result["notFound"] == ["A -[x]-> B"]
    result = await call(client, "delete_observations", {"deletions": [{"entityName": "A", "observations": ["o"]}]})
    assert result["success"] and result["notFound"] == ["A"]


async def test_delete_observations_removes_the_ones_present(client: Client) -> None:
    await seed(client)
    result = await call(client, "delete_observations", {"deletions": [
        {"entityName": "Ada", "observations": ["likes tea", "never said"]},
    ]})
    assert (result["deleted"], result["notFound"]) == (1, ["Ada: never said"])
    [ada] = (await call(client, "open_nodes", {"names": ["Ada"]}))["entities"]
    assert ada["observations"] == ["wrote the first program"] and ada["version"] == 2


async def test_search_matches_name_type_and_observations_in_any_case(client: Client) -> None:
    await seed(client)
    assert names(await call(client, "search_nodes", {"query": "ANALYTICAL"})) == ["Babbage"]
    assert names(await call(client, "search_nodes", {"query": "machine"})) == ["Engine"]
    assert names(await call(client, "search_nodes", {"query": "a"})) == ["Ada", "Babbage", "Engine"]


async def test_search_returns_relations_with_at_least_one_end_found(client: Client) -> None:
    await seed(client)
    found = await call(client, "search_nodes", {"query": "tea"})
    assert names(found) == ["Ada"] and triples(found) == [("Ada", "knows", "Babbage")]


async def test_open_nodes_returns_known_names_in_stored_order_with_touching_relations(client: Client) -> None:
    await seed(client)
    opened = await call(client, "open_nodes", {"names": ["Engine", "Nobody", "Ada"]})
    assert names(opened) == ["Ada", "Engine"]
    assert triples(opened) == [("Ada", "knows", "Babbage"), ("Babbage", "designed", "Engine")]


async def test_update_entities_replaces_fields_and_bumps_the_version(client: Client) -> None:
    await seed(client)
    [ada] = (await call(client, "update_entities", {"entities": [
        {"name": "Ada", "entityType": "mathematician", "metadata": {"born": 1815}},
    ]}))["entities"]
    assert (ada["entityType"], ada["metadata"], ada["version"]) == ("mathematician", {"born": 1815}, 2)
    assert ada["observations"] == ["wrote the first program", "likes tea"]
    with pytest.raises(ToolFailed, match="Entity with name Nobody not found"):
        await call(client, "update_entities", {"entities": [{"name": "Nobody", "entityType": "x"}]})


async def test_update_relations_changes_confidence(client: Client) -> None:
    await seed(client)
    [knows] = (await call(client, "update_relations", {"relations": [
        {"from": "Ada", "to": "Babbage", "relationType": "knows", "confidence": 0.9},
    ]}))["relations"]
    assert (knows["confidence"], knows["version"]) == (0.9, 2)
    with pytest.raises(ToolFailed, match="not found"):
        await call(client, "update_relations", {"relations": [
            {"from": "Ada", "to": "Engine", "relationType": "knows", "confidence": 0.1},
        ]})


async def test_workspaces_are_isolated(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada", "person", "private")], "workspace": "alpha"})
    assert (await call(client, "read_graph"))["entities"] == []
    assert (await call(client, "search_nodes", {"query": "private"}))["entities"] == []
    assert names(await call(client, "read_graph", {"workspace": "alpha"})) == ["Ada"]


async def test_arrays_sent_as_json_text_are_accepted_as_claude_desktop_sends_them(client: Client) -> None:
    as_text = '[{"name": "Ada", "entityType": "p", "observations": []}]'
    created = await call(client, "create_entities", {"entities": as_text})
    assert names(created) == ["Ada"]


async def test_ranked_search_orders_by_word_relevance_and_reports_scores(client: Client) -> None:
    await call(client, "create_entities", {"entities": [
        entity("Teapot", "object", "a pot"), entity("Ada", "person", "drinks tea", "tea at noon", "tea"),
        entity("Bob", "person", "tea once"),
    ]})
    found = await call(client, "search_nodes", {"query": "tea", "ranked": True})
    assert names(found) == ["Ada", "Bob"]  # whole words only: no Teapot
    assert found["scores"][0] > found["scores"][1] > 0
    assert names(await call(client, "search_nodes", {"query": "tea", "ranked": True, "limit": 1})) == ["Ada"]
    assert "scores" not in await call(client, "search_nodes", {"query": "tea"})


async def test_opening_a_deleted_name_says_when_it_was_deleted_and_how_to_bring_it_back(client: Client) -> None:
    await seed(client)
    await call(client, "delete_entities", {"entityNames": ["Engine"]})
    opened = await call(client, "open_nodes", {"names": ["Engine", "Ada", "Nobody"]})
    assert names(opened) == ["Ada"]
    [gone] = opened["gone"]
    assert (gone["name"], gone["event"]) == ("Engine", "entity_deleted")
    assert "revert_entity" in gone["hint"] and gone["recordedAt"].endswith("Z")
    history = await call(client, "get_entity_history", {"name": "Engine", "order": "newest", "limit": 1})
    assert gone["position"] == history["versions"][0]["position"]
    assert "gone" not in await call(client, "open_nodes", {"names": ["Engine"], "asOf": gone["position"] - 1})


async def test_the_official_profile_keeps_the_official_shape_and_says_it_in_meta(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from chronograph.server.app import create_server
    from chronograph.server.config import Settings

    server = create_server(Settings(store=tmp_path / "store", embeddings="off", profile="official"))
    async with Client(server) as official:
        await seed(official)
        await call(official, "delete_entities", {"entityNames": ["Engine"]})
        result = await official.call_tool("open_nodes", {"names": ["Engine"]})
    assert result.structured_content == {"entities": [], "relations": []}
    assert result.content[0].text == '{\n  "entities": [],\n  "relations": []\n}'  # type: ignore[union-attr]
    [gone] = result.meta["chronograph/gone"]  # type: ignore[index]
    assert (gone["name"], gone["event"]) == ("Engine", "entity_deleted")
