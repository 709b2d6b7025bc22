"""chronograph forget / scrub: an entity erased from the command line, with the audit saying who
and why, `replay --verify` passing after, and clear refusals that write nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from chronograph.application import PROFILES, Memory
from chronograph.application.surfaces.projectfiles import ProjectFiles
from chronograph.application.surfaces.projectroot import workspace_name
from chronograph.tools import forget, replay, scrub

SECRET = "Quentin Marsh-Ozymandias"
N2N = PROFILES["n2n"].tools


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with Memory(path, sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": SECRET, "entityType": "person", "observations": ["secret hideout 42b"]},
            {"name": "Bob", "entityType": "person", "observations": []}]}, actor="claude")
        memory.write("create_relations", {"relations": [{"from": "Bob", "to": SECRET, "relationType": "knows"}]},
                     actor="claude")
    return path


def in_any_file(store: Path, text: str) -> bool:
    return any(text.encode() in file.read_bytes() for file in store.iterdir())


def test_forget_erases_the_entity_and_records_who_asked_and_why(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert forget.main(["--store", str(store), SECRET, "--reason", "GDPR request 17", "--as", "dpo",
                        "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["entities"], out["relations"], out["scrubbed"]) == (1, 1, True)
    assert not in_any_file(store, SECRET) and not in_any_file(store, "hideout")
    with Memory(store) as memory:
        record = memory.read("get_audit_log", {"eventTypes": ["entity_forgotten"]}).events[0]
    assert (record.actor, record.data["reason"]) == ("dpo", "GDPR request 17")


def test_replay_verify_passes_after_a_forget(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert forget.main(["--store", str(store), SECRET, "--reason", "asked"]) == 0
    assert replay.main(["--store", str(store), "--verify"]) == 0
    assert "erased 1 entity" in capsys.readouterr().out


def test_forgetting_an_unknown_name_says_so_and_writes_nothing(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (store / "data.mdb").read_bytes()
    assert forget.main(["--store", str(store), "Nobody", "--reason", "asked"]) == 1
    assert "No entity named 'Nobody' ever existed" in capsys.readouterr().err
    assert (store / "data.mdb").read_bytes() == before


def test_forget_without_a_reason_or_a_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        forget.main(["--store", str(tmp_path / "none"), SECRET])
    assert exited.value.code == 2 and "--reason" in capsys.readouterr().err
    assert forget.main(["--store", str(tmp_path / "none"), SECRET, "--reason", "asked"]) == 2
    assert "there is no store" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_scrub_overwrites_what_deleted_data_left(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(store, sync=False) as memory:
        memory.write("delete_observations", {"deletions": [
            {"entityName": SECRET, "observations": ["secret hideout 42b"]}]}, actor="claude")
    assert scrub.main(["--store", str(store)]) == 0
    assert "overwritten" in capsys.readouterr().out
    with Memory(store) as memory:  # the store reads and writes as before
        memory.write("add_observations", {"observations": [{"entityName": "Bob", "contents": ["tea"]}]},
                     actor="claude")
        assert memory.read("open_nodes", {"names": ["Bob"]}).entities[0].observations == ["tea"]


def test_scrub_takes_out_a_type_an_earlier_forget_left_as_a_separator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forget before this version repacked only the tables whose separators held a name: a type
    only the forgotten entity had stayed as a branch key of the views' `workspaces` table."""
    from chronograph.eventstore.lmdb.scrub import branch_keys, read_free_list
    from chronograph.projections.live.views import Views
    from chronograph.projections.tables import TABLES, table_names

    store = tmp_path / "store"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"P{i}", "entityType": f"zqtype-{i:04d}-padding-to-fill-the-page", "observations": []}
            for i in range(300)]}, actor="claude")
        name = table_names(memory.views.tables.generation)[TABLES.index("workspaces")].encode()
        data = (store / "data.mdb").read_bytes()
        marker = next(key[6:] for key in branch_keys(data, read_free_list(data), name) if b"zqtype-" in key)
        marker = marker.partition(b"-padding")[0]
        monkeypatch.setattr(Views, "repack", lambda self: None)  # as the earlier version did
        memory.write("forget_entity", {"name": f"P{int(marker[-4:])}", "reason": "asked"}, actor="claude")
    assert marker in (store / "data.mdb").read_bytes()
    monkeypatch.undo()
    assert scrub.main(["--store", str(store)]) == 0
    assert marker not in (store / "data.mdb").read_bytes()


