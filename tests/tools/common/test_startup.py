"""What a command that makes or remakes a store leaves for the first spawn after it: the search
images and the SDK's opening answers, so that its first session is served without the SDK and
its first search loads the index instead of indexing every entity."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.eventstore.keys import digest
from chronograph.projections.search.indexes import SearchIndex

pytestmark = pytest.mark.wire
ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "chronograph", *args], capture_output=True, text=True,
                          timeout=300, env=ENV, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]


def first_session(store: Path, *extra: str) -> tuple[dict[str, Any], str]:
    """The first search's result in a fresh server's handshake session, and what the server imported."""
    wire = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "desk", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "search_nodes", "arguments": {"query": "thing 42"}}}]
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "chronograph", "--store", str(store),
                           "--embeddings", "off", *extra],
                          input=b"".join(json.dumps(m).encode() + b"\n" for m in wire),
                          capture_output=True, env=ENV, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.decode().splitlines())}
    return replies[2]["result"], done.stderr.decode()


def sdk_loaded(imports: str) -> bool:
    return re.search(r"\| +mcp\.server\.mcpserver$", imports, re.MULTILINE) is not None


def has_image(store: Path) -> bool:
    with Memory(store, readonly=True) as memory, memory.views.env.read() as txn:
        db = memory.views.env.open_db(SearchIndex.NAME, create=False)
        return txn.get(digest(b"default"), db=db) is not None


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imported")
    graph = root / "memory.jsonl"
    graph.write_text("".join(json.dumps({"type": "entity", "name": f"thing {i}", "entityType": "thing",
                                         "observations": [f"note {i}"]}) + "\n" for i in range(100)))
    cli("import", str(graph), "--store", str(root / "store"))
    return root / "store"


def made(how: str, imported: Path, tmp_path: Path) -> Path:
    if how == "import":
        return imported
    if how == "copy":
        cli("copy", "--from", str(imported), "--to", str(tmp_path / "copy"))
        return tmp_path / "copy"
    if how == "restore":
        cli("backup", "--store", str(imported), "-o", str(tmp_path / "memory.chronograph"))
        cli("restore", str(tmp_path / "memory.chronograph"), "--store", str(tmp_path / "restored"))
        return tmp_path / "restored"
    rebuilt = tmp_path / "rebuilt"
    cli("copy", "--from", str(imported), "--to", str(rebuilt))
    cli("replay", "--store", str(rebuilt), "--rebuild")
    return rebuilt


@pytest.mark.parametrize("how", ["import", "copy", "restore", "rebuild"])
def test_the_first_session_after_a_command_that_makes_a_store_needs_no_sdk_and_no_indexing(
    how: str, imported: Path, tmp_path: Path
) -> None:
    store = made(how, imported, tmp_path)
    assert has_image(store)
    result, imports = first_session(store)
    assert not sdk_loaded(imports)
    assert result["isError"] is False
    assert {e["name"] for e in result["structuredContent"]["entities"]} == {"thing 42"}


def test_the_official_profile_is_kept_ready_too(imported: Path) -> None:
    result, imports = first_session(imported, "--profile", "official")
    assert not sdk_loaded(imports)
    assert [e["name"] for e in result["structuredContent"]["entities"]] == ["thing 42"]


def test_a_failure_to_keep_the_answers_leaves_the_command_successful(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from chronograph.server import priming
    from chronograph.tools.common.startup import keep_startup_state

    def broken(memory: Memory) -> int:
        raise OSError("no pipes left")

    monkeypatch.setattr(priming, "prime", broken)
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="t")
        assert keep_startup_state(memory) == 1  # the image is saved all the same
    assert "were not kept" in capsys.readouterr().err


def test_search_images_that_cannot_be_kept_leave_the_command_successful(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A full temporary folder (where an image is spooled) or disk: the store itself is whole."""
    from chronograph.tools.common.startup import keep_startup_state

    def full(self: Memory) -> int:
        raise OSError(28, "No space left on device")

    with Memory(tmp_path / "store") as memory:
        monkeypatch.setattr(Memory, "prepare_search", full)
        assert keep_startup_state(memory) == 0
    said = capsys.readouterr().err
    assert "the search images were not kept ([Errno 28] No space left on device); the first search builds them" in said
