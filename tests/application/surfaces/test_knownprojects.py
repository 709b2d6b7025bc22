"""Where the projects whose files are kept are, remembered beside the views: a later process
asked to change a project's workspace by its name alone finds the files, and a forget's answer
says what it did with them, or why it could not. And what those files held when the store last
wrote them: a process killed between a change and its mirror leaves them behind the log, and
the next one rewrites them instead of folding back what the log deleted or erased."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import PROFILES, Memory
from chronograph.application.engine import service
from chronograph.application.surfaces import knownprojects, projectbase, projectfiles, projectio
from chronograph.application.surfaces.projectroot import workspace_name

N2N = PROFILES["n2n"].tools


Store = Path | dict[str, Any]
"""A store folder, or `backend_store`'s keywords (a PostgreSQL log and its cache)."""


def opened(store: Store) -> Memory:
    if isinstance(store, dict):
        return Memory(store["store"], cache=store.get("cache"), sync=False)
    return Memory(store, sync=False)


def kept(memory: Memory, *, always: bool) -> None:
    files = projectfiles.ProjectFiles(always=always)
    files.install(memory)


def served(store: Store, root: Path, *, always: bool = True, asks: bool = False) -> None:
    """A session of an n2n server that wrote a secret into the project at `root` (adopted by it;
    its marker asking for the project's files when `asks`)."""
    (root / ".git").mkdir(parents=True)
    with opened(store) as memory:
        kept(memory, always=always)
        arguments: dict[str, Any] = {"projectPath": str(root), "confirmNewProjectRoot": str(root)}
        memory.call(N2N["n2n_read_graph"], arguments, actor="agent")  # adopts the root
        if asks:
            marker = root / ".mcp" / "chronograph.json"
            marker.write_text(json.dumps({**json.loads(marker.read_text()), "projectFiles": True}))
        memory.write(N2N["n2n_add_entities"], {**arguments, "entities": [
            {"name": "Zqx Secret", "entityType": "PERSON", "observations": ["zqx phone"]}]}, actor="agent")
    assert "Zqx Secret" in (root / ".mcp" / "memory.json").read_text()


def forget(store: Store, root: Path, *, always: bool = True) -> Any:
    """forget_entity in the project's workspace, in a new process that keeps project files."""
    with opened(store) as memory:
        kept(memory, always=always)
        return memory.write("forget_entity", {"workspace": workspace_name(root), "name": "Zqx Secret",
                                              "reason": "asked"}, actor="dpo").output


def test_a_project_s_root_is_recorded_by_the_process_that_served_it_and_read_back_by_the_next(tmp_path: Path) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root)
    with Memory(tmp_path / "store", sync=False) as memory:
        assert knownprojects.recall(memory, workspace_name(root)) == root
        assert knownprojects.recall(memory, "n2n:other:0123456789abcdef") is None


def test_a_project_whose_marker_asks_for_its_files_has_them_rewritten_by_a_forget_in_a_later_process(
        tmp_path: Path) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root, always=False, asks=True)
    out = forget(tmp_path / "store", root, always=False)
    assert out.elsewhere == [] and "zqx" not in (root / ".mcp" / "memory.json").read_text().lower()


def test_a_project_whose_marker_no_longer_asks_for_its_files_keeps_them_and_the_forget_says_so(
        tmp_path: Path) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root, always=False, asks=True)
    marker = root / ".mcp" / "chronograph.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "projectFiles": False}))
    [note] = forget(tmp_path / "store", root, always=False).elsewhere
    assert "was not rewritten" in note and "Zqx Secret" in (root / ".mcp" / "memory.json").read_text()


def test_a_forget_whose_project_file_cannot_be_written_answers_with_the_erasure_done_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root)
    monkeypatch.setattr(projectio, "FILE_LIMIT", 10)
    out = forget(tmp_path / "store", root)
    assert out.scrubbed and out.entities == 1
    [note] = out.elsewhere
    assert "was not rewritten" in note and "could not rewrite them" in note and "past the 10" in note


