"""A cache of a PostgreSQL log is built (new) or rebuilt while another server forgets: the fold goes
on as a cache away during the erasure would, and nothing erased stays in the views, their time
travel, their search or the cache's file."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.projections import verify
from chronograph.projections.live import views
from chronograph.projections.past.snapshots import Snapshots
from support.postgres import database

pytest.importorskip("psycopg")
rebuilding = importlib.import_module("chronograph.projections.live.rebuild")  # (the package names the function)

SECRETS = {"Ada": "hides at Quistmoor Hall", "Bea": "keeps bees at Wrenfold", "Cy": "sails from Harrowdene"}


@pytest.fixture
def url() -> str:
    return database().log_url()


@pytest.fixture
def other(url: str, tmp_path: Path) -> Iterator[Memory]:
    """Another server, which wrote the log and forgets while the cache under test folds it."""
    with Memory(url, cache=tmp_path / "other") as memory:
        memory.write("create_entities", {"entities": [
            {"name": name, "entityType": "person", "observations": [secret]} for name, secret in SECRETS.items()]},
            actor="a")
        memory.write("create_relations", {"relations": [
            {"from": "Ada", "to": "Bea", "relationType": "knows"},
            {"from": "Cy", "to": "Ada", "relationType": "knows"}]}, actor="a")
        memory.write("create_entities", {"entities": [
            {"name": f"Person {i}", "entityType": "person", "observations": [f"note {i}"]} for i in range(20)]},
            actor="a")
        memory.write("create_relations", {"relations": [
            {"from": f"Person {i}", "to": f"Person {i + 1}", "relationType": "knows"} for i in range(19)]}, actor="a")
        memory.write("rename_entity", {"name": "Person 3", "newName": "Persona"}, actor="a")
        yield memory


class Forgetting:
    """A progress callback that has `other` forget the next of `SECRETS`' people once each fold of
    the log passes `after` (a fold that starts again forgets the next one), and goes on once the
    forget committed (its scrub, which waits for older snapshots, goes on beside)."""

    def __init__(self, other: Memory, after: int, monkeypatch: pytest.MonkeyPatch) -> None:
        self.other, self.after = other, after
        self.pending = list(SECRETS)
        self.forgotten: list[str] = []
        self.threads: list[threading.Thread] = []
        self.armed = True
        self.committed = threading.Event()
        scrub = other.log.scrub

        def committed_then_scrub(*args: Any, **kwargs: Any) -> Any:
            self.committed.set()
            return scrub(*args, **kwargs)

        monkeypatch.setattr(other.log, "scrub", committed_then_scrub)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not stage.startswith("fold"):
            return
        if done < self.after:
            self.armed = True  # (a fold from the start again)
            return
        if self.armed and self.pending:
            self.armed = False
            name = self.pending.pop(0)
            self.forgotten.append(name)
            self.committed.clear()
            thread = threading.Thread(target=self.other.write, args=(
                "forget_entity", {"name": name, "reason": "asked"}), kwargs={"actor": "a"})
            thread.start()
            self.threads.append(thread)
            assert self.committed.wait(60)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(60)


def keeps_nothing_forgotten(memory: Memory, forgotten: list[str], cache: Path) -> None:
    graph = msgspec.to_builtins(memory.read("read_graph", {}))
    assert {e["name"] for e in graph["entities"]}.isdisjoint(forgotten)
    assert all(not set(forgotten) & {r["from"], r["to"]} for r in graph["relations"])
    past = msgspec.to_builtins(memory.read("read_graph", {"asOf": 8}))  # folded from a snapshot, if any
    assert {e["name"] for e in past["entities"]}.isdisjoint(forgotten)
    for name in forgotten:
        assert memory.read("search_nodes", {"query": SECRETS[name].split()[-1]}).entities == []
    assert verify(memory.views) == []
    for file in cache.iterdir():
        data = file.read_bytes()
        assert not any(SECRETS[name].encode() in data for name in forgotten), file


def in_the_way(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fold the log as one read, as several reads between snapshots, or onto the views written."""
    monkeypatch.setattr(rebuilding, "FOLD_BATCH", 2)
    if how == "spans":
        class Close(Snapshots):
            def __init__(self, env: Any, **kwargs: Any) -> None:
                super().__init__(env, spacing=4, **kwargs)

        monkeypatch.setattr(views, "Snapshots", Close)
    elif how == "segments":
        monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 4)
        monkeypatch.setattr(rebuilding, "CHANGE_CHUNK", 5)


@pytest.mark.parametrize("how", ["one read", "spans", "segments"])
def test_a_new_cache_is_built_while_another_server_forgets_and_keeps_nothing_it_erased(
        url: str, other: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    in_the_way(how, monkeypatch)
    forgetting = Forgetting(other, after=10, monkeypatch=monkeypatch)  # past a snapshot of Ada (spans)
    try:
        with Memory(url, cache=tmp_path / "new", progress=forgetting) as new:
            forgetting.join()
            assert forgetting.forgotten == ["Ada"]  # one fold, not one a forget
            keeps_nothing_forgotten(new, ["Ada"], tmp_path / "new")
            assert [e.name for e in new.read("open_nodes", {"names": ["Bea", "Persona"]}).entities] == [
                "Bea", "Persona"]
    finally:
        forgetting.join()


def test_a_cache_rebuilt_while_another_server_forgets_keeps_nothing_it_erased(
        url: str, other: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    in_the_way("spans", monkeypatch)
    with Memory(url, cache=tmp_path / "mine") as mine:
        assert mine.read("search_nodes", {"query": "Quistmoor"}).entities  # folded, searched: in the file
        forgetting = Forgetting(other, after=10, monkeypatch=monkeypatch)
        try:
            mine.views.rebuild(forgetting)
        finally:
            forgetting.join()
        assert forgetting.forgotten == ["Ada"]
        keeps_nothing_forgotten(mine, ["Ada"], tmp_path / "mine")

