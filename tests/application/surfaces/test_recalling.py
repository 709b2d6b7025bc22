"""What a session wrote, as the `remember` prompt lists it: each change under the name its
entity bore when it was made."""

from __future__ import annotations

from pathlib import Path

from chronograph.application import Memory
from chronograph.application.surfaces.recalling import Wrote, session_writes


def test_a_session_s_writes_about_an_entity_it_renamed_are_listed_under_the_names_it_bore(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="earlier")
        after = memory.log.head()
        memory.write("rename_entity", {"name": "Ada", "newName": "Augusta"}, actor="claude/sess_1")
        memory.write("add_observations", {"observations": [{"entityName": "Augusta", "contents": ["notes"]}]},
                     actor="claude/sess_1")
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "language",
                                                       "observations": []}]}, actor="claude/sess_1")
        wrote = session_writes(memory, "default", "claude", after)
    assert wrote == [Wrote("Ada -> Augusta", ["entity renamed"]), Wrote("Augusta", ["observations added"]),
                     Wrote("Ada", ["entity created"])]
