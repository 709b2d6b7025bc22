"""SIGTERM stops a command as Ctrl-C does: its `finally` blocks run, so no half-written file is
left, it says so in one line and exits 128 + the signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.tools import export_graph
from chronograph.tools.cli import main as chronograph

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_export_removes_the_half_written_file_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], signum: int) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"E{i}", "entityType": "t", "observations": ["x"]} for i in range(50)]}, actor="t")
    export = export_graph.export

    def interrupted(memory: Any, workspace: str, fmt: Any, as_of: Any, sink: Any, progress: Any = None) -> Any:
        sink("a first piece of the export\n")
        os.kill(os.getpid(), signum)
        return export(memory, workspace, fmt, as_of, sink, progress)

    monkeypatch.setattr(export_graph, "export", interrupted)
    before = signal.getsignal(signal.SIGTERM)
    code = chronograph(["export", "--store", str(tmp_path / "store"), "-o", str(tmp_path / "g.jsonl")])
    err = capsys.readouterr().err
    assert code == 128 + signum
    assert err.count("\n") == 1 and f"stopped by {signal.Signals(signum).name}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]  # neither g.jsonl nor its .partial
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_command_dies_by_the_signal_once_cleaned_up_so_a_shell_loop_stops(tmp_path: Path, signum: int) -> None:
    """Exiting 130 instead made bash take Ctrl-C as handled and run a loop's next command; and
    systemd counts an exit of 143, not a death by SIGTERM, as a failure."""
    fifo = tmp_path / "memory.jsonl"
    os.mkfifo(fifo)  # the import waits on it, opened for reading, until the signal comes
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CHRONOGRAPH_EMBEDDINGS": "off"}
    child = subprocess.Popen([sys.executable, "-m", "chronograph", "import", "--from", "official", str(fifo),
                              "--store", str(tmp_path / "store")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        for _ in range(200):  # until it has started (its first line is printed before it opens the file)
            if child.stdout is not None and child.stdout.readline():
                break
        time.sleep(0.3)
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == -signum
    assert f"stopped by {signal.Signals(signum).name}" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.jsonl"]
