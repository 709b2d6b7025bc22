"""Workspaces are isolated: nothing of one appears in another's answers, whatever is asked."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from support.mcp import ToolFailed, entity, relation

pytestmark = pytest.mark.anyio
SECRET = "zq-secret-7731"


async def answer(client: Client, tool: str, arguments: dict) -> str:  # type: ignore[type-arg]
    result = await client.call_tool(tool, arguments)
    return json.dumps(result.structured_content) + result.content[0].text  # type: ignore[union-attr]


async def test_no_read_tool_shows_another_workspaces_data(client: Client) -> None:
    alpha = {"workspace": "alpha"}
    await client.call_tool("create_entities", {"entities": [
        entity(f"{SECRET}-a", "secret", f"{SECRET} observation"), entity("Shared Name", "x", SECRET)], **alpha})
    await client.call_tool("create_relations",
                           {"relations": [relation(f"{SECRET}-a", "knows", "Shared Name")], **alpha})
    await client.call_tool("update_context", {"activeTask": SECRET, **alpha})
    await client.call_tool("create_entities", {"entities": [entity("Shared Name", "y", "public")],
                                               "workspace": "beta"})
    beta = {"workspace": "beta"}
    reads = [
        ("read_graph", {}), ("read_graph", {"summaryMode": True}), ("read_graph", {"asOf": 3}),
        ("search_nodes", {"query": SECRET}), ("search_nodes", {"query": ""}),
        ("open_nodes", {"names": [f"{SECRET}-a", "Shared Name"]}),
        ("get_graph_summary", {}), ("read_context", {}), ("get_audit_log", {}),
        ("get_related_entities", {"name": "Shared Name"}), ("export_graph", {"format": "markdown"}),
        ("get_entity_history", {"name": "Shared Name"}),
    ]
    for tool, arguments in reads:
        for workspace in (beta, {}):
            shown = await answer(client, tool, {**arguments, **workspace})
            assert SECRET not in shown, (tool, workspace)
    for tool, arguments in [("get_entity_history", {"name": f"{SECRET}-a"}),
                            ("get_relation_history", {"from": f"{SECRET}-a", "to": "Shared Name",
                                                      "relationType": "knows"})]:
        result = await client.call_tool(tool, {**arguments, **beta})
        assert result.is_error and SECRET in result.content[0].text.split("workspace")[0]  # type: ignore[union-attr]
        assert "'beta'" in result.content[0].text  # type: ignore[union-attr]
    with pytest.raises(ToolFailed):
        from support.mcp import call

        await call(client, "add_observations", {"observations": [{"entityName": f"{SECRET}-a", "contents": ["x"]}],
                                                **beta})
