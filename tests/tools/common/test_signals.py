"""SIGTERM stops a command as Ctrl-C does: its `finally` blocks run, so no half-written file is
left, it says so in one line and exits 128 + the signal."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.tools import export_graph
from chronograph.tools.cli import main as chronograph


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
