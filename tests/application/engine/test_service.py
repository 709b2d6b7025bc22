"""The memory's calls from many threads (which wait for each other and which do not), and the
start-up state it keeps while it serves: the search images saved once the server is idle after
its indexes changed, so that a server ended by SIGKILL leaves the next one an image to load
rather than a stretch of log to re-index."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.eventstore.keys import digest
from chronograph.projections import ProjectionError
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.search.wordindex import WorkspaceIndex
from chronograph.projections.states.graph import LmdbGraph

GUARD = 30.0
"""Seconds before a thread that should have finished is declared stuck (a guard, not a measure)."""


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    return thread, done


@pytest.fixture
def held_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Memory, threading.Event]]:
    """A memory whose read_graph, in a thread of its own, stops inside its read snapshot until
    the event is set (a long read, held as long as the test needs)."""
    memory = Memory(tmp_path / "store")
    memory.write("create_entities", {"entities": [
        {"name": f"e{i}", "entityType": "t", "observations": [f"fact {i}"]} for i in range(20)]}, actor="t")
    inside, release = threading.Event(), threading.Event()
    real = LmdbGraph.entities

    def entities(self: LmdbGraph, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "long-read":
            inside.set()
            assert release.wait(GUARD)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LmdbGraph, "entities", entities)
    long = threading.Thread(target=lambda: memory.read("read_graph", {}), name="long-read", daemon=True)
    long.start()
    assert inside.wait(GUARD)
    try:
        yield memory, release
    finally:
        release.set()
        long.join(GUARD)
        memory.close()


def test_a_read_is_answered_while_a_long_read_holds_its_snapshot(held_read: tuple[Memory, threading.Event]) -> None:
    memory, release = held_read
    thread, done = in_thread(lambda: memory.read("open_nodes", {"names": ["e3"]}))
    thread.join(GUARD)
    assert done and [e.name for e in done[0].entities] == ["e3"]
    assert not release.is_set()  # the long read is still inside its snapshot


def test_a_write_is_taken_while_a_long_read_holds_its_snapshot(held_read: tuple[Memory, threading.Event]) -> None:
    memory, release = held_read
    thread, done = in_thread(lambda: memory.write("add_observations", {"observations": [
        {"entityName": "e1", "contents": ["later"]}]}, actor="t"))
    thread.join(GUARD)
    assert done and done[0].changed
    assert not release.is_set()
    assert "later" in memory.read("open_nodes", {"names": ["e1"]}).entities[0].observations


def test_a_read_as_of_then_waits_for_the_store_s_lock(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]}, actor="t")
        with memory.lock:  # as a write holds it
            thread, done = in_thread(lambda: memory.read("open_nodes", {"names": ["a"], "asOf": 1}))
            alongside, seen = in_thread(lambda: memory.read("open_nodes", {"names": ["a"]}))
            alongside.join(GUARD)
            assert seen and not done  # the present is read beside the lock; the past waits for it
        thread.join(GUARD)
        assert done and [e.name for e in done[0].entities] == ["a"]


def test_searches_from_many_threads_agree_with_one(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"n{i}", "entityType": "t", "observations": [f"word{i % 7} common"]} for i in range(200)]},
            actor="t")
        alone = memory.read("search_nodes", {"query": "word3"})
        threads = [in_thread(lambda: [memory.read("search_nodes", {"query": "word3"}) for _ in range(20)])
                   for _ in range(4)]
        for thread, _ in threads:
            thread.join(GUARD)
        for _, done in threads:
            assert done and all(answer == alone for answer in done[0])

def unguarded_puts(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each entity a word index takes while another thread could take the indexes' lock
    (then nothing stops two threads from changing, or reading, an index at once)."""
    lock, put, found = memory.views.search.lock, WorkspaceIndex.put, []

    def take() -> bool:
        taken = lock.acquire(blocking=False)
        if taken:
            lock.release()
        return taken

    def guarded(self: WorkspaceIndex, record: Any) -> None:
        free: list[bool] = []
        other = threading.Thread(target=lambda: free.append(take()))
        other.start()
        other.join(GUARD)
        if free != [False]:
            found.append(record.name)
        put(self, record)

    monkeypatch.setattr(WorkspaceIndex, "put", guarded)
    return found


