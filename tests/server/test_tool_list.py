"""What tools/list costs: every conversation sends it to the model, so it is kept small."""

from __future__ import annotations

import pytest
from chronograph.application import PROFILES
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client

pytestmark = pytest.mark.anyio

OFFICIAL_SERVER_BYTES = 10_817
"""tools/list of @modelcontextprotocol/server-memory@2026.8.31, as the MCP Python client parses
it (ListToolsResult, camelCase, without nulls), measured 2026-11-22 the same way as below."""


async def tool_list_bytes(settings: Settings, profile: str) -> int:
    async with Client(create_server(Settings(store=settings.store, profile=profile))) as client:
        return len((await client.list_tools()).model_dump_json(by_alias=True, exclude_none=True))


async def test_the_default_profile_lists_its_tools_in_at_most_twice_the_official_bytes(settings: Settings) -> None:
    assert await tool_list_bytes(settings, "chronograph") <= 2 * OFFICIAL_SERVER_BYTES


async def test_every_profile_lists_tools(settings: Settings) -> None:
    for name in PROFILES:
        assert await tool_list_bytes(settings, name) > 1000