def killed(store: Store, root: Path, tool: str, arguments: dict[str, Any]) -> None:
    """`tool` on the project's workspace, committed by a process killed before it rewrote the
    project's files: the change is in the log, the files are as the last mirror left them."""
    with opened(store) as memory:  # no hook runs after the commit: the files stay behind
        memory.write(tool, {"workspace": workspace_name(root), **arguments}, actor="agent")


def next_session(store: Store, root: Path) -> dict[str, Any]:
    """The next session's first n2n call on the project (which folds its files, if it should)."""
    with opened(store) as memory:
        kept(memory, always=True)
        return memory.read(N2N["n2n_read_graph"], {"projectPath": str(root)}).reply


def names(graph: dict[str, Any]) -> list[str]:
    return sorted(e["name"] for e in graph["graph"]["entities"])


def test_a_forget_killed_before_the_project_file_was_rewritten_is_not_folded_back_by_the_next_session(
        tmp_path: Path) -> None:
    """The file still holds what was erased; the log no longer knows the name, so a fold would
    create the entity again, erased observation and all, as the actor "project file"."""
    root = tmp_path / "project"
    served(tmp_path / "store", root)
    killed(tmp_path / "store", root, "forget_entity", {"name": "Zqx Secret", "reason": "asked"})
    assert "zqx phone" in (root / ".mcp" / "memory.json").read_text()
    assert names(next_session(tmp_path / "store", root)) == []
    assert "zqx" not in (root / ".mcp" / "memory.json").read_text().lower()  # rewritten from the log
    assert names(next_session(tmp_path / "store", root)) == []


@pytest.mark.parametrize(("tool", "arguments", "after"), [
    ("rename_entity", {"name": "Old", "newName": "New"}, ["Keep", "New"]),
    ("merge_entities", {"target": "Keep", "sources": ["Old"]}, ["Keep"]),
    ("delete_entities", {"entityNames": ["Old"]}, ["Keep"]),
    ("delete_observations", {"deletions": [{"entityName": "Old", "observations": ["a fact"]}]}, ["Keep", "Old"]),
    ("delete_relations", {"relations": [{"from": "Old", "to": "Keep", "relationType": "knows"}]}, ["Keep", "Old"]),
])
def test_a_change_killed_before_the_mirror_parks_no_conflict_at_the_next_session(
        tmp_path: Path, tool: str, arguments: dict[str, Any], after: list[str]) -> None:
    """The stale file holds what the change took away: folded, each was parked as a conflict
    ("The project file holds entity 'Old', which this memory deleted")."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    with Memory(tmp_path / "store", sync=False) as memory:
        kept(memory, always=True)
        project = {"projectPath": str(root), "confirmNewProjectRoot": str(root)}
        memory.write(N2N["n2n_add_entities"], {**project, "entities": [
            {"name": "Old", "entityType": "PERSON", "observations": ["a fact"]},
            {"name": "Keep", "entityType": "PERSON", "observations": ["k"]}]}, actor="agent")
        memory.write(N2N["n2n_create_relations"], {**project, "relations": [
            {"from": "Old", "to": "Keep", "relationType": "knows"}]}, actor="agent")
    before = (root / ".mcp" / "memory.json").read_text()
    killed(tmp_path / "store", root, tool, arguments)
    assert (root / ".mcp" / "memory.json").read_text() == before
    graph = next_session(tmp_path / "store", root)
    assert names(graph) == after  # no "Project file conflicts"
    if tool == "delete_observations":
        assert [e["observations"] for e in graph["graph"]["entities"] if e["name"] == "Old"] == [[]]
    assert json.loads((root / ".mcp" / "memory.json").read_text())["entities"] == [
        {"name": e["name"], "entityType": e["entityType"], "observations": sorted(e["observations"])}
        for e in sorted(graph["graph"]["entities"], key=lambda e: e["name"])]


def test_a_project_file_changed_since_the_store_wrote_it_is_still_folded(tmp_path: Path) -> None:
    """What tells a stale mirror from a hand edit or a `git pull` is what the file holds, not when."""
    root = tmp_path / "project"
    served(tmp_path / "store", root)
    mirror = root / ".mcp" / "memory.json"
    graph = json.loads(mirror.read_text())
    graph["entities"].append({"name": "By Hand", "entityType": "NOTE", "observations": ["typed in"]})
    mirror.write_text(json.dumps(graph))
    assert names(next_session(tmp_path / "store", root)) == ["By Hand", "Zqx Secret"]


def test_a_project_file_that_differs_only_in_when_it_was_written_is_not_folded(tmp_path: Path) -> None:
    """A checkout that writes the file again, byte for byte, changes nothing it holds."""
    root = tmp_path / "project"
    served(tmp_path / "store", root)
    killed(tmp_path / "store", root, "delete_entities", {"entityNames": ["Zqx Secret"]})
    mirror = root / ".mcp" / "memory.json"
    data = mirror.read_bytes()
    mirror.unlink()
    mirror.write_bytes(data)
    assert names(next_session(tmp_path / "store", root)) == []


def test_a_forget_killed_during_its_scrub_has_already_rewritten_the_project_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scrub may wait seconds for readers; the file is rewritten right after the commit, before it."""

    class Killed(BaseException):
        """The process ends here."""

    def scrub(self: Memory, *args: Any, **kwargs: Any) -> Any:
        raise Killed

    root = tmp_path / "project"
    served(tmp_path / "store", root)
    monkeypatch.setattr(service.Memory, "scrub", scrub)
    with pytest.raises(Killed):
        forget(tmp_path / "store", root)
    monkeypatch.undo()
    assert "zqx" not in (root / ".mcp" / "memory.json").read_text().lower()
    assert names(next_session(tmp_path / "store", root)) == []


