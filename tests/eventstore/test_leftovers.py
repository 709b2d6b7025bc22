"""What killed writes leave behind, removed by the next write into their folder (`eventstore/leftovers.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from chronograph.eventstore.files import guarded_file, write_file
from chronograph.eventstore.leftovers import partial_name

LINUX = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to tell when a process started")


def gone_pid() -> int:
    """The id of a process that has ended."""
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                              check=True).stdout)


def started(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[19])


def partial(folder: Path, target: str, *, pid: int, start: int, host: str | None = None) -> Path:
    """A temporary file as the guarded writer of process `pid` (started at `start`) names it."""
    name = partial_name(target)  # .<target>.<host>-<pid>-<start>-<random>.partial
    head, _, tail = name.removesuffix(".partial").rpartition(".")
    ours, _, _, random = tail.split("-")
    path = folder / f"{head}.{host or ours}-{pid}-{start}-{random}.partial"
    path.write_bytes(b"nearly a whole backup")
    return path


@LINUX
def test_a_write_removes_the_temporary_files_killed_writes_left_in_its_folder_whatever_their_target(
        tmp_path: Path) -> None:
    """A backup killed before its end, then one under another name (dated names): its nearly
    whole copy of the store stayed, holding what a later forget erased."""
    killed = partial(tmp_path, "memory-2026-12-06.chronograph", pid=gone_pid(), start=1)
    write_file(tmp_path / "memory-2026-12-07.chronograph", b"backup")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory-2026-12-07.chronograph"]
    assert not killed.exists()


@LINUX
def test_a_temporary_file_whose_process_id_was_taken_again_is_removed(tmp_path: Path) -> None:
    parent = os.getppid()
    reused = partial(tmp_path, "a.chronograph", pid=parent, start=started(parent) + 1)
    live = partial(tmp_path, "b.chronograph", pid=parent, start=started(parent))
    write_file(tmp_path / "c.json", b"{}")
    assert not reused.exists() and live.exists()


def test_the_temporary_files_of_live_writes_of_other_hosts_and_of_other_names_stay(tmp_path: Path) -> None:
    """A folder shared with other machines holds their live writes too; a process id there says
    nothing here. Files not named as the writer names them are the user's."""
    other_host = partial(tmp_path, "theirs.chronograph", pid=gone_pid(), start=1, host="0123456789ab")
    unknown = partial(tmp_path, "mine.chronograph", pid=os.getppid(), start=0)  # a start the system did not say
    users = [tmp_path / name for name in (".notes.partial", ".x.123-zz.partial", ".y.123-0a1b2c3d4e5f.partial.bak")]
    for path in users:
        path.write_bytes(b"the user's")
    write_file(tmp_path / "out.json", b"{}")
    assert other_host.exists() and unknown.exists() and all(path.exists() for path in users)


def test_a_write_in_progress_is_not_removed_by_another_of_the_same_process(tmp_path: Path) -> None:
    with guarded_file(tmp_path / "big.chronograph") as file:
        file.write(b"half")
        write_file(tmp_path / "small.json", b"{}")
        [temporary] = [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
        assert temporary.name.startswith(".big.chronograph.") and f"-{os.getpid()}-" in temporary.name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.chronograph", "small.json"]
    assert (tmp_path / "big.chronograph").read_bytes() == b"half"


def test_a_temporary_file_name_fits_a_file_system_whatever_the_target(tmp_path: Path) -> None:
    write_file(tmp_path / ("n" * 255), b"{}")
    assert (tmp_path / ("n" * 255)).read_bytes() == b"{}"
