"""Who bore a name when, read from the entities' streams rather than the names index's order."""

from __future__ import annotations

from pathlib import Path

from chronograph.application import Memory
from chronograph.application.core.tenures import OPEN, holder_at, last_bearer


def test_a_name_two_entities_bore_in_turn_is_held_by_each_in_its_tenure(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        def write(tool: str, **arguments: object) -> int:
            memory.write(tool, arguments, actor="t")
            return memory.log.head()

        write("create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": []}])
        first_left = write("rename_entity", name="Ada", newName="Ada (old)")
        write("create_entities", entities=[{"name": "Ada", "entityType": "robot", "observations": []}])
        second_left = write("rename_entity", name="Ada", newName="Robo")
        write("rename_entity", name="Ada (old)", newName="Ada")
        with memory.log.read() as log, memory.views.read() as graph:
            first, second = streams = graph.name_streams("default", "Ada")
            assert holder_at(log, streams, "default", "Ada", 1) == first
            assert holder_at(log, streams, "default", "Ada", first_left) is None
            assert holder_at(log, streams, "default", "Ada", second_left - 1) == second
            assert holder_at(log, streams, "default", "Ada", log.head()) == first
            bearer, tenure = last_bearer(log, streams, "default", "Ada") or ("", None)
            assert bearer == first and tenure is not None and tenure.end == OPEN
            bearer, tenure = last_bearer(log, streams, "default", "Ada", second_left) or ("", None)
            assert bearer == second and tenure is not None and tenure.end == second_left
