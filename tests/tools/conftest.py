"""A store with a short, known history, written at frozen times, then closed."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application import Memory
from freezegun import freeze_time

T1, T2, T3 = "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z"


def entity(name: str, entity_type: str = "person", *observations: str) -> dict:  # type: ignore[type-arg]
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


@pytest.fixture
def history_store(tmp_path: Path) -> Path:
    """Ada created at T1 (with Bob, related), updated at T2 by 'editor', deleted at T3."""
    path = tmp_path / "store"
    with Memory(path) as memory, freeze_time(T1) as frozen:
        memory.write("create_entities", {"entities": [entity("Ada", "person", "math"), entity("Bob")]},
                     actor="claude")
        memory.write("create_relations", {"relations": [{"from": "Bob", "to": "Ada", "relationType": "knows"}]},
                     actor="claude")
        frozen.move_to(T2)
        memory.write("update_entities", {"entities": [{"name": "Ada", "entityType": "countess"}]}, actor="editor")
        frozen.move_to(T3)
        memory.write("delete_entities", {"entityNames": ["Ada"]}, actor="claude")
    return path