def test_what_the_project_files_hold_is_recorded_once_they_are_written(tmp_path: Path) -> None:
    root = tmp_path / "project"
    served(tmp_path / "store", root)
    mirror = root / ".mcp" / "memory.json"
    with Memory(tmp_path / "store", sync=False) as memory:
        recorded = knownprojects.mirrored(memory, workspace_name(root))
        secret = knownprojects.secret(memory)
        assert recorded is not None and secret is not None
        assert (recorded.graph, recorded.context) == (knownprojects.Mirrored.of(mirror.read_bytes()), None)
        assert recorded.lines == projectbase.lines(json.loads(mirror.read_text()), secret)
        assert knownprojects.mirrored(memory, "n2n:other:0123456789abcdef") is None


def graph_of(store: Store, root: Path) -> dict[str, Any]:
    """The workspace's graph as the log holds it: entity name -> its sorted observations."""
    with opened(store) as memory:
        reply = memory.read(N2N["n2n_read_graph"], {"projectPath": str(root)}).reply
    return {e["name"]: sorted(e["observations"]) for e in reply["graph"]["entities"]}


def edit_by_hand(root: Path) -> None:
    """What a hand edit (or a `git pull` merged into the file) does to it: one entity added, one
    observation of another changed."""
    mirror = root / ".mcp" / "memory.json"
    graph = json.loads(mirror.read_text())
    graph["entities"].append({"name": "By Hand", "entityType": "NOTE", "observations": ["typed in"]})
    for entity in graph["entities"]:
        if entity["name"] == "Keep":
            entity["observations"] = ["k, corrected"]
    mirror.write_text(json.dumps(graph, indent=2))


