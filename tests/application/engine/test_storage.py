"""A full disk or a store at its size ceiling: a clean error, a readable store, and recovery."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
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
    from chronograph.eventstore import CommitUnconfirmedError

    cut = "the database went away at the commit; the write may or may not have been stored"
    with Memory(tmp_path / "store") as memory:
        def transact(work: object) -> None:
            raise CommitUnconfirmedError(cut)

        monkeypatch.setattr(memory.views, "transact", transact)
        with pytest.raises(StorageError) as refused:
            memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]},
                         actor="t")
    assert cut in str(refused.value)
    assert "nothing was written" not in str(refused.value)
    assert refused.value.code == "outcome_unknown"  # (tests/application/engine/test_outages.py: against PostgreSQL)


@pytest.fixture
def immutable_data_file(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Makes a store's data file immutable (`chattr +i`: even root's writes get EPERM) until the test ends."""
    made: list[Path] = []

    def make(store: Path) -> None:
        if subprocess.run(["chattr", "+i", str(store / "data.mdb")], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here (needs root and a filesystem that has it)")
        made.append(store / "data.mdb")

    yield make
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_writes_the_filesystem_refuses_say_why_with_code_storage_and_every_read_goes_on(
        tmp_path: Path, immutable_data_file: Callable[[Path], None]) -> None:
    """A data file the system will not let this process write (EPERM): create_entities and
    forget_entity said nothing a client could act on (no code), and after the failed forget
    every search, open and read_graph failed until the server restarted."""
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"a{i}", "entityType": "t", "observations": [f"fact {i}"]} for i in range(50)]}, actor="t")
        assert memory.read("search_nodes", {"query": "a3"}).entities  # type: ignore[attr-defined]
        immutable_data_file(tmp_path / "store")
        head = memory.log.head()
        for tool, arguments in (
            ("create_entities", {"entities": [{"name": "b", "entityType": "t", "observations": []}]}),
            ("forget_entity", {"name": "a2", "reason": "asked"}),
        ):
            with pytest.raises(StorageError) as refused:
                memory.write(tool, arguments, actor="t")
            assert refused.value.code == "storage"
            said = str(refused.value)
            assert "Operation not permitted" in said and said.count("nothing was written") == 1
        assert memory.log.head() == head
        assert [e.name for e in memory.read("search_nodes", {"query": "a3"}).entities][:1] == ["a3"]  # type: ignore[attr-defined]
        assert memory.read("open_nodes", {"names": ["a2"]}).entities  # type: ignore[attr-defined]
        assert memory.read("read_graph", {"limit": 1}).entities  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_through_mcp_a_read_only_filesystem_is_an_error_result_with_code_storage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lmdb
    from chronograph.eventstore.lmdb.env import LmdbEnv
    from chronograph.server.app import create_server
    from chronograph.server.config import Settings
    from mcp import Client

    real = LmdbEnv._begin_write

    class ReadOnly:  # LMDB's commit on a filesystem remounted read-only
        def __init__(self, txn: lmdb.Transaction) -> None:
            self.txn = txn

        def __getattr__(self, name: str) -> object:
            return getattr(self.txn, name)

        def commit(self) -> None:
            self.txn.abort()
            raise lmdb.Error("mdb_txn_commit: Read-only file system")

    async with Client(create_server(Settings(store=tmp_path / "store"))) as client:
        await call(client, "create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]})
        monkeypatch.setattr(LmdbEnv, "_begin_write", lambda self: ReadOnly(real(self)))
        result = await client.call_tool("create_entities", {"entities": [
            {"name": "b", "entityType": "t", "observations": []}]})
        assert result.is_error and result.structured_content is not None
        assert result.structured_content["code"] == "storage"
        assert "mounted read-only (mdb_txn_commit: Read-only file system)" in result.content[0].text  # type: ignore[union-attr]
        assert len((await call(client, "read_graph", {}))["entities"]) == 1


def test_a_read_answers_whatever_stops_it_keeping_the_search_image(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]},
                     actor="t")

        def save(**_: object) -> int:
            raise OSError(30, "Read-only file system")

        monkeypatch.setattr(memory.views.search, "due", lambda **_: ["a"])
        monkeypatch.setattr(memory.views.search, "save", save)
        assert [e.name for e in memory.read("search_nodes", {"query": "a"}).entities] == ["a"]  # type: ignore[attr-defined]
        assert memory.read("get_entity_history", {"name": "a"})  # a read under the store's lock saves too
