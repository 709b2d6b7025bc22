"""History, time travel and audit through the MCP tools, on a frozen clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from chronograph.server.app import Runtime, create_server
from chronograph.server.config import Settings
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory
from mcp import Client
from mcp_types import Implementation
from support.mcp import ToolFailed, call, entity, names, relation

pytestmark = pytest.mark.anyio

T1, T15, T2, T25, T3 = (
    "2026-03-01T10:00:00Z", "2026-03-01T10:30:00Z", "2026-03-01T11:00:00Z",
    "2026-03-01T11:30:00Z", "2026-03-01T12:00:00Z",
)


@pytest.fixture
def clock() -> Iterator[FrozenDateTimeFactory]:
    with freeze_time(T1, real_asyncio=True) as frozen:
        yield frozen


@pytest.fixture
async def client(settings: Settings, runtime: Runtime, clock: FrozenDateTimeFactory) -> AsyncIterator[Client]:
    async with Client(create_server(settings, runtime), client_info=Implementation(name="agent", version="1")) as c:
        yield c


async def ada_lifecycle(client: Client, clock: FrozenDateTimeFactory) -> None:
    """Create at T1, update at T2, delete at T3."""
    await call(client, "create_entities", {"entities": [entity("Ada", "person", "math")]})
    clock.move_to(T2)
    await call(client, "update_entities", {"entities": [{"name": "Ada", "entityType": "countess"}]})
    clock.move_to(T3)
    await call(client, "delete_entities", {"entityNames": ["Ada"]})


async def test_as_of_between_changes_shows_the_state_in_force_then(
    client: Client, clock: FrozenDateTimeFactory
) -> None:
    await ada_lifecycle(client, clock)
    [then] = (await call(client, "open_nodes", {"names": ["Ada"], "asOf": T15}))["entities"]
    assert (then["entityType"], then["version"]) == ("person", 1)
    assert (await call(client, "read_graph", {"asOf": T25}))["entities"][0]["entityType"] == "countess"
    assert (await call(client, "read_graph"))["entities"] == []
    assert names(await call(client, "search_nodes", {"query": "math", "asOf": T15})) == ["Ada"]
    assert names(await call(client, "search_nodes", {"query": "math", "asOf": T15, "ranked": True})) == ["Ada"]
    assert names(await call(client, "read_graph", {"asOf": 1})) == ["Ada"]


async def test_as_of_before_anything_existed_is_an_empty_graph(client: Client, clock: FrozenDateTimeFactory) -> None:
    await ada_lifecycle(client, clock)
    assert (await call(client, "read_graph", {"asOf": "2026-01-01T00:00:00Z"}))["entities"] == []


async def test_a_bad_as_of_is_a_clear_error(client: Client) -> None:
    with pytest.raises(ToolFailed, match="asOf: 'last tuesday' is not an ISO-8601 timestamp"):
        await call(client, "read_graph", {"asOf": "last tuesday"})


async def test_an_iso_basic_date_as_of_is_that_date_as_valid_at_reads_it_not_a_log_position(
    client: Client, clock: FrozenDateTimeFactory
) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada", "person", "math")]})  # March 1
    clock.move_to("2026-03-02T09:00:00Z")
    await call(client, "create_entities", {"entities": [entity("Bob", "person", "tea")]})
    then = await call(client, "read_graph", {"asOf": "20260302"})  # before: position 20,260,302, clamped to 2
    assert (names(then), then["asOf"]) == (["Ada"], 1)
    assert names(await call(client, "read_graph", {"asOf": "20260301T103000Z"})) == ["Ada"]
    assert names(await call(client, "read_graph", {"asOf": "00000001"})) == ["Ada"]  # no date: a position
    assert names(await call(client, "read_graph", {"asOf": 20260302})) == ["Ada", "Bob"]  # a number: a position


AS_OF_READS = {
    "read_graph": {}, "open_nodes": {"names": ["Ada"]}, "search_nodes": {"query": "math"},
    "get_graph_summary": {}, "read_context": {}, "get_entity_history": {"name": "Ada"},
    "export_graph": {"format": "json"},
}
"""Every tool of the default profile that takes asOf, with what else it needs."""


async def test_every_tool_that_takes_as_of_answers_the_position_it_answered_from(
    client: Client, clock: FrozenDateTimeFactory
) -> None:
    await ada_lifecycle(client, clock)  # positions 1, 2, 3
    taking = {t.name for t in (await client.list_tools()).tools if "asOf" in t.input_schema.get("properties", {})}
    assert taking == set(AS_OF_READS)  # a tool that comes to take asOf is tested here too
    for tool, arguments in AS_OF_READS.items():
        for moment, position in ((T15, 1), ("20260301T113000Z", 2), (2, 2), (99, 3)):  # past the head: clamped to it
            answer = await call(client, tool, {**arguments, "asOf": moment})
            assert answer.get("asOf") == position, (tool, moment)
        assert "asOf" not in await call(client, tool, arguments), tool  # now: no position said


@pytest.mark.parametrize("moment", ["²", " ³ ", "1²"])
async def test_digits_python_counts_but_cannot_read_are_not_a_log_position(client: Client, moment: str) -> None:
    for tool, arguments in (("read_graph", {}), ("search_nodes", {"query": "x"}), ("open_nodes", {"names": ["x"]})):
        with pytest.raises(ToolFailed, match=f"asOf: {moment.strip()!r} is not an ISO-8601 timestamp"):
            await call(client, tool, {**arguments, "asOf": moment})


async def test_entity_history_lists_every_version_and_survives_deletion(
    client: Client, clock: FrozenDateTimeFactory
) -> None:
    await ada_lifecycle(client, clock)
    history = (await call(client, "get_entity_history", {"name": "Ada"}))["versions"]
    assert [(v["version"], v["eventType"], v["recordedAt"]) for v in history] == [
        (1, "entity_created", "2026-03-01T10:00:00.000000Z"),
        (2, "entity_updated", "2026-03-01T11:00:00.000000Z"),
        (3, "entity_deleted", "2026-03-01T12:00:00.000000Z"),
    ]
    assert history[1]["changes"] == {"entityType": "countess"}
    assert history[1]["state"]["entityType"] == "countess" and history[2]["state"] is None
    assert {v["actor"] for v in history} == {"agent"}


async def test_entity_history_pages_with_a_cursor_and_travels_in_time(
    client: Client, clock: FrozenDateTimeFactory
) -> None:
    await ada_lifecycle(client, clock)
    first = await call(client, "get_entity_history", {"name": "Ada", "limit": 2})
    rest = await call(client, "get_entity_history", {"name": "Ada", "limit": 2, "cursor": first["nextCursor"]})
    assert [v["version"] for v in first["versions"] + rest["versions"]] == [1, 2, 3]
    assert "nextCursor" not in rest
    then = await call(client, "get_entity_history", {"name": "Ada", "asOf": T15})
    assert [v["version"] for v in then["versions"]] == [1]


async def test_entity_history_newest_first_repeats_no_version_when_a_write_lands_between_pages(
    client: Client, clock: FrozenDateTimeFactory
) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada", "person", "v1")]})
    for n in range(2, 5):
        await call(client, "add_observations", {"observations": [{"entityName": "Ada", "contents": [f"v{n}"]}]})
    first = await call(client, "get_entity_history", {"name": "Ada", "limit": 2, "order": "newest"})
    await call(client, "add_observations", {"observations": [{"entityName": "Ada", "contents": ["v5"]}]})
    rest = await call(client, "get_entity_history", {"name": "Ada", "limit": 2, "order": "newest",
                                                     "cursor": first["nextCursor"]})
    assert [v["version"] for v in first["versions"] + rest["versions"]] == [4, 3, 2, 1]  # before: 4, 3, 3, 2
    assert "nextCursor" not in rest
    older = await call(client, "get_entity_history", {"name": "Ada", "limit": 2, "order": "newest", "cursor": "2"})
    assert [v["version"] for v in older["versions"]] == [3, 2]  # an offset, as cursors were before
    with pytest.raises(ToolFailed, match="cursor: 'px' is not a cursor this tool returned"):
        await call(client, "get_entity_history", {"name": "Ada", "cursor": "px"})


async def test_a_recreated_name_has_a_new_history_and_keeps_the_old_one(
    client: Client, clock: FrozenDateTimeFactory
) -> None:
    await ada_lifecycle(client, clock)
    [again] = (await call(client, "create_entities", {"entities": [entity("Ada", "robot")]}))["entities"]
    assert again["version"] == 1
    history = (await call(client, "get_entity_history", {"name": "Ada"}))["versions"]
    assert [v["version"] for v in history] == [1, 2, 3, 1]
    assert history[0]["stream"] != history[3]["stream"]


async def test_relation_history_covers_deletes_and_recreations(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada"), entity("Bob")]})
    for tool in ("create_relations", "delete_relations", "create_relations"):
        await call(client, tool, {"relations": [relation("Ada", "knows", "Bob")]})
    history = (await call(client, "get_relation_history", {"from": "Ada", "to": "Bob", "relationType": "knows"}))
    assert [v["eventType"] for v in history["versions"]] == ["relation_created", "relation_deleted", "relation_created"]
    with pytest.raises(ToolFailed, match="never existed|ever existed"):
        await call(client, "get_relation_history", {"from": "Ada", "to": "Bob", "relationType": "hates"})


async def test_revert_after_delete_restores_and_is_itself_history(client: Client, clock: FrozenDateTimeFactory) -> None:
    await ada_lifecycle(client, clock)
    [restored] = (await call(client, "revert_entity", {"name": "Ada", "toVersion": 1}))["entities"]
    assert (restored["entityType"], restored["observations"], restored["version"]) == ("person", ["math"], 4)
    history = (await call(client, "get_entity_history", {"name": "Ada"}))["versions"]
    assert history[-1]["changes"]["revertedTo"] == 1
    [reverted] = (await call(client, "revert_entity", {"name": "Ada", "toVersion": 2}))["entities"]
    assert (reverted["entityType"], reverted["version"]) == ("countess", 5)
    with pytest.raises(ToolFailed, match="is its deletion"):
        await call(client, "revert_entity", {"name": "Ada", "toVersion": 3})
    with pytest.raises(ToolFailed, match="Conflict"):
        await call(client, "revert_entity", {"name": "Ada", "toVersion": 1, "expectedVersion": 2})


async def test_the_audit_log_filters_and_pages_newest_first(client: Client, clock: FrozenDateTimeFactory) -> None:
    await ada_lifecycle(client, clock)
    await call(client, "create_entities", {"entities": [entity("Zed")], "workspace": "other"})
    log = await call(client, "get_audit_log", {"limit": 2, "allWorkspaces": True})
    assert [(e["type"], e["subject"]) for e in log["events"]] == [("entity_created", "Zed"), ("entity_deleted", "Ada")]
    more = await call(client, "get_audit_log", {"limit": 2, "cursor": log["nextCursor"], "allWorkspaces": True})
    assert [e["subject"] for e in (await call(client, "get_audit_log", {"limit": 1}))["events"]] == ["Ada"]
    assert [e["type"] for e in more["events"]] == ["entity_updated", "entity_created"]
    only = await call(client, "get_audit_log", {"workspace": "default", "eventTypes": ["entity_updated"]})
    assert [e["position"] for e in only["events"]] == [2]
    timed = await call(client, "get_audit_log", {"since": T15, "until": T25, "order": "oldest"})
    assert [e["type"] for e in timed["events"]] == ["entity_updated"]
    mine = await call(client, "get_audit_log", {"entityName": "Ada", "actor": "agent", "order": "oldest"})
    assert [e["version"] for e in mine["events"]] == [1, 2, 3]
    assert (await call(client, "get_audit_log", {"actor": "nobody"}))["events"] == []
    after = await call(client, "get_audit_log", {"afterPosition": 3, "order": "oldest", "allWorkspaces": True})
    assert [e["position"] for e in after["events"]] == [4]


async def test_the_audit_log_leaves_the_internal_ids_out_unless_asked(
    client: Client, clock: FrozenDateTimeFactory
) -> None:
    await ada_lifecycle(client, clock)
    [brief] = (await call(client, "get_audit_log", {"limit": 1}))["events"]
    assert set(brief) == {"position", "version", "recordedAt", "actor", "principal", "type", "workspace", "subject",
                          "data"}
    [full] = (await call(client, "get_audit_log", {"limit": 1, "includeIds": True}))["events"]
    assert full["stream"].startswith("entity-") and len(full["correlationId"]) == 32
    assert {k: v for k, v in full.items() if k not in ("stream", "correlationId")} == brief


async def test_context_merges_updates_and_travels_in_time(client: Client, clock: FrozenDateTimeFactory) -> None:
    assert (await call(client, "read_context"))["version"] == 0
    await call(client, "update_context", {"activeTask": "refactor", "status": "PLANNING"})
    clock.move_to(T2)
    context = await call(client, "update_context", {"status": "IN_PROGRESS", "nextSteps": ["tests"]})
    assert (context["activeTask"], context["status"], context["nextSteps"], context["version"]) == (
        "refactor", "IN_PROGRESS", ["tests"], 2)
    assert context["updatedAt"] == "2026-03-01T11:00:00.000000Z"
    assert (await call(client, "read_context", {"asOf": T15}))["status"] == "PLANNING"
    with pytest.raises(ToolFailed, match="status"):
        await call(client, "update_context", {"status": "DONE"})


async def test_graph_summary_counts_types_and_pages_the_index(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("a", "x"), entity("b", "x"), entity("c", "y")]})
    await call(client, "create_relations", {"relations": [relation("a", "r", "b")]})
    summary = await call(client, "get_graph_summary", {"limit": 2})
    assert (summary["entities"], summary["relations"]) == (3, 1)
    assert summary["entityTypes"] == {"x": 2, "y": 1} and summary["relationTypes"] == {"r": 1}
    assert [i["name"] for i in summary["index"]] == ["a", "b"] and summary["nextOffset"] == 2


async def test_read_graph_pages_list_each_relation_with_its_from_entity(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity(n) for n in "abcd"]})
    await call(client, "create_relations", {"relations": [relation("a", "r", "d"), relation("d", "r", "a")]})
    first = await call(client, "read_graph", {"limit": 2})
    second = await call(client, "read_graph", {"limit": 2, "offset": first["nextOffset"]})
    assert names(first) + names(second) == ["a", "b", "c", "d"]
    assert [r["from"] for r in first["relations"]] == ["a"] and [r["from"] for r in second["relations"]] == ["d"]
    assert first["totalEntities"] == 4 and "nextOffset" not in second


async def test_related_entities_walks_breadth_first_with_paths(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity(n) for n in ("a", "b", "c", "d")]})
    await call(client, "create_relations", {"relations": [
        relation("a", "knows", "b", confidence=0.5), relation("b", "uses", "c"), relation("d", "knows", "a"),
    ]})
    related = (await call(client, "get_related_entities", {"name": "a"}))["related"]
    assert [(r["entity"]["name"], r["distance"]) for r in related] == [("b", 1), ("d", 1), ("c", 2)]
    assert related[2]["path"] == ["a", "b", "c"] and related[2]["relationPath"] == ["knows", "uses"]
    assert related[2]["confidencePath"] == [0.5, None]
    outgoing = await call(client, "get_related_entities", {"name": "a", "direction": "out", "relationTypes": ["knows"]})
    assert [r["entity"]["name"] for r in outgoing["related"]] == ["b"]


async def test_workspaces_are_listed_with_counts_as_a_tool_and_a_resource(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("a")], "workspace": "w1"})
    await call(client, "update_context", {"activeTask": "t", "workspace": "w2"})
    listed = (await call(client, "list_workspaces"))["workspaces"]
    assert [(w["name"], w["entities"], w["hasContext"]) for w in listed] == [("w1", 1, False), ("w2", 0, True)]
    resource = await client.read_resource("memory://workspaces")
    assert '"w1"' in resource.contents[0].text  # type: ignore[union-attr]
