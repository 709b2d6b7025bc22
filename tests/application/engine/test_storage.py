"""A full disk or a store at its size ceiling: a clean error, a readable store, and recovery."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.errors import StorageError
from support.mcp import ToolFailed, call


def fill(memory: Memory) -> int:
    """Write batches until the store refuses; return how many landed."""
    for batch in range(10_000):
        try:
            memory.write("create_entities", {"entities": [
                {"name": f"e{batch}-{i}", "entityType": "t", "observations": ["o" * 500]} for i in range(20)
            ]}, actor="filler")
        except StorageError as error:
            assert "nothing was written" in str(error)
            return batch
    raise AssertionError("the store never filled up")


def test_a_store_at_its_ceiling_refuses_cleanly_stays_readable_and_recovers(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", max_size=2 << 20) as memory:
        landed = fill(memory)
        head = memory.log.head()
        assert len(memory.read("read_graph", {}).entities) == landed * 20  # type: ignore[attr-defined]
        memory.log.max_map_size = 64 << 20  # room again
        memory.write("create_entities", {"entities": [{"name": "after", "entityType": "t", "observations": []}]},
                     actor="t")
        assert memory.log.head() == head + 1


@pytest.mark.anyio
async def test_through_mcp_a_full_store_is_an_error_result(tmp_path: Path) -> None:
    from chronograph.server.app import create_server
    from chronograph.server.config import Settings
    from mcp import Client

    async with Client(create_server(Settings(store=tmp_path / "store", max_size=1 << 20))) as client:
        with pytest.raises(ToolFailed, match="ceiling of 1048576 bytes; nothing was written"):
            for batch in range(1000):
                await call(client, "create_entities", {"entities": [
                    {"name": f"e{batch}-{i}", "entityType": "t", "observations": ["o" * 500]} for i in range(20)]})
        assert (await call(client, "read_graph", {"limit": 1}))["totalEntities"] > 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a small filesystem here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_refuses_cleanly_stays_readable_and_recovers_when_space_returns(small_disk: Path) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(b"x" * 1_000_000)
    with Memory(small_disk / "store") as memory:
        landed = fill(memory)
        assert landed > 0
        assert len(memory.read("read_graph", {}).entities) == landed * 20  # type: ignore[attr-defined]
        os.remove(filler)
        memory.write("create_entities", {"entities": [{"name": "after", "entityType": "t", "observations": []}]},
                     actor="t")
        assert memory.read("open_nodes", {"names": ["after"]}).entities  # type: ignore[attr-defined]


def test_a_store_already_over_a_lowered_ceiling_takes_no_write_and_says_so(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        fill_to = 3 << 20
        batch = 0
        while memory.store_bytes() < fill_to:
            memory.write("create_entities", {"entities": [
                {"name": f"e{batch}-{i}", "entityType": "t", "observations": ["o" * 500]} for i in range(50)
            ]}, actor="filler")
            batch += 1
        size = memory.store_bytes()
    with Memory(tmp_path / "store", max_size=2 << 20) as memory:
        head = memory.log.head()
        for tool, arguments in (
            ("create_entities", {"entities": [{"name": "more", "entityType": "t", "observations": []}]}),
            ("delete_entities", {"entityNames": ["e0-0"]}),
        ):
            with pytest.raises(StorageError, match="over its size ceiling.*deletions included"):
                memory.write(tool, arguments, actor="t")
        assert memory.log.head() == head
        summary = memory.read("get_graph_summary", {"limit": 1})
        assert summary.store_bytes == size and summary.entities == batch * 50  # type: ignore[attr-defined]


def test_a_write_whose_commit_was_cut_off_says_it_may_be_stored_not_that_nothing_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronograph.eventstore import StoreUnavailableError

    cut = "the database went away at the commit; the write may or may not have been stored: read before retrying"
    with Memory(tmp_path / "store") as memory:
        def transact(work: object) -> None:
            raise StoreUnavailableError(cut)

        monkeypatch.setattr(memory.views, "transact", transact)
        with pytest.raises(StorageError) as refused:
            memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]},
                         actor="t")
    assert cut in str(refused.value)
    assert "nothing was written" not in str(refused.value)
    assert refused.value.code == "storage"
