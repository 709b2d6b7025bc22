"""Servers sharing one PostgreSQL log, as on several hosts: each process with its own cache of
views, over stdio and HTTP; writes seen by the others, races with one winner, a database
that goes away said to be so by /ready, and a write waiting for the log's lock too."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from chronograph.eventstore.postgres.schema import Schema
from mcp import Client, StdioServerParameters
from support.http import request, session, start
from support.mcp import ToolFailed, call, entity, names
from support.postgres import SERVER, database
from support.tcpproxy import TcpProxy

pytestmark = [pytest.mark.anyio, pytest.mark.wire]
pytest.importorskip("psycopg")
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def stdio(url: str, cache: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", url, "--cache",
                                                               str(cache)], env=ENV, cwd=str(ROOT))


@pytest.fixture
def url() -> str:
    return database().log_url()


@pytest.fixture
def servers(tmp_path: Path, url: str) -> Iterator[list[str]]:
    """Three HTTP servers on one log, each with its own cache (as on three hosts)."""
    with ExitStack() as stack:
        bases = []
        for n in range(3):
            started = start(tmp_path, None, "--cache", str(tmp_path / f"cache-{n}"), store=url)
            bases.append(next(started))
            stack.callback(lambda started=started: next(started, None))
        yield bases


async def test_a_stdio_server_on_a_database_keeps_what_another_host_wrote(tmp_path: Path, url: str) -> None:
    async with Client(stdio(url, tmp_path / "host-a")) as a:
        await call(a, "create_entities", {"entities": [entity("Ada", "person", "shared")]})
    async with Client(stdio(url, tmp_path / "host-b")) as b:
        graph = await call(b, "read_graph")
    assert names(graph) == ["Ada"] and graph["entities"][0]["observations"] == ["shared"]


async def test_a_write_through_one_server_is_read_through_the_others(servers: list[str]) -> None:
    async with session(servers[0]) as writer:
        await call(writer, "create_entities", {"entities": [entity("Ada")]})
    for base in servers[1:]:
        async with session(base) as reader:
            for _ in range(300):  # the followers need milliseconds; the loop only bounds a failure
                if names(await call(reader, "read_graph")) == ["Ada"]:
                    break
                await anyio.sleep(0.02)
            assert names(await call(reader, "read_graph")) == ["Ada"]


async def test_racing_writers_on_two_servers_with_one_expected_version_have_one_winner(servers: list[str]) -> None:
    async with session(servers[0]) as a, session(servers[1]) as b:
        await call(a, "create_entities", {"entities": [entity("Ada")]})
        for round_ in range(5):
            version = round_ + 1
            outcomes: list[str] = []

            async def attempt(client: Client, label: str, version: int = version,
                              outcomes: list[str] = outcomes) -> None:
                try:
                    await call(client, "add_observations", {"observations": [
                        {"entityName": "Ada", "contents": [f"{label}{version}"], "expectedVersion": version}]})
                    outcomes.append("won")
                except ToolFailed as failed:
                    assert f"is at version {version + 1}" in str(failed)
                    outcomes.append("conflict")

            async with anyio.create_task_group() as group:
                group.start_soon(attempt, a, "a")
                group.start_soon(attempt, b, "b")
            assert sorted(outcomes) == ["conflict", "won"]


def ready_through_an_outage(tmp_path: Path, fault: Callable[[TcpProxy], None]) -> tuple[int, Any]:
    """The first 503 answer of /ready once `fault` struck the server's database (through a proxy),
    after checking that the process stays alive meanwhile and is ready again once it is mended."""
    host, port = SERVER.rsplit("@", 1)[-1].rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    via_proxy = database().log_url().replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}")
    started = start(tmp_path, None, "--cache", str(tmp_path / "cache"), store=via_proxy)
    base = next(started)
    try:
        assert request(base + "/ready")[1]["status"] == "ready"
        fault(proxy)
        deadline = time.monotonic() + 60
        while (answer := request(base + "/ready"))[0] != 503:
            assert time.monotonic() < deadline, "/ready kept saying ready with the database out of reach"
            time.sleep(0.2)
        assert request(base + "/health")[0] == 200  # the process itself is alive
        proxy.mend()
        while request(base + "/ready")[0] != 200:
            assert time.monotonic() < deadline + 60, "the server did not find the database again"
            time.sleep(0.2)
    finally:
        next(started, None)
        proxy.close()
    return proxy.port, answer[1]


def test_ready_says_unavailable_while_the_database_is_cut_off_and_ready_once_it_is_back(tmp_path: Path) -> None:
    ready_through_an_outage(tmp_path, TcpProxy.cut)


def test_ready_says_unavailable_while_the_database_hangs_and_ready_once_it_answers_again(tmp_path: Path) -> None:
    """A database that takes connections and answers nothing (hung, its disk stuck): the follower's
    next look waited forever on a pooled connection, and /ready said ready all along."""
    port, answer = ready_through_an_outage(tmp_path, TcpProxy.hang)
    assert answer["status"] == "unavailable" and f"127.0.0.1:{port}" in answer["reason"]
    assert "answer" in answer["reason"], answer


async def test_a_server_whose_write_waits_for_the_log_s_lock_is_not_ready_and_stops_when_asked(
        tmp_path: Path, url: str) -> None:
    """/ready said ready while every call of the server queued behind the write, and SIGTERM left
    the server waiting for as long as the lock was held (another server's, cut off: hours)."""
    import psycopg  # noqa: PLC0415

    processes: list[Any] = []
    started = start(tmp_path, None, "--cache", str(tmp_path / "cache"), store=url, processes=processes)
    base = next(started)
    refused: list[str] = []
    try:
        async with session(base) as client:
            await call(client, "create_entities", {"entities": [entity("Ada")]})
            with psycopg.connect(url.split("?", 1)[0], autocommit=True) as holder:
                holder.execute("SELECT pg_advisory_lock(%s)", (Schema(url.rsplit("schema=", 1)[1]).lock,))

                async def write() -> None:
                    try:
                        await call(client, "create_entities", {"entities": [entity("Bo")]})
                    except ToolFailed as failed:
                        refused.append(str(failed))

                async with anyio.create_task_group() as group:
                    group.start_soon(write)
                    deadline = time.monotonic() + 30
                    while (await anyio.to_thread.run_sync(request, base + "/ready"))[1].get("status") != "waiting":
                        assert time.monotonic() < deadline, "/ready kept saying ready while a write waited"
                        await anyio.sleep(0.2)
                    processes[0].terminate()
        processes[0].wait(timeout=30)
    finally:
        next(started, None)
    assert refused and "stopping" in refused[0] and "nothing was written" in refused[0], refused
