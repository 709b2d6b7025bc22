"""Every path argument of every command and of every profile's tools, given every hostile path
(a store, its files, links into it, a cache of a database store, a dangling link, an existing
file, a dotfile, a folder...): afterwards every store and cache opens, verifies, and still holds
its events byte for byte, and no file outside was touched (issue 27's target). Slow: run with
-m slow (bench/reliability_report.py runs it and quotes the counts it prints)."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from contextlib import AsyncExitStack, redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.application.profiles import PROFILES
from chronograph.eventstore import LmdbLog
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from chronograph.tools.cli import main as cli
from mcp import Client
from support.postgres import database

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "export": (["export", "--store", "{store}", "--cache", "{cache}", "-o", "{out}"], ["--store", "--cache", "-o"]),
    "backup": (["backup", "--store", "{store}", "-o", "{out}", "--key-file", "{key}"], ["--store", "-o", "--key-file"]),
    "restore": (["restore", "{backup}", "--store", "{new}", "--key-file", "{key}"], ["{backup}", "--store",
                                                                                     "--key-file"]),
    "import": (["import", "{jsonl}", "--store", "{store}", "--cache", "{cache}"], ["{jsonl}", "--store", "--cache"]),
    "replay": (["replay", "--store", "{store}", "--cache", "{cache}", "--verify"], ["--store", "--cache"]),
    "audit": (["audit", "--store", "{store}", "--cache", "{cache}"], ["--store", "--cache"]),
    "forget": (["forget", "Nobody", "--reason", "fuzz", "--store", "{store}", "--cache", "{cache}"],
               ["--store", "--cache"]),
    "scrub": (["scrub", "--store", "{store}", "--cache", "{cache}"], ["--store", "--cache"]),
    "copy": (["copy", "--from", "{store}", "--to", "{new}"], ["--from", "--to"]),
}
"""Each command with sane arguments, and the slots (a flag, or a positional placeholder) to fuzz."""


def hostile(tmp: Path) -> list[str]:
    """The paths an attacker, a hostile repository or a careless operator would give."""
    victim, cache = tmp / "victim", tmp / "victim-cache"
    links = {"l-data": victim / "data.mdb", "l-lock": victim / "lock.mdb", "l-dir": victim,
             "l-cache": cache / "data.mdb", "dangling": tmp / "nowhere" / "file"}
    for name, aim in links.items():
        if not (tmp / name).is_symlink():
            (tmp / name).symlink_to(aim)
    return [str(p) for p in (
        victim, victim / "data.mdb", victim / "lock.mdb", victim / "sub", victim / "sub" / "x.md", victim / "x.md",
        tmp / "l-data", tmp / "l-lock", tmp / "l-dir", tmp / "l-dir" / "x.md", tmp / "l-cache", tmp / "dangling",
        cache, cache / "data.mdb", cache / "x.md", tmp / "existing.md", tmp / ".bashrc", tmp / "a-folder",
        tmp / "a-folder" / ".." / "victim" / "data.mdb",
    )] + ["", "-", "/dev/null", "~", "relative.md"]


def snapshot(tmp: Path) -> dict[str, Any]:
    """What must not change: every event of the victim store, the files outside, the cache's views."""
    with LmdbLog(tmp / "victim", readonly=True, create=False) as log, log.read() as reader:
        events = reader.stored(1, reader.head())
        damaged = list(reader.verify())
    files = {name: hashlib.sha256((tmp / name).read_bytes()).hexdigest() for name in ("existing.md", ".bashrc")}
    return {"events": events, "damaged": damaged, "files": files, "folders": (
        sorted(os.listdir(tmp / "victim")), sorted(os.listdir(tmp / "victim-cache")), (tmp / "a-folder").is_dir())}


def intact(tmp: Path, before: dict[str, Any], victim_url: str) -> None:
    after = snapshot(tmp)
    assert after["damaged"] == [] and after["files"] == before["files"] and after["folders"] == before["folders"]
    assert after["events"][:len(before["events"])] == before["events"]  # an import may add: nothing replaced
    assert run(["replay", "--store", str(tmp / "victim"), "--verify"]) == 0
    with Memory(victim_url, cache=tmp / "victim-cache") as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Cached"]  # type: ignore[attr-defined]
    assert not (tmp / "nowhere").exists()


