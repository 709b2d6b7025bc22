"""History as of a moment: the entities a name had meant by then, not those that took it since."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application.errors import NotFoundError


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        yield opened


def create(memory: Memory, name: str) -> int:
    memory.write("create_entities", {"entities": [{"name": name, "entityType": "person", "observations": []}]},
                 actor="t")
    return memory.log.head()


def history(memory: Memory, name: str, **more: Any) -> list[tuple[int, str, str | None]]:
    answer = msgspec.to_builtins(memory.read("get_entity_history", {"name": name, **more}))
    return [(v["position"], v["eventType"], v["state"] and v["state"]["name"]) for v in answer["versions"]]


def test_history_as_of_a_moment_before_an_entity_took_the_name_does_not_show_it(memory: Memory) -> None:
    before = create(memory, "Bob")
    memory.write("rename_entity", {"name": "Bob", "newName": "Ada"}, actor="t")
    with pytest.raises(NotFoundError, match="by position"):
        history(memory, "Ada", asOf=before)  # as it answered then
    assert history(memory, "Ada") == [(1, "entity_created", "Bob"), (2, "entity_renamed", "Ada")]


def test_history_as_of_a_moment_shows_the_bearers_until_then_and_not_a_later_one(memory: Memory) -> None:
    create(memory, "Ada")
    memory.write("rename_entity", {"name": "Ada", "newName": "Ann"}, actor="t")
    create(memory, "Bob")
    then = memory.log.head()
    memory.write("rename_entity", {"name": "Bob", "newName": "Ada"}, actor="t")
    memory.write("add_observations", {"observations": [{"entityName": "Ann", "contents": ["later"]}]}, actor="t")
    assert history(memory, "Ada", asOf=then) == [(1, "entity_created", "Ada"), (2, "entity_renamed", "Ann")]
    assert [p for p, _, _ in history(memory, "Ada")] == [1, 2, 3, 4, 5]
