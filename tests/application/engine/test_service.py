"""The memory's start-up state kept while it serves: the search images saved once the server is
idle after its indexes changed, so that a server ended by SIGKILL leaves the next one an
image to load rather than a stretch of log to re-index."""

from __future__ import annotations

import threading
from pathlib import Path

from chronograph.application import Memory
from chronograph.eventstore.keys import digest
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.search.wordindex import WorkspaceIndex


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
