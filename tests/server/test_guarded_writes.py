"""What the log adds: expected versions, retried requests, actors and correlation ids."""

from __future__ import annotations

import pytest
from chronograph.server.app import Runtime
from chronograph.server.config import Settings
from mcp import Client
from support.mcp import ToolFailed, call, entity, relation

pytestmark = pytest.mark.anyio


async def test_a_stale_expected_version_fails_the_whole_call_with_the_current_state(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada"), entity("Bob")]})
    await call(client, "add_observations", {"observations": [{"entityName": "Ada", "contents": ["v2"]}]})
    with pytest.raises(ToolFailed) as failed:
        await call(client, "add_observations", {"observations": [
            {"entityName": "Bob", "contents": ["fine"], "expectedVersion": 1},
            {"entityName": "Ada", "contents": ["late"], "expectedVersion": 1},
        ]})
    message = str(failed.value)
    assert "entity 'Ada' is at version 2, not the expectedVersion 1" in message
    assert '"observations":["v2"]' in message and "nothing was written" in message
    [bob] = (await call(client, "open_nodes", {"names": ["Bob"]}))["entities"]
    assert bob["observations"] == [] and bob["version"] == 1


async def test_a_current_expected_version_writes(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada")]})
    result = await call(client, "add_observations", {"observations": [
        {"entityName": "Ada", "contents": ["x"], "expectedVersion": 1}]})
    assert result["results"][0]["addedObservations"] == ["x"]


async def test_expected_version_zero_means_the_item_must_not_exist(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada")]})
    with pytest.raises(ToolFailed, match="is at version 1, not the expectedVersion 0"):
        await call(client, "create_entities", {"entities": [entity("Ada", expectedVersion=0)]})


async def test_deletes_take_expected_versions_too(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada"), entity("Bob")]})
    await call(client, "create_relations", {"relations": [relation("Ada", "knows", "Bob")]})
    with pytest.raises(ToolFailed, match="Conflict"):
        await call(client, "delete_entities", {"entityNames": ["Ada"], "expectedVersions": {"Ada": 3}})
    with pytest.raises(ToolFailed, match="Conflict"):
        await call(client, "delete_relations", {"relations": [relation("Ada", "knows", "Bob", expectedVersion=2)]})
    deleted = await call(client, "delete_entities", {"entityNames": ["Ada"], "expectedVersions": {"Ada": 1}})
    assert deleted["deleted"] == 1


async def test_a_retried_request_returns_the_first_result_and_writes_nothing(client: Client) -> None:
    arguments = {"entities": [entity("Ada")], "requestId": "req-1"}
    first = await call(client, "create_entities", arguments)
    await call(client, "delete_entities", {"entityNames": ["Ada"]})
    again = await call(client, "create_entities", arguments)
    assert again == first
    assert (await call(client, "read_graph"))["entities"] == []  # the retry did not re-create Ada


async def test_a_request_id_reused_with_other_arguments_is_refused(client: Client) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada")], "requestId": "req-1"})
    with pytest.raises(ToolFailed, match="requestId 'req-1' was already used"):
        await call(client, "create_entities", {"entities": [entity("Bob")], "requestId": "req-1"})


async def test_events_record_the_client_as_actor_and_share_one_correlation_id_per_call(
    client: Client, runtime: Runtime
) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada"), entity("Bob")]})
    await call(client, "create_relations", {"relations": [relation("Ada", "knows", "Bob")]})
    events = list(runtime.memory.log.read_all())
    assert [e.actor for e in events] == ["test-client"] * 3
    assert events[0].correlation_id == events[1].correlation_id != events[2].correlation_id


async def test_a_rejected_call_leaves_the_log_untouched(client: Client, runtime: Runtime) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada")]})
    for arguments in (
        {"observations": [{"entityName": "Ada", "contents": ["x"]}, {"entityName": "Zed", "contents": ["y"]}]},
        {"observations": [{"entityName": "Ada", "contents": ["x"], "expectedVersion": 7}]},
        {"observations": [{"entityName": "Ada", "contents": [1]}]},
    ):
        with pytest.raises(ToolFailed):
            await call(client, "add_observations", arguments)
    assert runtime.memory.log.head() == 1


async def test_the_actor_option_overrides_the_client_name(settings: Settings) -> None:
    from chronograph.server.app import create_server
    from mcp import Client as McpClient

    runtime = Runtime(Settings(store=settings.store, actor="ci-bot"))
    async with McpClient(create_server(runtime.settings, runtime)) as c:
        await call(c, "create_entities", {"entities": [entity("Ada")]})
        assert [e.actor for e in runtime.memory.log.read_all()] == ["ci-bot"]
