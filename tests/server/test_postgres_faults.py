"""Faults under a server on a PostgreSQL log: the database restarted mid-load, the server killed
mid-write, the network cut for seconds. Nothing acknowledged is lost, every failed write says
why, and the server finds its feet again by itself. (Slow: run with -m slow.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from chronograph.application import Memory
from chronograph.projections import verify
from mcp import Client
from mcp.shared.exceptions import MCPError
from support.http import session, start
from support.mcp import ToolFailed, call, entity
from support.postgres import SERVER, database
from support.tcpproxy import TcpProxy

pytestmark = [pytest.mark.anyio, pytest.mark.wire, pytest.mark.slow]
pytest.importorskip("psycopg")
ROOT = Path(__file__).resolve().parents[2]
CLEAR = ("cannot be reached", "went away", "cannot reach", "could not take the write", "could not confirm the write")


async def load(client: Client, count: int, acked: list[str], refused: list[str], pause: float = 0.01) -> None:
    for i in range(count):
        name = f"E{i:04d}"
        try:
            await call(client, "create_entities", {"entities": [entity(name)]})
            acked.append(name)
        except (ToolFailed, MCPError) as failed:  # the tool's error, or the HTTP front's (its tokens unreadable)
            refused.append(str(failed))
        await anyio.sleep(pause)


def stored(url: str, cache: Path) -> set[str]:
    with Memory(url, cache=cache) as memory:
        assert verify(memory.views) == []
        return {e.name for e in memory.read("read_graph", {}).entities}


async def test_a_database_restarted_mid_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    url = database().log_url()
    started = start(tmp_path, None, "--cache", str(tmp_path / "cache"), store=url)
    base = next(started)
    acked: list[str] = []
    refused: list[str] = []
    restart = threading.Timer(1.0, lambda: subprocess.run(
        ["bash", "-c", "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main restart"], check=True))
    try:
        async with session(base) as client:
            restart.start()
            await load(client, 400, acked, refused)
            restart.join()
            await call(client, "create_entities", {"entities": [entity("after the restart")]})  # on its own feet
    finally:
        next(started, None)
    assert all(any(sign in text for sign in CLEAR) for text in refused), refused[:3]
    assert set(acked) | {"after the restart"} <= stored(url, tmp_path / "check")


async def test_a_server_killed_mid_write_loses_nothing_acknowledged(tmp_path: Path) -> None:
    url = database().log_url()
    acked: list[str] = []
    refused: list[str] = []
    processes: list[subprocess.Popen[str]] = []
    port_server = start(tmp_path, None, "--cache", str(tmp_path / "cache"), store=url, processes=processes)
    base = next(port_server)
    killer = threading.Timer(1.0, lambda: os.kill(processes[0].pid, signal.SIGKILL))
    try:
        async with session(base) as client:
            killer.start()
            try:
                await load(client, 400, acked, refused)
            except Exception:  # noqa: BLE001 (the connection dies with the server)
                pass
    except Exception:  # noqa: BLE001
        pass
    finally:
        killer.join()
        next(port_server, None)
    assert acked and set(acked) <= stored(url, tmp_path / "cache")  # the dead server's own cache, reopened
    assert set(acked) <= stored(url, tmp_path / "fresh")


async def test_a_network_cut_for_seconds_fails_writes_clearly_and_the_server_recovers(tmp_path: Path) -> None:
    host, port = SERVER.rsplit("@", 1)[-1].rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    url = database().log_url()
    started = start(tmp_path, None, "--cache", str(tmp_path / "cache"),
                    store=url.replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}"))
    base = next(started)
    acked: list[str] = []
    refused: list[str] = []
    try:
        async with session(base) as client:
            await load(client, 20, acked, refused)
            proxy.cut()
            began = time.monotonic()
            await load(client, 2, acked, refused, pause=0)
            cut_for = time.monotonic() - began
            proxy.mend()
            await load(client, 20, acked, refused)
    finally:
        next(started, None)
        proxy.close()
    assert len(refused) >= 1 and all(any(sign in text for sign in CLEAR) for text in refused), refused
    print(f"two writes during the cut were refused after {cut_for:.1f} s", file=sys.stderr)
    assert set(acked) <= stored(url, tmp_path / "check") and len(acked) >= 40
