"""Fixtures for driving the server through a real MCP client, in process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client
from mcp_types import Implementation

from chronograph.server.app import Runtime, create_server
from chronograph.server.config import Settings


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(store=tmp_path / "store")


@pytest.fixture
def runtime(settings: Settings) -> Runtime:
    """The server's runtime: `runtime.memory.log` is the open store while a client is connected."""
    return Runtime(settings)


@pytest.fixture
async def client(settings: Settings, runtime: Runtime) -> AsyncIterator[Client]:
    server = create_server(settings, runtime)
    async with Client(server, client_info=Implementation(name="test-client", version="1")) as c:
        yield c
