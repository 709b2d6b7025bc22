"""`chronograph context`: the recall block for a client's hooks, which never breaks a session."""

from __future__ import annotations

import fcntl
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.tools.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]


def fill(store: Path, project: Path | None = None) -> None:
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Billing service", "entityType": "component", "observations": ["retries failed charges twice"]},
            {"name": "Ada Lovelace", "entityType": "person", "observations": ["reviews the billing code"]}]},
            actor="claude-code")
        memory.write("update_context", {"activeTask": "fix the billing retries"}, actor="claude-code")
        memory.write("add_observations", {"observations": [
            {"entityName": "Billing service", "contents": ["moved to the new queue"]}]}, actor="alice")
        if project is not None:
            from chronograph.application.surfaces.projectroot import project_workspace

            workspace = project_workspace("test", str(project), str(project))
            memory.write("create_entities", {"workspace": workspace, "entities": [
                {"name": "ProjectOnly", "entityType": "module", "observations": ["lives in this repository"]}]},
                actor="claude-code")


def context(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: Path, *args: str,
            stdin: bytes | str = b"") -> tuple[int, str, str]:
    raw = stdin.encode() if isinstance(stdin, str) else stdin
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    code = cli(["context", "--store", str(store), *args])
    out, err = capsys.readouterr()
    return code, out, err


def hook(event: str, cwd: Path, prompt: str | None = None) -> str:
    return json.dumps({"session_id": "s1", "hook_event_name": event, "cwd": str(cwd),
                       **({"prompt": prompt} if prompt is not None else {})})


def test_a_session_start_prints_the_context_the_entities_and_what_others_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path / "store")
    code, out, err = context(monkeypatch, capsys, tmp_path / "store", "--client", "claude-code",
                             stdin=hook("SessionStart", tmp_path))
    assert (code, err) == (0, "")
    assert "fix the billing retries" in out and "Billing service" in out
    assert "## Changed since your last session" in out and "alice" in out


def test_a_prompt_prints_only_the_entities_it_names_and_nothing_when_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path / "store")
    code, out, err = context(monkeypatch, capsys, tmp_path / "store",
                             stdin=hook("UserPromptSubmit", tmp_path, "What does Ada Lovelace think?"))
    assert code == 0 and "Ada Lovelace" in out and "Billing service" not in out and "## Context" not in out
    code, out, err = context(monkeypatch, capsys, tmp_path / "store",
                             stdin=hook("UserPromptSubmit", tmp_path, "tell me a joke about cats"))
    assert (code, out, err) == (0, "", "")


def test_the_project_is_found_from_the_hooks_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "repo"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\n")
    fill(tmp_path / "store", project)
    code, out, _ = context(monkeypatch, capsys, tmp_path / "store", stdin=hook("SessionStart", project / "src"))
    assert code == 0 and "ProjectOnly" in out and "Billing service" not in out
    code, out, _ = context(monkeypatch, capsys, tmp_path / "store", "--project", str(project))
    assert "ProjectOnly" in out


def test_an_imported_n2n_project_is_found_from_its_folder_though_the_import_wrote_nothing_into_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "shop"
    (project / ".mcp").mkdir(parents=True)
    (project / "src").mkdir()
    (project / ".mcp" / "memory.json").write_text(json.dumps({"entities": [
        {"name": "Checkout", "entityType": "component", "observations": ["fix billing"]}], "relations": []}))
    fill(tmp_path / "store")
    assert cli(["import", "--store", str(tmp_path / "store"), str(project)]) == 0
    assert not (project / ".mcp" / "chronograph.json").exists()
    for args in (["--project", str(project)], ["--project", str(project / "src")]):
        code, out, _ = context(monkeypatch, capsys, tmp_path / "store", *args)
        assert code == 0 and "Checkout" in out and "Billing service" not in out
    code, out, _ = context(monkeypatch, capsys, tmp_path / "store", stdin=hook("SessionStart", project / "src"))
    assert "Checkout" in out
    other = tmp_path / "other"
    (other / ".mcp").mkdir(parents=True)
    (other / ".mcp" / "memory.json").write_text('{"entities": [], "relations": []}')  # never imported
    code, out, _ = context(monkeypatch, capsys, tmp_path / "store", "--project", str(other))
    assert "Billing service" in out  # the default workspace, as for any folder without a project's memory


def test_a_misspelt_workspace_recalls_nothing_and_says_which_there_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path / "store")
    code, out, err = context(monkeypatch, capsys, tmp_path / "store", "--workspace", "defualt")
    assert (code, out) == (0, "")
    assert err == "chronograph context: nothing recalled: there is no workspace 'defualt' in this store; the " \
                  "workspaces are: 'default'\n"


@pytest.mark.parametrize("case", ["no store", "damaged store", "garbage on stdin", "not an object",
                                  "store being replaced"])
def test_every_failure_exits_0_with_nothing_on_stdout_and_one_line_on_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], case: str) -> None:
    store = tmp_path / "store"
    stdin = hook("SessionStart", tmp_path)
    held = None
    if case != "no store":
        fill(store)
    if case == "damaged store":
        (store / "data.mdb").write_bytes(b"\x00garbage" * 512)
    elif case == "garbage on stdin":
        stdin = "{not json"
    elif case == "not an object":
        stdin = "[1, 2]"
    elif case == "store being replaced":
        held = os.open(store / "lock.mdb", os.O_RDWR)
        fcntl.flock(held, fcntl.LOCK_EX)
    try:
        code, out, err = context(monkeypatch, capsys, store, stdin=stdin)
    finally:
        if held is not None:
            os.close(held)
    assert (code, out) == (0, "")
    assert err.count("\n") == 1 and err.startswith("chronograph context: nothing recalled: ")
    assert not (case == "no store" and store.exists())  # nothing was created


@pytest.mark.parametrize("timeout", ["inf", "nan", "1e300", "-1", "0"])
def test_a_timeout_of_no_length_or_past_a_day_is_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], timeout: str) -> None:
    fill(tmp_path / "store")
    code, out, err = context(monkeypatch, capsys, tmp_path / "store", "--timeout", timeout,
                             stdin=hook("SessionStart", tmp_path))
    assert (code, err) == (0, "") and "Billing service" in out


def test_a_timeout_that_passes_at_once_recalls_nothing_and_exits_0(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path / "store")
    code, out, err = context(monkeypatch, capsys, tmp_path / "store", "--timeout", "0.0000001",
                             stdin=hook("SessionStart", tmp_path))
    assert (code, out, err) == (0, "", "chronograph context: nothing recalled: it took longer than --timeout\n")


@pytest.mark.wire
def test_it_reads_from_a_cold_process_while_a_server_holds_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    fill(store)
    with Memory(store):  # this process holds the store, as a running server would
        done = subprocess.run([sys.executable, "-m", "chronograph", "context", "--store", str(store),
                               "--budget", "200"], input=hook("SessionStart", tmp_path), capture_output=True,
                              text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert "Billing service" in done.stdout
