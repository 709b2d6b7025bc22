"""`chronograph hooks claude-code`: the settings that run `context`, printed or merged in."""

from __future__ import annotations

import json
import os
import stat
from contextlib import nullcontext
from pathlib import Path

import pytest
from chronograph.tools.cli import main as cli
from support.fifo import never_waited_on


def test_the_entries_are_printed_for_session_start_and_each_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["hooks", "claude-code"]) == 0
    hooks = json.loads(capsys.readouterr().out)["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit"}
    command = hooks["SessionStart"][0]["hooks"][0]
    assert command["type"] == "command" and " -m chronograph context --client claude-code" in command["command"]


def test_write_merges_into_the_projects_settings_keeping_what_is_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}}
    settings.write_text(json.dumps(mine))
    assert cli(["hooks", "claude-code", "--write"]) == 0
    merged = json.loads(settings.read_text())
    assert merged["permissions"] == mine["permissions"]
    assert merged["hooks"]["SessionStart"][0] == mine["hooks"]["SessionStart"][0]
    assert len(merged["hooks"]["SessionStart"]) == 2 and len(merged["hooks"]["UserPromptSubmit"]) == 1
    assert json.loads((settings.parent / "settings.json.bak").read_text()) == mine
    before = settings.read_bytes()
    assert cli(["hooks", "claude-code", "--write"]) == 0  # a second run adds nothing
    assert settings.read_bytes() == before and "nothing to change" in capsys.readouterr().out


def test_write_creates_the_users_settings_with_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cli(["hooks", "claude-code", "--write", "--user"]) == 0
    assert "UserPromptSubmit" in json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]


@pytest.mark.parametrize("content", ["{not json", "[1]", '{"hooks": []}', '{"hooks": {"SessionStart": {}}}',
                                     "[" * 100_000 + "]" * 100_000, '{"limit": 1e400}', '{"x": 1, "x": 2}'])
def test_a_settings_file_it_cannot_read_is_refused_and_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], content: str) -> None:
    monkeypatch.chdir(tmp_path)
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(content)
    assert cli(["hooks", "claude-code", "--write"]) == 2
    assert settings.read_text() == content and not (settings.parent / "settings.json.bak").exists()
    assert "nothing was written" in capsys.readouterr().err


def test_writing_again_for_another_store_replaces_the_hooks_it_wrote_and_keeps_each_backup(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.mdb").write_bytes(b"")
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}}
    settings.write_text(json.dumps(mine))
    (settings.parent / "settings.json.bak").write_text("MY OLD BACKUP")
    assert cli(["hooks", "claude-code", "--write", "--store", "one", "--cache", "views"]) == 0
    assert cli(["hooks", "claude-code", "--write", "--store", "two", "--client-name", "other"]) == 0
    hooks = json.loads(settings.read_text())["hooks"]
    commands = [h["command"] for event in hooks.values() for g in event for h in g["hooks"]]
    assert len(commands) == 3 and "echo hi" in commands  # one hook an event is ours (--cache too), the user's stays
    assert all(str(tmp_path / "two") in c and "other" in c for c in commands if c != "echo hi")
    assert (settings.parent / "settings.json.bak").read_text() == "MY OLD BACKUP"
    assert json.loads((settings.parent / "settings.json.bak.1").read_text()) == mine


def test_hooks_for_a_store_that_does_not_exist_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(["hooks", "claude-code", "--write", "--store", "nowhere"]) == 2
    assert "there is no store at nowhere" in capsys.readouterr().err and not (tmp_path / ".claude").exists()


