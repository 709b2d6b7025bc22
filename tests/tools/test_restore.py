"""`chronograph restore` where the store it replaces, the disk or the process is what fails
(tools/restore.py; the backups' own damage is tests/tools/test_backup.py's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from chronograph.application import Memory

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "CHRONOGRAPH_EMBEDDINGS": "off"}
PAGE = 4096


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`chronograph ...` in its own process (a store is never opened twice in one process)."""
    return subprocess.run([sys.executable, "-m", "chronograph", *args], capture_output=True, text=True,
                          timeout=120, env=ENV, cwd=ROOT)


def make_store(path: Path, name: str) -> Path:
    with Memory(path, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": name, "entityType": "p",
                                                       "observations": ["x" * 200]}]}, actor="a")
    return path


def names(store: Path) -> list[str]:
    with Memory(store, sync=False) as memory:
        return [e.name for e in memory.read("read_graph", {}).entities]  # type: ignore[attr-defined]


@pytest.fixture
def backup(tmp_path: Path) -> Path:
    path = tmp_path / "b.chronograph"
    done = cli("backup", "--store", str(make_store(tmp_path / "source", "Ada")), "-o", str(path))
    assert done.returncode == 0, done.stderr
    return path


def zero_all_but_meta(data: bytearray) -> None:
    data[2 * PAGE:] = bytes(len(data) - 2 * PAGE)  # the main database's root page among them


def garbage_meta(data: bytearray) -> None:
    data[: 2 * PAGE] = os.urandom(2 * PAGE)


def cut_short(data: bytearray) -> None:
    del data[3 * PAGE:]  # past the meta pages: fewer pages than its last commit needs


@pytest.mark.parametrize("damage", [zero_all_but_meta, garbage_meta, cut_short])
def test_replace_sets_aside_a_store_too_damaged_to_read_and_restores_in_its_place(
    backup: Path, tmp_path: Path, damage: object,
) -> None:
    """What `replay --verify` sends to a backup: it crashed the restore or was called no store."""
    store = make_store(tmp_path / "store", "Bob")
    data = bytearray((store / "data.mdb").read_bytes())
    damage(data)  # type: ignore[operator]
    (store / "data.mdb").write_bytes(bytes(data))
    done = cli("restore", str(backup), "--store", str(store), "--replace")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "store.replaced-1" / "data.mdb").read_bytes() == bytes(data)  # kept as it was
    assert names(store) == ["Ada"]


def test_replace_refuses_a_damaged_lmdb_environment_kept_beside_other_files(backup: Path, tmp_path: Path) -> None:
    store = make_store(tmp_path / "store", "Bob")
    (store / "notes.txt").write_text("my own", encoding="utf-8")
    with (store / "data.mdb").open("r+b") as file:
        file.write(bytes(2 * PAGE))
    before = sorted(p.name for p in tmp_path.iterdir())
    refused = cli("restore", str(backup), "--store", str(store), "--replace")
    assert refused.returncode == 2 and "holds no Chronograph store" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before
