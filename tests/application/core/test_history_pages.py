"""A page of history costs the events before its end, not a copy of every state of a long history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.eventstore import LmdbReader

VERSIONS = 60


@pytest.fixture
def long_entity(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Long", "entityType": "t", "observations": []}]},
                     actor="t")
        for v in range(VERSIONS - 1):
            memory.write("add_observations", {"observations": [
                {"entityName": "Long", "contents": [f"v{v} note {o}" for o in range(50)]}]}, actor="t")
        yield memory


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The versions of stream events decoded while the test runs."""
    seen: list[int] = []
    real = LmdbReader.stream

    def counting(self: LmdbReader, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for envelope in real(self, *args, **kwargs):
            seen.append(envelope.version)
            yield envelope

    monkeypatch.setattr(LmdbReader, "stream", counting)
    return seen


def test_the_first_page_of_a_long_history_folds_only_its_own_versions(long_entity: Memory, decoded: list[int]) -> None:
    page = long_entity.read("get_entity_history", {"name": "Long", "limit": 2})
    assert [v.version for v in page.versions] == [1, 2]  # type: ignore[attr-defined]
    assert decoded == [1, 2]


def test_the_newest_page_shows_the_whole_state_once(long_entity: Memory, decoded: list[int]) -> None:
    page = long_entity.read("get_entity_history", {"name": "Long", "limit": 1, "order": "newest"})
    [newest] = page.versions  # type: ignore[attr-defined]
    assert newest.version == VERSIONS and len(newest.state["observations"]) == 50 * (VERSIONS - 1)
    assert decoded == list(range(1, VERSIONS + 1))  # each event once, no state copied but the last


def test_reverting_folds_only_up_to_the_target(long_entity: Memory, decoded: list[int]) -> None:
    reverted = long_entity.write("revert_entity", {"name": "Long", "toVersion": 3}, actor="t").output
    assert len(reverted.entities[0].observations) == 100  # type: ignore[attr-defined]
    assert decoded == [1, 2, 3]