def test_a_hook_of_the_users_own_is_kept_and_ours_inside_their_group_is_not_doubled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(["hooks", "claude-code"]) == 0
    wanted = json.loads(capsys.readouterr().out)["hooks"]
    ours = {event: groups[0]["hooks"][0]["command"] for event, groups in wanted.items()}
    compound = "chronograph context --budget 200 && ~/bin/notify-start.sh"
    mine = {"hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"},
                                                          {"type": "command", "command": ours["SessionStart"]}]},
                         {"hooks": [{"type": "command", "command": compound}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": ours["UserPromptSubmit"]}]}]}}
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(mine))
    assert cli(["hooks", "claude-code", "--write"]) == 0
    assert "nothing to change" in capsys.readouterr().out and json.loads(settings.read_text()) == mine
    assert cli(["hooks", "claude-code", "--write", "--client-name", "other"]) == 0
    hooks = json.loads(settings.read_text())["hooks"]
    start = [h["command"] for g in hooks["SessionStart"] for h in g["hooks"]]
    assert start[:2] == ["echo hello", compound] and len(start) == 3 and "other" in start[2]
    assert hooks["SessionStart"][0]["matcher"] == "startup"


def test_write_refuses_a_claude_folder_linked_outside_the_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / ".claude").symlink_to(elsewhere)
    monkeypatch.chdir(project)
    assert cli(["hooks", "claude-code", "--write"]) == 2
    assert "lies outside" in capsys.readouterr().err and list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "folder", "link"])
def test_a_fifo_folder_or_link_where_the_backup_would_go_is_passed_over_never_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.chdir(tmp_path)
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text('{"a": 1}')
    victim = tmp_path / "victim.json"
    victim.write_text('{"victim": true}')
    taken = claude / "settings.json.bak"
    if kind == "folder":
        taken.mkdir()
    elif kind == "link":
        taken.symlink_to(victim)
    with never_waited_on(taken) if kind == "fifo" else nullcontext():
        assert cli(["hooks", "claude-code", "--write"]) == 0
    assert json.loads((claude / "settings.json.bak.1").read_text()) == {"a": 1}
    assert victim.read_text() == '{"victim": true}' and "hooks" in json.loads((claude / "settings.json").read_text())


def test_a_fifo_at_the_settings_is_refused_not_waited_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".claude").mkdir()
    with never_waited_on(tmp_path / ".claude" / "settings.json"):
        assert cli(["hooks", "claude-code", "--write"]) == 2
    assert "is not a regular file" in capsys.readouterr().err


def test_a_private_settings_file_and_its_backup_stay_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's settings may hold API keys in `env`: written back and copied at 0644 by the umask."""
    monkeypatch.chdir(tmp_path)
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {"API_KEY": "secret"}}))
    settings.chmod(0o600)
    old = os.umask(0o022)
    try:
        assert cli(["hooks", "claude-code", "--write"]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert stat.S_IMODE((settings.parent / "settings.json.bak").stat().st_mode) == 0o600


@pytest.mark.parametrize("case", ["a store", "a folder of files", "a file"])
def test_a_cache_that_context_would_refuse_is_refused_before_the_hooks_are_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """The hooks ran `context` at every session, which refused it on stderr and recalled nothing."""
    from chronograph.eventstore import LmdbLog  # noqa: PLC0415

    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    if case == "a store":
        LmdbLog(cache).close()
    elif case == "a file":
        cache.write_text("x")
    else:
        cache.mkdir()
        (cache / "notes.txt").write_text("mine")
    hooks = ["hooks", "claude-code", "--write", "--store", "postgresql://h/db", "--cache"]
    assert cli([*hooks, str(cache)]) == 2
    assert not (tmp_path / ".claude").exists()
    assert cli([*hooks, str(tmp_path / "new")]) == 0


def test_a_store_url_holding_its_password_is_not_written_into_the_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The project's settings file is often committed: the hooks' command carried the URL whole."""
    monkeypatch.chdir(tmp_path)
    for url in ("postgresql://ada:hookSECRET@h/db", "postgresql://ada@h/db?PASSWORD=hookSECRET",
                "postgresql://ada:hook/SECRET@h/db", "postgresql://ada:hook?SECRET@h/db",
                "postgresql://ada@h/db?sslpassword=hookSECRET", "postgresql://ada:2024/hookSECRET@h/db",
                "postgresql://a,b:hookSECRET@h/db", "postgresql://[::1/db?pass%77ord=hookSECRET"):
        assert cli(["hooks", "claude-code", "--write", "--store", url]) == 2
        assert "PGPASSWORD" in capsys.readouterr().err and not (tmp_path / ".claude").exists()
    assert cli(["hooks", "claude-code", "--write", "--store", "postgresql://ada@h/db"]) == 0
