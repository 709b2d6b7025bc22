"""Shared fixtures: a fresh store directory per test, never an environment opened twice,
and a real MCP client driving an in-process server."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest
from chronograph.eventstore import LmdbLog
from chronograph.server.app import Runtime, create_server
from chronograph.server.config import Settings
from mcp import Client
from mcp_types import Implementation
from support.postgres import database, drop_database


def pytest_configure(config: pytest.Config) -> None:
    """The README's test command, `uv run --locked pytest`, starts in the run environment (pytest
    is all it has of the test tools): run it again with the test group, the same arguments."""
    if find_spec("mypy") is None and "CHRONOGRAPH_TEST_GROUP" not in os.environ and shutil.which("uv"):
        os.environ["CHRONOGRAPH_TEST_GROUP"] = "1"
        capture = config.pluginmanager.getplugin("capturemanager")
        if capture is not None:
            capture.stop_global_capturing()  # the next process writes to the terminal, not to our capture
        os.execvp("uv", ["uv", "run", "--locked", "--group", "test", "pytest", *sys.argv[1:]])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many workers `-n auto` (the pytest options' default) starts: two per core this process may
    use, since a test often waits on a server, a browser or PostgreSQL in another process; at most
    4, since every worker's database, servers and pools share PostgreSQL's 100 connections.
    $PYTEST_XDIST_AUTO_NUM_WORKERS, as for pytest-xdist's own count, or `-n N` decide otherwise.

    A run of the `slow` tests is one process: one of them restarts the PostgreSQL server, which
    every other worker's database tests would meet mid-query, and the soak and crash runs measure
    a machine that is not shared with the rest of the suite."""
    named = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if named:
        return int(named)
    if re.search(r"(?<!not )\bslow\b", config.getoption("markexpr") or ""):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(4, 2 * cores)


os.environ["CHRONOGRAPH_EMBEDDINGS"] = "off"  # servers a test spawns load no model unless the test asks
_MODELS = tempfile.mkdtemp(prefix="chronograph-test-models-")
os.environ["CHRONOGRAPH_MODEL_CACHE"] = _MODELS  # the model's optimised graph stays out of the user's cache
atexit.register(shutil.rmtree, _MODELS, True)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A path where no store exists yet."""
    return tmp_path / "store"


@pytest.fixture
def store(store_path: Path) -> Iterator[LmdbLog]:
    """A new, empty event log, closed after the test."""
    with LmdbLog(store_path) as opened:
        yield opened


@pytest.fixture(scope="session", autouse=True)
def postgres_database() -> Iterator[None]:
    """This run's PostgreSQL database (created when a test first needs it), dropped at the end."""
    yield from drop_database()


@pytest.fixture(params=["lmdb", "postgresql"])
def backend_store(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, object]:
    """Where a test's server keeps its store, once per backend: a folder, or a PostgreSQL log (in
    this run's database) with a local cache. For `Settings(**backend_store, ...)`."""
    if request.param == "lmdb":
        return {"store": tmp_path / "store"}
    pytest.importorskip("psycopg")
    return {"store": database().log_url(), "cache": tmp_path / "cache"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(store=tmp_path / "store", embeddings="off")


@pytest.fixture
def runtime(settings: Settings) -> Runtime:
    """The server's runtime: `runtime.memory.log` is the open store while a client is connected."""
    return Runtime(settings)


@pytest.fixture
async def client(settings: Settings, runtime: Runtime) -> AsyncIterator[Client]:
    """A real MCP client connected to an in-process server on a fresh store."""
    server = create_server(settings, runtime)
    async with Client(server, client_info=Implementation(name="test-client", version="1")) as c:
        yield c
