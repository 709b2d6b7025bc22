"""An Agent Memory import stopped partway, and run again (`lifecycle/from_agentmemory.py`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.application.errors import StorageError
from chronograph.application.lifecycle import from_agentmemory
from chronograph.application.lifecycle.from_agentmemory import import_team
from chronograph.tools.import_graph import main as import_main

FIXTURES = Path(__file__).parent / "fixtures"
ACTOR = "import:agent-memory"
CACHED = "9a000000-0000-4000-8000-000000000001"
"""The knowledge entry of three versions"""


def agent_memory_database(tmp_path: Path) -> Path:
    path = tmp_path / "agent-memory.db"
    connection = sqlite3.connect(path)
    connection.executescript((FIXTURES / "agent-memory.sql").read_text(encoding="utf-8"))
    connection.commit()
    connection.close()
    return path


def histories(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Each entry's versions: (number, its fields, change reason, createdBy), and whether it is active."""
    with Memory(store) as memory:
        exported = memory.read("memory_export", {"action": "export", "includeVersions": True,
                                                 "includeInactive": True}).reply  # type: ignore[attr-defined]
    out = {}
    for items in json.loads(exported["content"])["entries"].values():
        for entry in items:
            out[entry["id"]] = [entry["isActive"], *(
                (v["versionNum"], {k: v.get(k) for k in ("content", "description", "confidence", "validUntil",
                                                          "source", "parameters", "examples")},
                 v.get("changeReason"), v.get("createdBy")) for v in entry["versions"])]
    return out


def stop_after(monkeypatch: pytest.MonkeyPatch, updates: int) -> None:
    """Make the import fail (a full disk) at its `updates`+1-th write of a knowledge entry's later version."""
    write = from_agentmemory._Import.write
    seen = {"updates": 0}

    def failing(self: Any, tool: str, arguments: dict[str, Any]) -> Any:
        if tool == "memory_knowledge" and arguments.get("action") == "update":
            if seen["updates"] == updates:
                raise StorageError("the disk is full")
            seen["updates"] += 1
        return write(self, tool, arguments)

    monkeypatch.setattr(from_agentmemory._Import, "write", failing)


@pytest.mark.parametrize("updates", [0, 1])
def test_an_import_stopped_between_an_entrys_versions_writes_the_rest_in_order_when_run_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, updates: int) -> None:
    source = agent_memory_database(tmp_path)
    assert import_main([str(source), "--store", str(tmp_path / "clean")]) == 0
    store = tmp_path / "store"
    with monkeypatch.context() as patched:
        stop_after(patched, updates)
        with Memory(store) as memory, pytest.raises(StorageError):
            import_team(memory, source, ACTOR)
    stopped = histories(store)
    assert len(stopped[CACHED]) - 1 < 3  # the entry lacks a version
    assert import_main([str(source), "--store", str(store)]) == 0
    assert histories(store) == histories(tmp_path / "clean")


def test_an_entry_changed_here_since_a_stopped_import_is_brought_to_the_current_version_in_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, store = agent_memory_database(tmp_path), tmp_path / "store"
    with monkeypatch.context() as patched:
        stop_after(patched, 0)
        with Memory(store) as memory, pytest.raises(StorageError):
            import_team(memory, source, ACTOR)
    with Memory(store) as memory:
        memory.write("memory_knowledge", {"action": "update", "id": CACHED, "content": "Ours, not the import's"},
                     actor="t")
    assert import_main([str(source), "--store", str(store)]) == 0
    versions = histories(store)[CACHED][1:]
    assert [(v[1]["content"], v[2]) for v in versions] == [
        ("The cart is cached for speed", None), ("Ours, not the import's", None),
        ("The cart is cached for 60 s: the pricing service takes 800 ms", "Imported (update)")]


def test_versions_agent_memory_gained_since_an_import_come_with_their_change_reasons(tmp_path: Path) -> None:
    source, store = agent_memory_database(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store)]) == 0
    connection = sqlite3.connect(source)
    connection.execute("INSERT INTO knowledge_versions (id, knowledge_id, version_num, content, source, confidence, "
                       "valid_until, created_by, change_reason) VALUES ('v4', ?, 4, 'Cached for 30 s now', "
                       "'profiling', 0.95, '2027-06-30T00:00:00Z', 'alice', 'Faster pricing')", [CACHED])
    connection.execute("UPDATE knowledge SET current_version_id = 'v4' WHERE id = ?", [CACHED])
    connection.commit()
    connection.close()
    assert import_main([str(source), "--store", str(store)]) == 0
    versions = histories(store)[CACHED][1:]
    assert [(v[1]["content"], v[2]) for v in versions][2:] == [
        ("The cart is cached for 60 s: the pricing service takes 800 ms", "Measured"),
        ("Cached for 30 s now", "Faster pricing")]
    assert versions[-1][1]["validUntil"] == "2027-06-30T00:00:00.000000Z"
