"""The `chronograph` command: limits of the whole process are one line, never a traceback."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.tools import copy_store, replay
from chronograph.tools.cli import main as cli


@pytest.fixture
def store(tmp_path: Path) -> Path:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [{"name": "a", "entityType": "t", "observations": []}]},
                     actor="t")
    return tmp_path / "store"


@pytest.mark.parametrize("command", ["copy", "replay --verify"])
def test_a_command_out_of_memory_says_so_in_a_line(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    """Under ulimit -v, copy and replay --verify printed a MemoryError traceback (restore said it in a line)."""
    def out_of_memory(*_: object, **__: object) -> None:
        raise MemoryError

    if command == "copy":
        monkeypatch.setattr(copy_store, "copy_log", out_of_memory)
        argv = ["copy", "--from", str(store), "--to", str(tmp_path / "copy")]
    else:
        monkeypatch.setattr(replay, "_verify", out_of_memory)
        argv = ["replay", "--verify", "--store", str(store)]
    assert cli(argv) == 2
    said = capsys.readouterr().err
    assert said == (f"chronograph {argv[0]}: out of memory (the machine's, or this process's address space: "
                    "ulimit -v); the store holds what was committed before it: run it again with more memory\n")


def test_a_command_out_of_file_descriptors_says_so_in_a_line(store: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    def too_many(*_: object, **__: object) -> None:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(replay, "_verify", too_many)
    assert cli(["replay", "--verify", "--store", str(store)]) == 2
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert capsys.readouterr().err == (f"chronograph replay: Too many open files (this process may have {limit} "
                                       "open: ulimit -n); raise the limit and run it again\n")


def test_a_server_with_too_few_file_descriptors_says_so_in_a_line(store: Path) -> None:
    """ulimit -n 8 killed serve with an EMFILE traceback."""
    def few() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (8, 8))

    done = subprocess.run([sys.executable, "-m", "chronograph", "--store", str(store)], input="", text=True,
                          capture_output=True, preexec_fn=few, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == ("chronograph serve: Too many open files (this process may have "
                                                    "8 open: ulimit -n); raise the limit and run it again")