def run(argv: list[str]) -> int:
    out, err = StringIO(), StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli(argv)
        except SystemExit as exit_:  # argparse: a usage error
            code = int(exit_.code or 0)
    assert "Traceback" not in err.getvalue(), (argv, err.getvalue())
    assert code in (0, 1, 2), (argv, code, err.getvalue())
    return code


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str]:
    """A victim store and a victim cache (of a database store), the work stores the commands use
    (a folder and a database), a good backup, a key, an import file, and the files outside; the
    working folder and the home (`~`, the per-user store and cache) inside the test's folder."""
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for variable in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "CHRONOGRAPH_STORE"):
        monkeypatch.delenv(variable, raising=False)
    with Memory(tmp_path / "victim", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": ["x"]}]},
                     actor="t")
    victim_url, work_url = database().log_url(), database().log_url()
    with Memory(victim_url, cache=tmp_path / "victim-cache") as memory:
        memory.write("create_entities", {"entities": [{"name": "Cached", "entityType": "p", "observations": []}]},
                     actor="t")
    for store, cache in ((str(tmp_path / "work"), None), (work_url, tmp_path / "work-cache")):
        with Memory(store, cache=cache, sync=False) as memory:
            memory.write("create_entities", {"entities": [{"name": "Bob", "entityType": "p", "observations": []}]},
                         actor="t")
    (tmp_path / "key").write_bytes(os.urandom(32))
    assert run(["backup", "--store", str(tmp_path / "work"), "-o", str(tmp_path / "good.chronograph"),
                "--key-file", str(tmp_path / "key")]) == 0
    (tmp_path / "in.jsonl").write_text(json.dumps({"type": "entity", "name": "Imported", "entityType": "t",
                                                   "observations": []}) + "\n")
    (tmp_path / "existing.md").write_text("mine\n")
    (tmp_path / ".bashrc").write_text("# mine\n")
    (tmp_path / "a-folder").mkdir()
    return tmp_path, victim_url, work_url


def test_every_path_argument_of_every_command_leaves_every_store_intact(scene: tuple[Path, str, str]) -> None:
    tmp, victim_url, work_url = scene
    values = hostile(tmp)
    before = snapshot(tmp)
    outcomes: Counter[str] = Counter()
    for store, cache in ((str(tmp / "work"), str(tmp / "work-cache")), (work_url, str(tmp / "work-cache"))):
        sane = {"{store}": store, "{cache}": cache, "{out}": str(tmp / "out" / "file.md"), "{key}": str(tmp / "key"),
                "{backup}": str(tmp / "good.chronograph"), "{new}": str(tmp / "new"), "{jsonl}": str(tmp / "in.jsonl")}
        (tmp / "out").mkdir(exist_ok=True)
        for template, slots in COMMANDS.values():
            for slot in slots:
                for value in values:
                    argv = [sane.get(a, a) for a in template]
                    at = template.index(slot) + (0 if slot.startswith("{") else 1)
                    argv[at] = value
                    code = run(argv)
                    outcomes[f"exit {code}"] += 1
                    for made in ("new", "out", "a-folder", "-", "relative.md"):  # what a command may make
                        _clear(tmp / made)  # legitimately, cleared for the next
        intact(tmp, before, victim_url)
    print(f"command path fuzz outcomes: {dict(outcomes)}")
    assert sum(outcomes.values()) >= len(values) * 2 * sum(len(s) for _, s in COMMANDS.values())


def _clear(folder: Path) -> None:
    import shutil

    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    if folder.name in ("out", "a-folder"):
        folder.mkdir()


async def test_every_path_argument_of_every_profile_s_tools_leaves_every_store_intact(
    scene: tuple[Path, str, str],
) -> None:
    tmp, victim_url, _ = scene
    values = hostile(tmp)
    relative = ["victim/data.mdb", "victim/lock.mdb", "victim/x.md", "l-data", "l-dir/x.md", "dangling", "../x.md",
                ".bashrc", "a-folder", "a-folder/../victim/data.mdb", "victim-cache/data.mdb", "l-cache"]
    (tmp / ".git").mkdir()  # the area is a project root too (n2n), adopted
    (tmp / ".mcp").mkdir()
    before = snapshot(tmp)
    outcomes: Counter[str] = Counter()
    async with AsyncExitStack() as stack:
        for profile in PROFILES:
            client = await stack.enter_async_context(Client(create_server(Settings(
                store=tmp / f"server-{profile}", profile=profile, export_dir=tmp, embeddings="off"))))
            for spec in (await client.list_tools()).tools:
                properties = spec.input_schema.get("properties", {})
                paths = [p for p in properties if any(w in p.lower() for w in ("path", "file", "dir", "root"))]
                for prop in paths:
                    for value in values + relative:
                        arguments: dict[str, Any] = {"projectPath": str(tmp), "format": "markdown",
                                                     "overwrite": True}
                        arguments = {k: v for k, v in arguments.items() if k in properties}
                        arguments[prop] = value
                        result = await client.call_tool(spec.name, arguments)
                        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                        assert "Traceback" not in text and "internal error" not in text.lower(), (spec.name, text)
                        outcomes["refused" if result.is_error else "answered"] += 1
                        _clear(tmp / "out")
    intact(tmp, before, victim_url)
    print(f"tool path fuzz outcomes: {dict(outcomes)}")
    assert outcomes["refused"] > 0
