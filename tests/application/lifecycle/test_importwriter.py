"""The import's writing pass beside another server: an entity another server removes while the
import runs is a problem of the lines that name it, and the rest is written, on a store folder
and on a PostgreSQL log alike (where the import's views are a cache no follower keeps current)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application.lifecycle.importing import FileImport
from chronograph.application.lifecycle.importwriter import Writer

REMOVALS = {
    "delete_entities": {"entityNames": ["Ada"]},
    "forget_entity": {"name": "Ada", "reason": "asked to"},
}


@pytest.fixture
def memories(backend_store: dict[str, Any], tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    """The import's memory and another server's, on one store: on a store folder the same one
    (every process reads the folder's one set of views), on PostgreSQL two caches of one log."""
    with Memory(backend_store["store"], cache=backend_store.get("cache")) as mine:
        if "cache" not in backend_store:
            yield mine, mine
            return
        with Memory(backend_store["store"], cache=tmp_path / "other-cache") as other:
            yield mine, other


def removing_ada_before(tool: str, other: Memory, removal: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Have the other server remove Ada just before the import's first `tool` call (after the
    import looked her up)."""
    real, done = Writer.call, []

    def call(writer: Writer, called: str, arguments: dict[str, Any]) -> Any:
        if called == tool and not done:
            done.append(other.write(removal, REMOVALS[removal], actor="another server"))
        return real(writer, called, arguments)

    monkeypatch.setattr(Writer, "call", call)


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("removal", list(REMOVALS))
def test_a_later_line_of_an_entity_another_server_removes_is_a_problem_and_the_rest_is_written(
        memories: tuple[Memory, Memory], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, removal: str) -> None:
    mine, other = memories
    path = write_lines(tmp_path / "memory.jsonl", [
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["first"]},
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": ["here"]},
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["second"]},
        {"type": "entity", "name": "Cy", "entityType": "person", "observations": ["after"]}])
    removing_ada_before("add_observations", other, removal, monkeypatch)
    with FileImport(path, "default", batch=1) as job:
        job.survey()
        job.check_ends(mine)
        ((_, report),) = job.write(mine)
        problems = [(kind, [p.line for p in first]) for kind, _, first in job.problems.kinds()]
    mine.catch_up()
    graph = msgspec.to_builtins(mine.read("read_graph", {}))
    assert problems == [("an entity that left the store during the import", [3])]
    assert report.created == 3 and [e["name"] for e in graph["entities"]] == ["Bob", "Cy"]


@pytest.mark.parametrize("removal", list(REMOVALS))
def test_a_relation_to_an_entity_another_server_removes_is_a_problem_and_the_rest_is_written(
        memories: tuple[Memory, Memory], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, removal: str) -> None:
    mine, other = memories
    mine.write("create_entities", {"entities": [{"name": n, "entityType": "person", "observations": []}
                                                for n in ("Ada", "Cy")]}, actor="an earlier session")
    path = write_lines(tmp_path / "memory.jsonl", [
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": []},
        {"type": "relation", "from": "Bob", "to": "Ada", "relationType": "knows"},
        {"type": "relation", "from": "Bob", "to": "Cy", "relationType": "knows"}])
    removing_ada_before("create_relations", other, removal, monkeypatch)
    with FileImport(path, "default") as job:
        job.survey()
        job.check_ends(mine)  # both ends are in the store
        ((_, report),) = job.write(mine)
        problems = [(kind, [p.line for p in first]) for kind, _, first in job.problems.kinds()]
    mine.catch_up()
    graph = msgspec.to_builtins(mine.read("read_graph", {}))
    assert problems == [("a relation whose end left the store during the import", [2])]
    assert (report.created, report.related) == (1, 1)
    assert [(r["from"], r["to"]) for r in graph["relations"]] == [("Bob", "Cy")]


def test_an_entity_another_server_deleted_before_the_batch_that_names_it_is_made_again_from_the_file(
        memories: tuple[Memory, Memory], tmp_path: Path) -> None:
    mine, other = memories
    mine.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["old"]}]},
               actor="an earlier session")
    path = write_lines(tmp_path / "memory.jsonl", [
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": ["here"]},
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["from the file"]}])

    def meanwhile(stage: str, done: int, total: int) -> None:
        if stage == "entities" and done == 1:  # between the batches
            other.write("delete_entities", REMOVALS["delete_entities"], actor="another server")

    with FileImport(path, "default", batch=1, progress=meanwhile) as job:
        job.survey()
        job.check_ends(mine)
        ((_, report),) = job.write(mine)
    graph = msgspec.to_builtins(mine.read("read_graph", {}))
    assert len(job.problems) == 0 and report.created == 2
    assert {e["name"]: e["observations"] for e in graph["entities"]} == {"Bob": ["here"], "Ada": ["from the file"]}
