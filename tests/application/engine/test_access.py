"""The one place that decides: which workspaces a call touches and the grant it needs there,
checked before anything is read or written."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from chronograph.application import PROFILES, Memory
from chronograph.application.engine.access import TEAM_WORKSPACE, needs
from chronograph.application.engine.arguments import parse
from chronograph.application.engine.principal import Principal
from chronograph.application.engine.registry import find
from chronograph.application.engine.tokens import Tokens
from chronograph.application.errors import ForbiddenError, NotFoundError
from chronograph.application.surfaces.projectroot import workspace_name

READER = Principal("reader", {"alpha": "read"})
WRITER = Principal("writer", {"alpha": "write", TEAM_WORKSPACE: "write"})


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store") as opened:
        for workspace in ("alpha", "bravo"):
            opened.write("create_entities", {"workspace": workspace, "entities": [
                {"name": f"{workspace}-one", "entityType": "thing", "observations": [f"{workspace} fact"]}]},
                actor="setup")
        yield opened


def test_a_refused_write_names_the_workspace_and_the_grant_and_appends_nothing(memory: Memory) -> None:
    head = memory.log.head()
    with pytest.raises(ForbiddenError) as refused:
        memory.write("create_entities", {"workspace": "alpha", "entities": [
            {"name": "Ada", "entityType": "person", "observations": []}]}, actor="t", principal=READER)
    assert (refused.value.code, refused.value.workspace, refused.value.need) == ("forbidden", "alpha", "write")
    assert "'alpha'" in str(refused.value) and "write" in str(refused.value)
    assert memory.log.head() == head


def test_a_read_needs_a_read_grant_on_its_workspace(memory: Memory) -> None:
    assert memory.read("open_nodes", {"workspace": "alpha", "names": ["alpha-one"]}, principal=READER)
    with pytest.raises(ForbiddenError):
        memory.read("open_nodes", {"workspace": "bravo", "names": ["bravo-one"]}, principal=READER)


def test_erasing_needs_admin_where_deleting_needs_write(memory: Memory) -> None:
    memory.write("delete_entities", {"workspace": "alpha", "entityNames": ["alpha-one"]}, actor="t", principal=WRITER)
    with pytest.raises(ForbiddenError) as refused:
        memory.write("forget_entity", {"workspace": "alpha", "name": "alpha-one", "reason": "gdpr"}, actor="t",
                     principal=WRITER)
    assert refused.value.need == "admin"


def test_the_team_memory_is_granted_as_one_workspace_and_its_reset_needs_admin(memory: Memory) -> None:
    memory.write("memory_org", {"action": "create", "name": "acme"}, actor="t", principal=WRITER)
    assert memory.write("memory_org", {"action": "list"}, actor="t",
                        principal=Principal("r", {TEAM_WORKSPACE: "read"})).changed is False
    with pytest.raises(ForbiddenError) as refused:
        memory.write("memory_init", {"action": "reset"}, actor="t", principal=WRITER)
    assert (refused.value.workspace, refused.value.need) == (TEAM_WORKSPACE, "admin")
    with pytest.raises(ForbiddenError):
        memory.read("memory_health", {}, principal=READER)


def test_reads_across_workspaces_show_only_the_readable_ones(memory: Memory) -> None:
    listed = memory.read("list_workspaces", {}, principal=READER)
    assert [w.name for w in listed.workspaces] == ["alpha"]  # type: ignore[attr-defined]
    audit = memory.read("get_audit_log", {"allWorkspaces": True}, principal=READER)
    assert {e.workspace for e in audit.events} == {"alpha"}  # type: ignore[attr-defined]
    everything = memory.read("get_audit_log", {"allWorkspaces": True})  # the local user: every grant
    assert {e.workspace for e in everything.events} == {"alpha", "bravo"}  # type: ignore[attr-defined]


def test_the_store_s_tokens_show_in_the_audit_only_to_who_administers_every_workspace(memory: Memory) -> None:
    """Token events belong to no graph workspace (the team memory's, as the log names it), but
    they say who may do what everywhere: reading the team memory does not show them."""
    Tokens(memory.log).issue("payroll-bot", {"payroll": "write"})
    team = Principal("team", {TEAM_WORKSPACE: "read"})

    def tokens(principal: Principal | None) -> list[str]:
        audit = memory.read("get_audit_log", {"allWorkspaces": True}, principal=principal)
        return [e.subject for e in audit.events if e.subject.startswith("token ")]  # type: ignore[attr-defined]

    assert tokens(team) == [] and tokens(Principal("ops", {"*": "admin"})) == ["token payroll-bot"]
    assert tokens(None) == ["token payroll-bot"]  # the local user


def test_a_project_path_tells_a_principal_without_a_grant_nothing_of_the_server_s_files(
    memory: Memory, tmp_path: Path
) -> None:
    """Whether a path exists, is a project root or resolves elsewhere came back before the grant
    was checked; only a principal that administers every workspace is told why a path is none."""
    read_graph = PROFILES["n2n"].tools["n2n_read_graph"]
    (tmp_path / "project" / ".git").mkdir(parents=True)
    said = set()
    for path in ("/no/such/dir", str(tmp_path), str(tmp_path / "project")):
        with pytest.raises(ForbiddenError) as refused:
            memory.read(read_graph, {"projectPath": path}, principal=READER)
        said.add(str(refused.value).replace(repr(path), "PATH"))
        assert "n2n:" not in str(refused.value)
    assert len(said) == 1
    with pytest.raises(NotFoundError, match="does not exist"):
        memory.read(read_graph, {"projectPath": "/no/such/dir"})  # the local user


def test_kuzu_s_databases_are_their_workspaces_and_unnamed_ones_are_not_listed(memory: Memory) -> None:
    kuzu = PROFILES["kuzu"].tools
    summary = memory.read(kuzu["get_graph_summary"], {}, principal=READER)
    assert list(summary.reply["databases"]) == ["alpha"]  # type: ignore[attr-defined]
    with pytest.raises(ForbiddenError):
        memory.read(kuzu["search_entities"], {"database": "bravo", "query": "x"}, principal=READER)
    with pytest.raises(NotFoundError) as missing:
        memory.read(kuzu["search_entities"], {"database": "charlie", "query": "x"},
                    principal=Principal("r", {"charlie": "read", "alpha": "read"}))
    assert "bravo" not in str(missing.value) and "alpha" in str(missing.value)  # what exists, as far as it may know


def test_n2n_s_project_is_found_without_adopting_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    tool = PROFILES["n2n"].tools["n2n_add_entities"]
    args = parse(tool.name, {"projectPath": str(root), "confirmNewProjectRoot": str(root), "entities": []},
                 tool.arguments)
    assert needs(tool, args) == [(workspace_name(Path(os.path.realpath(root))), "write")]
    assert not (root / ".mcp").exists()


def test_an_export_that_writes_a_file_needs_write() -> None:
    tool = find("export_graph")
    plain = {"workspace": "alpha", "format": "json"}
    assert needs(tool, parse(tool.name, plain, tool.arguments)) == [("alpha", "read")]
    assert needs(tool, parse(tool.name, {**plain, "outputPath": "g.json"}, tool.arguments)) == [("alpha", "write")]
