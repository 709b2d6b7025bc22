"""An event this version does not know, in the middle of the log: answers name it, never hide it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from chronograph.application import Memory, StorageError
from chronograph.eventstore import UnknownEventError

NEWER = textwrap.dedent("""
    import sys
    from chronograph.eventstore import CATALOGUE, Codec, EntityCreated, Event, LmdbLog, StreamWrite

    class MysteryHappened(Event, frozen=True, tag="mystery_happened"):
        detail: str

    with LmdbLog(sys.argv[1], codec=Codec([*CATALOGUE, MysteryHappened])) as newer:
        newer.append([StreamWrite("elsewhere", [MysteryHappened(detail="x")])], actor="newer")
        newer.append([StreamWrite("e2", [EntityCreated(workspace="default", name="Bob", entity_type="t")])],
                     actor="newer")
""")


def test_reads_through_an_unknown_event_name_its_position_and_type(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "t", "observations": []}]},
                     actor="t")
        subprocess.run([sys.executable, "-c", NEWER, str(store)], check=True)  # a newer version writes
        with pytest.raises(StorageError, match="position 2 has type 'mystery_happened'.*upgrade"):
            memory.read("read_graph", {"asOf": 3})
        with pytest.raises(StorageError, match="position 2 has type 'mystery_happened'"):
            memory.read("get_audit_log", {"allWorkspaces": True})
        with pytest.raises(StorageError, match="position 2 has type 'mystery_happened'"):
            memory.write("create_entities", {"entities": [{"name": "Cy", "entityType": "t", "observations": []}]},
                         actor="t")
    with pytest.raises(UnknownEventError, match="position 2 has type 'mystery_happened'"):
        Memory(store)  # catching up at open: refused in one clear line, never an empty memory
