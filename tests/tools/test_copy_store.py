"""`chronograph copy`: what it says when only what is derived from the copied log fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.eventstore import StorageFullError
from chronograph.tools import copy_store


@pytest.fixture
def source(tmp_path: Path) -> Path:
    with Memory(tmp_path / "source") as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"e{i}", "entityType": "t", "observations": [f"fact {i}"]} for i in range(30)]}, actor="t")
    return tmp_path / "source"


def test_a_copy_whose_search_images_cannot_be_kept_is_a_copy_and_says_so(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """It said "nothing was written" (exit 2) after the log was copied and checked whole."""
    def full(self: Memory) -> int:
        raise StorageFullError(f"the disk holding {tmp_path / 'copy'} is full; nothing was written")

    monkeypatch.setattr(Memory, "prepare_search", full)
    assert copy_store.main(["--from", str(source), "--to", str(tmp_path / "copy")]) == 0
    said = capsys.readouterr()
    assert "checked event for event: identical" in said.out
    assert "the search images were not kept" in said.err and "the first search builds them" in said.err
    with Memory(tmp_path / "copy", readonly=True) as copy:
        assert len(copy.read("read_graph", {}).entities) == 30  # type: ignore[attr-defined]


def test_a_copy_whose_views_cannot_be_built_says_its_log_was_copied_and_checked(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def full(*_: object, **__: object) -> Memory:
        raise StorageFullError(f"the disk holding {tmp_path / 'copy'} is full; nothing was written")

    monkeypatch.setattr(copy_store, "Memory", full)
    assert copy_store.main(["--from", str(source), "--to", str(tmp_path / "copy")]) == 2
    said = capsys.readouterr().err
    assert said.startswith("chronograph copy: copied 30 events (30 in all) from ")
    assert "checked event for event: identical; but its views could not be built: the disk holding" in said
    assert f"`chronograph replay --rebuild --store {tmp_path / 'copy'}` builds them" in said


def test_a_copy_that_stops_on_a_full_disk_says_what_it_copied_stays_and_a_second_run_goes_on(
        source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from chronograph.eventstore import copying

    real = copying.copy_log

    def stopped(src: object, dst: object, *_: object, **__: object) -> int:
        raise StorageFullError(f"the disk holding {tmp_path / 'copy'} is full; nothing was written")

    monkeypatch.setattr(copy_store, "copy_log", stopped)
    assert copy_store.main(["--from", str(source), "--to", str(tmp_path / "copy")]) == 2
    said = capsys.readouterr().err
    assert said.startswith("chronograph copy: the copy stopped: the disk holding")
    assert "(what it copied stays: run it again once that is remedied, and it goes on from there)" in said
    monkeypatch.setattr(copy_store, "copy_log", real)
    assert copy_store.main(["--from", str(source), "--to", str(tmp_path / "copy")]) == 0
