"""The knowledge-graph resource notifies subscribers after writes, in both protocol eras."""

from __future__ import annotations

import warnings
from pathlib import Path

import anyio
import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ResourceUpdatedNotification
from support.mcp import call, entity

pytestmark = pytest.mark.anyio
GRAPH = "memory://knowledge-graph"


async def test_a_listening_client_hears_about_every_write(client: Client) -> None:
    assert client.protocol_version == "2026-07-28"
    resources = client.server_capabilities.resources  # type: ignore[union-attr]
    assert resources is not None and resources.subscribe  # at 2026-07-28: served on subscriptions/listen
    async with client.listen(resource_subscriptions=[GRAPH]) as subscription:
        await call(client, "create_entities", {"entities": [entity("Ada")]})
        with anyio.fail_after(5):
            event = await subscription.__anext__()
    assert event.uri == GRAPH  # type: ignore[attr-defined]


async def test_a_handshake_era_subscriber_is_notified_after_a_write_that_changed_something(
    settings: Settings,
) -> None:
    received: list[object] = []

    async def collect(message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            received.append(message)

    async with Client(create_server(settings), mode="legacy", message_handler=collect) as c:
        assert c.protocol_version != "2026-07-28"
        assert c.server_capabilities.resources.subscribe  # type: ignore[union-attr]  # resources/subscribe is served
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # resources/subscribe is the 2025 way
            await c.session.subscribe_resource(GRAPH)
        await call(c, "create_entities", {"entities": [entity("Ada")]})
        await call(c, "create_entities", {"entities": [entity("Ada")]})  # skipped: nothing changed
        await call(c, "read_graph")
        await anyio.sleep(0.05)
        assert len(received) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await c.session.unsubscribe_resource(GRAPH)
        await call(c, "create_entities", {"entities": [entity("Bob")]})
        await anyio.sleep(0.05)
        assert len(received) == 1


@pytest.mark.wire
async def test_over_http_a_subscriber_hears_of_its_own_writes_and_of_another_session_s(tmp_path: Path) -> None:
    """Answers over HTTP are single JSON bodies, without the call's own event stream: what a write
    tells subscribers travels on their sessions' streams, so it still arrives."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from support.http import start

    served = start(tmp_path, None)
    base = next(served)
    received: list[str] = []

    async def collect(message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            received.append(str(message.params.uri))

    async with httpx2.AsyncClient(timeout=30) as http, Client(
            streamable_http_client(base + "/mcp", http_client=http), mode="legacy", message_handler=collect) as mine, \
            Client(streamable_http_client(base + "/mcp", http_client=http), mode="legacy") as other:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await mine.session.subscribe_resource(GRAPH)
        await call(mine, "create_entities", {"entities": [entity("Ada")]})
        with anyio.fail_after(10):
            while len(received) < 1:
                await anyio.sleep(0.02)
        await call(other, "create_entities", {"entities": [entity("Bob")]})
        with anyio.fail_after(10):
            while len(received) < 2:
                await anyio.sleep(0.02)
    served.close()  # stops the server
    assert received == [GRAPH, GRAPH]