def two_entities(store: Store, root: Path) -> None:
    """A session that kept the project's files: "Old" (with an observation and a relation to
    "Keep") and "Keep"."""
    (root / ".git").mkdir(parents=True)
    with opened(store) as memory:
        kept(memory, always=True)
        project = {"projectPath": str(root), "confirmNewProjectRoot": str(root)}
        memory.write(N2N["n2n_add_entities"], {**project, "entities": [
            {"name": "Old", "entityType": "PERSON", "observations": ["a fact"]},
            {"name": "Keep", "entityType": "PERSON", "observations": ["k"]}]}, actor="agent")
        memory.write(N2N["n2n_create_relations"], {**project, "relations": [
            {"from": "Old", "to": "Keep", "relationType": "knows"}]}, actor="agent")


def test_a_forget_killed_before_the_rewrite_then_an_edit_by_hand_folds_the_edit_and_not_what_was_erased(
        tmp_path: Path, backend_store: dict[str, Any]) -> None:
    """The file is behind the log and changed since: its lines as the store wrote them take the
    log's state (the erased entity's are dropped), only what was edited is folded."""
    root, store = tmp_path / "project", backend_store
    two_entities(store, root)
    killed(store, root, "forget_entity", {"name": "Old", "reason": "asked"})
    edit_by_hand(root)
    assert "a fact" in (root / ".mcp" / "memory.json").read_text()
    assert names(next_session(store, root)) == ["By Hand", "Keep"]  # no "Project file conflicts"
    assert graph_of(store, root) == {"By Hand": ["typed in"], "Keep": ["k", "k, corrected"]}
    written = json.loads((root / ".mcp" / "memory.json").read_text())
    assert "Old" not in json.dumps(written) and written["relations"] == []
    assert names(next_session(store, root)) == ["By Hand", "Keep"]


@pytest.mark.parametrize(("tool", "arguments", "after"), [
    ("rename_entity", {"name": "Old", "newName": "New"}, ["By Hand", "Keep", "New"]),
    ("merge_entities", {"target": "Keep", "sources": ["Old"]}, ["By Hand", "Keep"]),
    ("delete_entities", {"entityNames": ["Old"]}, ["By Hand", "Keep"]),
    ("delete_observations", {"deletions": [{"entityName": "Old", "observations": ["a fact"]}]},
     ["By Hand", "Keep", "Old"]),
    ("delete_relations", {"relations": [{"from": "Old", "to": "Keep", "relationType": "knows"}]},
     ["By Hand", "Keep", "Old"]),
])
def test_a_change_killed_before_the_mirror_then_an_edit_by_hand_parks_no_conflict(
        tmp_path: Path, tool: str, arguments: dict[str, Any], after: list[str]) -> None:
    """What the change took away is still in the stale file, as the store wrote it: not parked."""
    root, store = tmp_path / "project", tmp_path / "store"
    two_entities(store, root)
    killed(store, root, tool, arguments)
    edit_by_hand(root)
    graph = next_session(store, root)
    assert names(graph) == after
    assert graph_of(store, root)["By Hand"] == ["typed in"] and "k, corrected" in graph_of(store, root)["Keep"]
    if tool == "delete_observations":
        assert graph_of(store, root)["Old"] == []
    if tool == "delete_relations":
        assert graph["graph"]["relations"] == []


def test_an_edit_by_hand_of_what_the_log_deleted_since_is_still_parked(tmp_path: Path) -> None:
    """An observation added by hand to an entity this memory deleted is a conflict indeed."""
    root, store = tmp_path / "project", tmp_path / "store"
    two_entities(store, root)
    killed(store, root, "delete_entities", {"entityNames": ["Old"]})
    mirror = root / ".mcp" / "memory.json"
    graph = json.loads(mirror.read_text())
    next(e for e in graph["entities"] if e["name"] == "Old")["observations"].append("said by hand")
    mirror.write_text(json.dumps(graph))
    [parked] = graph_of_conflicts(next_session(store, root))
    assert "'Old'" in parked and "said by hand" in parked and "a fact" not in parked


