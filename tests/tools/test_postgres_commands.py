"""The command line on a PostgreSQL store: import, export, audit, replay, forget, backup and copy work
as on a store folder (each run in its own process, as an operator runs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.postgres import database

pytest.importorskip("psycopg")
pytestmark = pytest.mark.wire
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronograph", *args], capture_output=True, text=True,
                          timeout=120, env=ENV, cwd=ROOT)


def test_every_command_works_on_a_database_store(tmp_path: Path) -> None:
    url, cache = database().log_url(), str(tmp_path / "cache")
    memory_file = tmp_path / "memory.jsonl"
    memory_file.write_text("\n".join(json.dumps(line) for line in [
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["math", "tea"]},
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": ["cello"]},
        {"type": "relation", "from": "Ada", "to": "Bob", "relationType": "knows"}]) + "\n")
    imported = cli("import", str(memory_file), "--store", url, "--cache", cache)
    assert imported.returncode == 0 and "kept a seed of the views at position 3" in imported.stderr
    fresh = cli("replay", "--store", url, "--cache", str(tmp_path / "fresh"), "--verify")  # starts from the seed
    assert fresh.returncode == 0 and "position 3" in fresh.stdout
    rebuilt = cli("replay", "--store", url, "--cache", cache, "--rebuild")
    assert rebuilt.returncode == 0 and "kept a seed" not in rebuilt.stderr  # one at that position is kept
    exported = cli("export", "--store", url, "--cache", cache, "--format", "jsonl")
    assert exported.returncode == 0 and '"name": "Ada"' in exported.stdout.replace('":"', '": "')
    audit = cli("audit", "--store", url, "--cache", cache, "--json")
    assert audit.returncode == 0 and audit.stdout.count("entity_created") == 2
    assert cli("replay", "--store", url, "--cache", cache, "--verify").returncode == 0
    forgot = cli("forget", "Bob", "--reason", "asked", "--store", url, "--cache", cache)
    assert forgot.returncode == 0, forgot.stderr
    backup = tmp_path / "team.chronograph"
    assert cli("backup", "--store", url, "-o", str(backup)).returncode == 0
    assert cli("restore", str(backup), "--store", str(tmp_path / "restored")).returncode == 0
    back = database().log_url()
    copied = cli("copy", "--from", str(tmp_path / "restored"), "--to", back)
    assert copied.returncode == 0 and "identical" in copied.stdout
    graph = cli("export", "--store", back, "--cache", str(tmp_path / "cache-2"), "--format", "json")
    assert graph.returncode == 0 and "Ada" in graph.stdout and "Bob" not in graph.stdout


def test_every_command_given_a_cache_keeps_the_views_there_and_nowhere_else(tmp_path: Path) -> None:
    url, cache, home = database().log_url(), str(tmp_path / "cache"), tmp_path / "home"
    memory_file = tmp_path / "memory.jsonl"
    memory_file.write_text(json.dumps({"type": "entity", "name": "Ada", "entityType": "person",
                                       "observations": ["math"]}) + "\n")
    env = {**ENV, "XDG_CACHE_HOME": str(home)}  # the per-user cache: a copy there outlives a forget
    runs = [["import", str(memory_file)], ["suggest", "--json"], ["context", "--client", "t"], ["audit"],
            ["export"], ["replay", "--verify"], ["hooks", "claude-code"], ["forget", "Ada", "--reason", "asked"]]
    for words in runs:
        done = subprocess.run([sys.executable, "-m", "chronograph", *words, "--store", url, "--cache", cache],
                              capture_output=True, text=True, timeout=120, env=env, cwd=ROOT, input="{}")
        assert done.returncode == 0, (words, done.stderr)
        assert not home.exists() or not any(home.rglob("*.mdb")), words
        if words[0] == "hooks":
            assert f"--cache {Path(cache).resolve()}" in done.stdout


def test_restoring_into_a_database_says_how(tmp_path: Path) -> None:
    done = cli("restore", str(tmp_path / "x.chronograph"), "--store", database().log_url())
    assert done.returncode == 2 and "chronograph copy" in done.stderr


def test_a_database_backup_copies_the_log_into_a_folder_named_for_its_process_and_sweeps_killed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A killed backup left its copy of the whole log beside the output, where no `forget`
    reaches: the next backup into that folder removes it (not one of a live process)."""
    from chronograph.tools import backup  # noqa: PLC0415

    url = database().log_url()
    memory_file = tmp_path / "memory.jsonl"
    memory_file.write_text(json.dumps({"type": "entity", "name": "Ada", "entityType": "p", "observations": []}) + "\n")
    assert cli("import", str(memory_file), "--store", url, "--cache", str(tmp_path / "cache")).returncode == 0
    out = tmp_path / "out"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    killed, alive = out / f"{backup.SCRATCH}{gone}-k1ll3d00", out / f"{backup.SCRATCH}{os.getppid()}-l1v3"
    mine, elsewhere = out / f"{backup.SCRATCH}{gone}-notes", out / f".chronograph-backup-otherhost-{gone}-k1ll3d00"
    for scratch in (killed, alive, elsewhere):  # another machine's, in a shared folder: maybe alive there
        (scratch / "store").mkdir(parents=True)
        (scratch / "store" / "data.mdb").write_bytes(b"Ada's erased observations")
    (mine / "my-notes-store").mkdir(parents=True)  # a store of the user's, in a folder named like a scratch copy
    (mine / "my-notes-store" / "data.mdb").write_bytes(b"the user's memory")
    copied_into = []

    def write_backup(log: Any, output: Path, **options: Any) -> Any:
        copied_into.append(log.environment.path.parent.name)
        return real(log, output, **options)

    real = backup.write_backup
    monkeypatch.setattr(backup, "write_backup", write_backup)
    assert backup.main(["--store", url, "-o", str(out / "b.chronograph")]) == 0
    assert copied_into[0].startswith(f"{backup.SCRATCH}{os.getpid()}-")
    assert not killed.exists() and alive.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(["b.chronograph", alive.name, mine.name, elsewhere.name])


def test_copy_and_scrub_never_print_the_databases_password(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from urllib.parse import urlsplit, urlunsplit  # noqa: PLC0415

    from chronograph.eventstore import EntityCreated, LmdbLog, StreamWrite  # noqa: PLC0415
    from chronograph.tools import copy_store, scrub  # noqa: PLC0415

    with LmdbLog(tmp_path / "source") as source:
        source.append([StreamWrite("a", [EntityCreated(workspace="w", name="Ada", entity_type="t")])], actor="t")
    parts = urlsplit(database().log_url())  # the server trusts this user: any password is let in
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or "postgres"
    url = urlunsplit((parts.scheme, f"{user}:Hunter2Secret@{host}", parts.path, parts.query, ""))
    bad = url.replace(parts.query, "schema=bad-name")
    runs = [copy_store.main(["--from", str(tmp_path / "source"), "--to", url]),
            scrub.main(["--store", url, "--cache", str(tmp_path / "cache")]),
            copy_store.main(["--from", str(tmp_path / "source"), "--to", bad]),
            scrub.main(["--store", bad, "--cache", str(tmp_path / "cache")])]
    said = capsys.readouterr()
    assert runs == [0, 0, 2, 2], said
    assert "identical" in said.out and "scrubbed postgresql://" in said.out
    assert "Hunter2Secret" not in said.out + said.err
