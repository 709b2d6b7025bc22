"""chronograph backup / restore: a consistent copy beside a writer, restored exactly, and every
damaged file or occupied target refused with nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`chronograph ...` in its own process (a store is never opened twice in one process)."""
    return subprocess.run([sys.executable, "-m", "chronograph", *args], capture_output=True, text=True,
                          timeout=120, env=ENV, cwd=ROOT)


def answers(path: Path) -> dict[str, Any]:
    """What a store answers: the graph now and as of position 3, a history, the audit."""
    with Memory(path, sync=False) as memory:
        return {
            "now": memory.read("read_graph", {}),
            "then": memory.read("read_graph", {"asOf": 3}),
            "history": memory.read("get_entity_history", {"name": "Ada"}),
            "audit": memory.read("get_audit_log", {"limit": 100, "allWorkspaces": True}),
            "team": memory.read("memory_tool", {"action": "list"}),
        }


def test_a_backup_taken_beside_a_writer_restores_a_store_that_answers_the_same(tmp_path: Path) -> None:
    store, backup, restored = tmp_path / "store", tmp_path / "memory.chronograph", tmp_path / "restored"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person",
                                                       "observations": ["math"]}]}, actor="a")
        memory.write("add_observations", {"observations": [{"entityName": "Ada", "contents": ["tea"]}]}, actor="b")
        memory.call("memory_tool", {"action": "add", "scopeType": "global", "name": "git"}, actor="c")
        memory.write("update_context", {"activeTask": "backup", "workspace": "lab"}, actor="d")
        taken = cli("backup", "--store", str(store), "-o", str(backup))  # while this process holds the store
        assert taken.returncode == 0, taken.stderr
        assert "as of log position 4" in taken.stderr
        memory.write("delete_entities", {"entityNames": ["Ada"]}, actor="e")  # after the backup: not in it
    done = cli("restore", str(backup), "--store", str(restored))
    assert done.returncode == 0, done.stderr and "checksum verified" in done.stderr
    copy = answers(restored)
    assert [e.name for e in copy["now"].entities] == ["Ada"]
    with Memory(store, sync=False) as memory:
        memory.write("revert_entity", {"name": "Ada", "toVersion": 2}, actor="f")
    original = answers(store)
    assert copy["then"] == original["then"] and copy["team"] == original["team"]
    assert copy["history"].versions == original["history"].versions[:2]
    assert copy["audit"].events == [e for e in original["audit"].events if e.position <= 4]
    verified = subprocess.run([sys.executable, "tools/replay.py", "--store", str(restored), "--verify"],
                              capture_output=True, text=True, timeout=120, env=ENV, cwd=ROOT)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.fixture
def backup(tmp_path: Path) -> Path:
    store, path = tmp_path / "store", tmp_path / "b.chronograph"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="a")
    assert cli("backup", "--store", str(store), "-o", str(path)).returncode == 0
    return path


@pytest.mark.parametrize("damage", ["truncate", "flip", "pad", "not a backup"])
def test_a_damaged_backup_is_refused_and_nothing_is_written(backup: Path, tmp_path: Path, damage: str) -> None:
    data = bytearray(backup.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 2] ^= 0x40
    elif damage == "pad":
        data += b"\0" * 4096
    else:
        data = bytearray(b"hello")
    backup.write_bytes(bytes(data))
    target = tmp_path / "target"
    refused = cli("restore", str(backup), "--store", str(target))
    assert refused.returncode == 2 and "nothing was written" in refused.stderr
    assert not target.exists() and not [p for p in tmp_path.iterdir() if "restoring" in p.name]


def test_a_store_that_holds_something_is_replaced_only_when_asked_and_kept_beside(backup: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    with Memory(target, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Bob", "entityType": "p", "observations": []}]},
                     actor="a")
    refused = cli("restore", str(backup), "--store", str(target))
    assert refused.returncode == 2 and "not empty" in refused.stderr
    done = cli("restore", str(backup), "--store", str(target), "--replace")
    assert done.returncode == 0, done.stderr
    with Memory(target, sync=False) as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Ada"]
    with Memory(tmp_path / "target.replaced-1", sync=False) as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Bob"]


def test_backup_refuses_a_store_that_does_not_exist(tmp_path: Path) -> None:
    missing = cli("backup", "--store", str(tmp_path / "nothing"), "-o", str(tmp_path / "b"))
    assert missing.returncode == 2 and not (tmp_path / "b").exists() and not (tmp_path / "nothing").exists()
