"""An HTTP server whose cache is rebuilt from a PostgreSQL log that went back under it serves no
call meanwhile (they wait under the memory's lock), and its /ready says so with the reason."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from chronograph.projections.live import rebuilding
from chronograph.server.app import Runtime, create_server
from chronograph.server.config import Settings
from chronograph.server.http import http_app
from support.mcp import entity
from support.postgres import database

pytestmark = pytest.mark.anyio
psycopg = pytest.importorskip("psycopg")


def cut_back(url: str, keep: int) -> None:
    """The log as a replica that missed every commit after position `keep` holds it."""
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as connection:
        connection.execute(f'DELETE FROM "{schema}".events WHERE position > %s', (keep,))
        connection.execute(f'DELETE FROM "{schema}".heads')
        connection.execute(f'INSERT INTO "{schema}".heads (stream, version, stream_key) SELECT stream, max(version), '
                           f'stream_key FROM "{schema}".events GROUP BY stream, stream_key')


async def test_ready_says_rebuilding_with_the_reason_while_a_cache_whose_log_went_back_is_rebuilt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = database().log_url()
    settings = Settings(store=url, cache=tmp_path / "cache", embeddings="off")
    runtime = Runtime(settings, offload=True)
    app = http_app(create_server(settings, runtime), runtime, host="127.0.0.1", token=None)
    started, release = threading.Event(), threading.Event()
    original = rebuilding.rebuild

    def held(*args: Any, **kwargs: Any) -> Any:  # a rebuild that takes as long as the test says
        started.set()
        release.wait(60)
        return original(*args, **kwargs)

    starlette = app.app
    async with starlette.router.lifespan_context(starlette), httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1", timeout=30) as client:
        memory = runtime.memory
        for name in ("Ada", "Bob", "Cy"):
            memory.write("create_entities", {"entities": [entity(name)]}, actor="setup")
        assert (await client.get("/ready")).status_code == 200
        monkeypatch.setattr(rebuilding, "rebuild", held)
        cut_back(url, 1)
        read: list[Any] = []
        noticing = threading.Thread(target=lambda: memory.read("read_graph", {}))  # (or the follower first)
        caller = threading.Thread(target=lambda: read.append(memory.read("read_graph", {})))
        noticing.start()
        try:
            assert await anyio.to_thread.run_sync(started.wait, 30)
            caller.start()  # a call while the rebuild runs waits for it: no answer of the lost history
            answer = await client.get("/ready")
            assert answer.status_code == 503 and answer.json()["status"] == "rebuilding"
            assert "went back" in answer.json()["reason"] and "ends at position 1" in answer.json()["reason"]
        finally:
            release.set()
            for thread in (noticing, caller):
                if thread.is_alive():
                    await anyio.to_thread.run_sync(thread.join, 60)
        assert [e.name for e in read[0].entities] == ["Ada"]
        assert (await client.get("/ready")).status_code == 200