def test_a_forget_whose_scrub_never_finished_is_scrubbed_at_the_next_writable_open(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from chronograph.eventstore.lmdb.env import LmdbEnv
    from chronograph.eventstore.log import Scrubbed

    real = LmdbEnv.scrub
    monkeypatch.setattr(LmdbEnv, "scrub", lambda *args, **kwargs: Scrubbed(0, 1))  # the process dies here
    assert forget.main(["--store", str(store), SECRET, "--reason", "asked", "--json"]) == 1  # said: not scrubbed
    assert "the next process that opens the store to write" in json.loads(capsys.readouterr().out)["message"]
    assert in_any_file(store, SECRET)  # in the free pages the erasure left
    monkeypatch.setattr(LmdbEnv, "scrub", real)
    with Memory(store, readonly=True) as memory, memory.log.read() as log:  # a read-only open cannot scrub
        assert (log.erasures(), log.scrubbed_through()) == (1, 0)
    assert in_any_file(store, SECRET)
    with Memory(store) as memory, memory.log.read() as log:
        assert (log.erasures(), log.scrubbed_through()) == (1, 1)
    assert not in_any_file(store, SECRET) and not in_any_file(store, "hideout")
    before = (store / "data.mdb").stat().st_mtime_ns
    Memory(store).close()  # nothing pending: the next open scrubs nothing
    assert (store / "data.mdb").stat().st_mtime_ns == before


def test_a_forget_deletes_the_index_a_killed_import_left_in_the_temporary_folder(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tempfile.tempdir = None  # read $TMPDIR again
    try:
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout.strip()  # a process that has ended
        left = tmp_path / "tmp" / f"chronograph-import-{gone}-x1"
        left.mkdir()
        (left / "index.sqlite").write_text(SECRET)
        alive = tmp_path / "tmp" / f"chronograph-import-{os.getppid()}-x2"  # an import running beside it
        alive.mkdir()
        assert forget.main(["--store", str(store), SECRET, "--reason", "asked"]) == 0
        assert not left.exists() and alive.exists()
    finally:
        tempfile.tempdir = None


def test_a_forget_removes_what_a_killed_restore_left_and_names_the_stores_set_aside(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    staged = store.parent / f".{store.name}.restoring-{gone}-ab12"  # a restore killed with its two copies
    shutil.copytree(store, staged / "extracted")
    replaced = store.parent / f"{store.name}.replaced-1"  # what restore --replace set aside
    shutil.copytree(store, replaced)
    assert forget.main(["--store", str(store), SECRET, "--reason", "asked"]) == 0
    assert not staged.exists() and in_any_file(replaced, SECRET)
    assert f"{replaced} (set aside by restore --replace) still hold what they held" in capsys.readouterr().err


def test_a_restore_killed_after_its_exchange_leaves_the_replaced_store_which_a_forget_sets_aside(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    staged = store.parent / f".{store.name}.restoring-{gone}-cd34"
    shutil.copytree(store, staged / "store")  # the store the exchange took out of its place
    for odd in ("2147483648", "\u00b3", "12"):  # names no sweep may trip on (12: not a process of ours to judge)
        (store.parent / f".{store.name}.restoring-{odd}-x").mkdir()
    assert forget.main(["--store", str(store), SECRET, "--reason", "asked"]) == 0
    rescued = store.parent / f"{store.name}.replaced-1"
    assert not staged.exists() and in_any_file(rescued, SECRET)  # kept, not swept away
    assert f"{rescued} (set aside by restore --replace)" in capsys.readouterr().err


def test_a_restore_killed_while_it_built_leaves_nothing_set_aside(store: Path, capsys: pytest.CaptureFixture[str]
                                                                    ) -> None:
    """What a restore was building is never the user's store: a sweep set it aside as
    `.replaced-N`, which says 'the store that was there before'."""
    import shutil
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    staged = store.parent / f".{store.name}.restoring-{gone}-ef56"
    shutil.copytree(store, staged / "built")
    assert forget.main(["--store", str(store), SECRET, "--reason", "asked"]) == 0
    assert not staged.exists() and not list(store.parent.glob(f"{store.name}.replaced-*"))
    assert "set aside by restore --replace" not in capsys.readouterr().err


def test_a_copy_is_not_scrubbed_again_at_its_first_open(store: Path, tmp_path: Path) -> None:
    from chronograph.tools import copy_store

    assert forget.main(["--store", str(store), SECRET, "--reason", "asked"]) == 0
    assert copy_store.main(["--from", str(store), "--to", str(tmp_path / "copy")]) == 0
    with Memory(tmp_path / "copy", readonly=True) as memory, memory.log.read() as log:
        assert (log.erasures(), log.scrubbed_through()) == (1, 1)


def test_a_forget_beside_a_name_of_many_relations_keeps_every_one_of_them(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memory(store, sync=False) as memory:  # Bob's outgoing ends: a tree of duplicates of their own
        memory.write("create_entities", {"entities": [{"name": f"E{i}", "entityType": "t", "observations": []}
                                                      for i in range(600)]}, actor="claude")
        memory.write("create_relations", {"relations": [{"from": "Bob", "to": f"E{i}", "relationType": "knows"}
                                                        for i in range(600)]}, actor="claude")
    assert forget.main(["--store", str(store), SECRET, "--reason", "asked"]) == 0
    assert not in_any_file(store, SECRET)
    assert replay.main(["--store", str(store), "--verify"]) == 0
    with Memory(store) as memory:
        assert len(memory.read("open_nodes", {"names": ["Bob"]}).relations) == 600  # type: ignore[attr-defined]


def served_project(store: Path, root: Path) -> str:
    """A session of a server that kept the n2n project at `root`'s files, which wrote the secret
    into it; the project's workspace."""
    (root / ".git").mkdir(parents=True)
    with Memory(store, sync=False) as memory:
        ProjectFiles(always=True).install(memory)
        project = {"projectPath": str(root), "confirmNewProjectRoot": str(root)}
        memory.write(N2N["n2n_add_entities"], {**project, "entities": [
            {"name": SECRET, "entityType": "person", "observations": ["secret hideout 42b"]},
            {"name": "Bob", "entityType": "person", "observations": []}]}, actor="agent")
    assert SECRET in (root / ".mcp" / "memory.json").read_text()
    return workspace_name(root)


def test_forget_rewrites_the_file_of_an_n2n_project_whose_files_a_server_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, root = tmp_path / "store", tmp_path / "project"
    workspace = served_project(store, root)
    assert forget.main(["--store", str(store), SECRET, "--workspace", workspace, "--reason", "asked"]) == 0
    said = capsys.readouterr()
    assert "rewritten without it" in said.out and "was not rewritten" not in said.err
    text = (root / ".mcp" / "memory.json").read_text()
    assert SECRET not in text and "hideout" not in text and "Bob" in text


def test_forget_folds_what_an_n2n_project_s_file_gained_before_it_rewrites_it(tmp_path: Path) -> None:
    """Rewritten from the log alone, the file would lose an edit by hand, or a teammate's pull."""
    store, root = tmp_path / "store", tmp_path / "project"
    workspace = served_project(store, root)
    mirror = root / ".mcp" / "memory.json"
    graph = json.loads(mirror.read_text())
    graph["entities"].append({"name": "By Hand", "entityType": "note", "observations": ["typed in"]})
    mirror.write_text(json.dumps(graph))
    assert forget.main(["--store", str(store), SECRET, "--workspace", workspace, "--reason", "asked"]) == 0
    assert [e["name"] for e in json.loads(mirror.read_text())["entities"]] == ["Bob", "By Hand"]
    with Memory(store) as memory:
        assert memory.read("open_nodes", {"names": ["By Hand"], "workspace": workspace}).entities[0].observations == [
            "typed in"]


def test_forget_says_when_it_cannot_rewrite_an_n2n_project_s_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, root = tmp_path / "store", tmp_path / "project"
    workspace = served_project(store, root)
    root.rename(tmp_path / "moved")  # no longer where the store saw it
    assert forget.main(["--store", str(store), SECRET, "--workspace", workspace, "--reason", "asked"]) == 0
    assert "is an n2n project's workspace, and its .mcp/memory.json was not rewritten" in capsys.readouterr().err


def test_forget_is_not_refused_by_an_n2n_project_file_it_cannot_fold(tmp_path: Path) -> None:
    """A merge conflict left in the file refuses an n2n call, never an erasure."""
    store, root = tmp_path / "store", tmp_path / "project"
    workspace = served_project(store, root)
    mirror = root / ".mcp" / "memory.json"
    mirror.write_text("<<<<<<< ours\n" + mirror.read_text())
    assert forget.main(["--store", str(store), SECRET, "--workspace", workspace, "--reason", "asked"]) == 0
    assert SECRET not in mirror.read_text()
