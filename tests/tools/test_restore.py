"""`chronograph restore` where the store it replaces, the disk or the process is what fails
(tools/restore.py; the backups' own damage is tests/tools/test_backup.py's)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.lifecycle import restoring
from chronograph.eventstore import StorageFullError
from chronograph.tools import restore

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


def stopped_child(returncode: int, said: str = "") -> Callable[..., subprocess.CompletedProcess[str]]:
    """`subprocess.run` as it returns when the rebuilding child ends with `returncode`, having said `said`."""
    def run(args: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, returncode, stdout=said)
    return run


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "full disk"])
def test_a_rebuilding_child_stopped_or_out_of_room_is_not_blamed_on_the_backup(
    backup: Path, tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    full = f"the disk holding {tmp_path} is full; nothing was written. Free some space and retry"
    child = stopped_child(restore.STOPPED, full) if how == "full disk" else stopped_child(-signal.Signals[how])
    monkeypatch.setattr(restore.subprocess, "run", child)
    assert restore.main([str(backup), "--store", str(tmp_path / "target")]) == 2
    said = capsys.readouterr().err
    assert "damaged" not in said and f"{backup} was not found faulty, and nothing was written" in said
    assert (full if how == "full disk" else f"stopped by {how}") in said
    assert len(said.strip().splitlines()) == 1 and not (tmp_path / "target").exists()


def test_a_rebuilding_child_that_crashes_reading_the_backup_still_blames_it(
    backup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(restore.subprocess, "run", stopped_child(-signal.SIGBUS))
    assert restore.main([str(backup), "--store", str(tmp_path / "target")]) == 2
    assert "(SIGBUS): the backup is damaged; nothing was written" in capsys.readouterr().err


@pytest.mark.parametrize("error", [
    OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/restoring/built/data.mdb"),
    StorageFullError("the disk holding /restoring/built is full; nothing was written. Free some space and retry"),
])
def test_the_rebuilding_child_says_a_full_disk_is_no_damage(
    error: Exception, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    def rebuild_from_log(*_: object, **__: object) -> None:
        raise error

    monkeypatch.setattr(restoring, "rebuild_from_log", rebuild_from_log)
    assert restore._rebuild([str(tmp_path / "x"), str(tmp_path / "y"), "1"]) != restore.DAMAGED
    said = capsys.readouterr().out
    assert "damaged" not in said and ("No space left on device" in said or "is full" in said)


def not_extracted(*_: object) -> None:
    raise AssertionError("the restore went on to extract the backup")


def test_restore_below_a_file_is_refused_naming_the_file_before_any_work(
    backup: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(restore, "extract", not_extracted)
    assert restore.main([str(backup), "--store", str(backup / "x")]) == 2
    said = capsys.readouterr().err
    assert f"{backup} is a file, not a folder" in said and len(said.strip().splitlines()) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a file system needs root")
@pytest.mark.parametrize("replace", [True, False])
def test_restore_over_a_mount_point_is_refused_naming_it_before_any_work(
    backup: Path, tmp_path: Path, replace: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """Renaming a mount point fails (EBUSY): that was said, without the path, after the whole rebuild."""
    volume = tmp_path / "volume"
    volume.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(volume)], check=False).returncode:
        pytest.skip("tmpfs cannot be mounted here")
    try:
        if replace:
            make_store(volume, "Bob")
        monkeypatch.setattr(restore, "extract", not_extracted)
        assert restore.main([str(backup), "--store", str(volume), *(["--replace"] if replace else [])]) == 2
        said = capsys.readouterr().err
        assert f"{volume} is a mount point" in said and len(said.strip().splitlines()) == 1
    finally:
        subprocess.run(["umount", str(volume)], check=True)


def test_a_file_system_error_names_the_path_it_is_about(
    backup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    def full(_: Path, __: object, ___: int, folder: Path) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / "data.mdb"))

    monkeypatch.setattr(restore, "extract", full)
    assert restore.main([str(backup), "--store", str(tmp_path / "target")]) == 2
    said = capsys.readouterr().err
    assert f"extracted/data.mdb: {os.strerror(errno.ENOSPC)}; nothing was written" in said
    assert str(tmp_path) in said and not (tmp_path / "target").exists()