def graph_of_conflicts(graph: dict[str, Any]) -> list[str]:
    return [o for e in graph["graph"]["entities"] if e["name"] == "Project file conflicts" for o in e["observations"]]


def test_a_record_written_before_the_lines_were_kept_folds_a_changed_file_whole_as_before(tmp_path: Path) -> None:
    root, store = tmp_path / "project", tmp_path / "store"
    two_entities(store, root)
    with opened(store) as memory:  # as an earlier version recorded it: the files' digests alone
        ours = knownprojects.mirrored(memory, workspace_name(root))
        assert ours is not None and ours.lines is not None
        env = memory.views.env
        db = env.open_db(knownprojects.MIRRORS)
        env.write(lambda txn: txn.put(workspace_name(root).encode(), msgspec.msgpack.encode(
            [ours.graph, ours.context]), db=db))
    killed(store, root, "delete_entities", {"entityNames": ["Old"]})
    edit_by_hand(root)
    assert names(next_session(store, root)) == ["By Hand", "Keep", "Project file conflicts"]


def test_what_is_recorded_of_the_lines_holds_no_text_and_confirms_nothing_without_the_store_s_secret(
        tmp_path: Path) -> None:
    root, store = tmp_path / "project", tmp_path / "store"
    served(store, root)
    graph = json.loads((root / ".mcp" / "memory.json").read_text())
    with opened(store) as memory:
        env = memory.views.env
        db = env.open_db(knownprojects.MIRRORS, create=False)
        with env.read() as txn:
            raw = bytes(txn.get(workspace_name(root).encode(), db=db))
        recorded, secret = knownprojects.mirrored(memory, workspace_name(root)), knownprojects.secret(memory)
    assert b"Zqx" not in raw and b"zqx" not in raw
    assert recorded is not None and recorded.lines == projectbase.lines(graph, secret or b"")
    guessed = projectbase.lines(graph, os.urandom(projectbase.SECRET_SIZE)).held()  # the right guess, any other key
    assert not guessed & recorded.lines.held()


def erased_lines(store: Store) -> list[bytes]:
    """The keyed digests of the lines "Zqx Secret" has in its project's file, as the store keys them."""
    with opened(store) as memory:
        secret = knownprojects.secret(memory)
    assert secret is not None
    lines = projectbase.lines({"entities": [{"name": "Zqx Secret", "entityType": "PERSON",
                                             "observations": ["zqx phone"]}], "relations": []}, secret)
    return [*lines.entities, *lines.held()]


@pytest.mark.parametrize("path", ["rewritten at once", "killed, then the next call",
                                  "killed, edited, then the next call", "not rewritten"])
def test_a_forget_leaves_no_digest_of_the_erased_lines_anywhere_in_the_store(
        tmp_path: Path, backend_store: dict[str, Any], path: str) -> None:
    """Kept, they would confirm a guess of what was erased; the record replaced is scrubbed away."""
    root, store = tmp_path / "project", backend_store
    views = Path(store.get("cache") or store["store"])  # the record is kept beside the views
    served(store, root, always=path != "not rewritten", asks=path == "not rewritten")
    digests = erased_lines(store)

    def left() -> list[bytes]:
        return [d for d in digests if any(d in file.read_bytes() for file in views.iterdir())]

    assert left() == digests
    if path == "rewritten at once":
        assert forget(store, root).elsewhere == []
    elif path == "not rewritten":
        marker = root / ".mcp" / "chronograph.json"
        marker.write_text(json.dumps({**json.loads(marker.read_text()), "projectFiles": False}))
        assert "was not rewritten" in forget(store, root, always=False).elsewhere[0]
    else:
        killed(store, root, "forget_entity", {"name": "Zqx Secret", "reason": "asked"})
        assert left() == digests  # what keeps the stale file's lines from being folded back
        if path.startswith("killed, edited"):
            edit_by_hand(root)
        next_session(store, root)
    assert left() == []