@pytest.mark.parametrize("call", [
    lambda memory: memory.read("read_graph", {"limit": 1}, reply_limit=1 << 20),
    lambda memory: memory.read("read_graph", {}, reply_limit=1 << 20),
    lambda memory: memory.read("search_nodes", {"query": "hello", "limit": 1}, reply_limit=1 << 20),
    lambda memory: memory.keep_images_now(),
], ids=["read_graph page", "read_graph", "search_nodes", "image keeper"])
def test_every_call_that_catches_a_word_index_up_holds_its_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: Callable[[Memory], Any]
) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        create(memory, "Ada")
        memory.read("search_nodes", {"query": "hello"})  # the index is held by this process
        create(memory, "Grace")  # and one write behind
        unguarded = unguarded_puts(memory, monkeypatch)
        call(memory)
        assert memory.views.search._workspaces["default"].position == memory.log.head()  # it was caught up
        assert unguarded == []


def test_a_word_index_is_not_handed_to_a_thread_without_its_lock(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        create(memory, "Ada")
        with memory.views.snapshot() as snapshot, pytest.raises(ProjectionError, match="without its lock"):
            memory.views.search_index(snapshot, "default")
        with memory.views.search.lock, memory.views.snapshot() as snapshot:
            assert memory.views.search_index(snapshot, "default").containing("ada") is not None


def test_a_snapshot_older_than_the_word_index_gets_one_of_its_own_and_leaves_the_shared_one_ahead(
    tmp_path: Path,
) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        create(memory, "Ada")
        memory.read("search_nodes", {"query": "hello"})  # built, its image kept
        with memory.views.snapshot() as old:
            create(memory, "Grace")
            assert len(memory.read("search_nodes", {"query": "hello"}).entities) == 2  # type: ignore[attr-defined]
            shared = memory.views.search._workspaces["default"]
            with memory.views.search.at(old.log, old.graph, "default") as index:
                assert index is not shared and index is not None and index.containing("grace") == []
        assert memory.views.search._workspaces["default"] is shared
        assert shared.position == memory.log.head()


def image_position(memory: Memory, workspace: str = "default") -> int:
    with memory.lock, memory.views.env.read() as txn:
        data = txn.get(digest(workspace.encode()), db=memory.views.env.open_db(SearchIndex.NAME))
        index = None if data is None else WorkspaceIndex.from_image(bytes(data))
        return -1 if index is None else index.position


def create(memory: Memory, name: str, workspace: str = "default") -> None:
    memory.write("create_entities", {"workspace": workspace, "entities": [
        {"name": name, "entityType": "t", "observations": [f"{name} says hello"]}]}, actor="t")


def test_an_idle_server_saves_the_image_of_an_index_its_writes_changed(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        create(memory, "Ada")
        memory.read("search_nodes", {"query": "hello"})  # built, its image saved at once
        assert image_position(memory) == memory.log.head()
        create(memory, "Grace")
        memory.read("search_nodes", {"query": "hello"})  # caught up: its image is one write behind
        assert image_position(memory) < memory.log.head()
        memory.keep_images(idle=0.05)
        done = threading.Event()
        for _ in range(600):  # waits for the keeper, asserting no time
            if image_position(memory) == memory.log.head():
                done.set()
                break
            done.wait(0.05)
        assert done.is_set()


def test_only_an_index_whose_entities_changed_is_saved_again(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        create(memory, "Ada")
        memory.read("search_nodes", {"query": "hello"})
        saved = image_position(memory)
        create(memory, "Lin", workspace="lab")  # another workspace's write
        assert memory.keep_images_now() == 0  # the default index only moved past it: nothing to save
        assert image_position(memory) == saved
        create(memory, "Grace")
        assert memory.keep_images_now() == 1
        assert image_position(memory) == memory.log.head()
