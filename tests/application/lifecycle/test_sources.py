"""Bringing a memory from the other servers: each format detected, imported with its counts, once,
planned without writing, its provenance named, a damaged one refused whole."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application.engine.stores import store_exists
from chronograph.application.surfaces import N2N
from chronograph.application.surfaces.projectroot import project_workspace
from chronograph.tools.import_graph import main as import_main

FIXTURES = Path(__file__).parent / "fixtures"


def kuzu_database(tmp_path: Path) -> Path:
    kuzu = pytest.importorskip("kuzu", reason="the kuzu extra is not installed (uv sync --extra kuzu)")
    path = tmp_path / "memory.kuzu"
    database = kuzu.Database(str(path))
    connection = kuzu.Connection(database)
    for statement in (FIXTURES / "kuzu-memory.cypher").read_text(encoding="utf-8").split(";\n"):
        if statement.strip():
            connection.execute(statement)
    connection.close()
    database.close()
    return path


def agent_memory_database(tmp_path: Path) -> Path:
    path = tmp_path / "agent-memory.db"
    connection = sqlite3.connect(path)
    connection.executescript((FIXTURES / "agent-memory.sql").read_text(encoding="utf-8"))
    connection.commit()
    connection.close()
    return path


def n2n_project(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / "n2n-project", tmp_path / "shop"))


def basic_memory_folder(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / "basic-memory", tmp_path / "notes"))


def mem0_export(tmp_path: Path) -> Path:
    return Path(shutil.copy(FIXTURES / "mem0-export.json", tmp_path / "mem0-export.json"))


@dataclass(frozen=True)
class Case:
    """A graph source and what it holds."""

    name: str
    make: Callable[[Path], Path]
    workspace: Callable[[Path], str]
    entities: dict[str, tuple[str, int]]
    """name -> (type, how many observations)"""
    relations: set[tuple[str, str, str]]
    context: bool = False


CASES = [
    Case("n2n", n2n_project, lambda path: project_workspace("test", str(path)),
         {"Billing service": ("component", 2), "Payments gateway": ("external-service", 1),
          "Retry policy": ("decision", 3)},
         {("Billing service", "calls", "Payments gateway"), ("Billing service", "follows", "Retry policy")},
         context=True),
    Case("mem0", mem0_export, lambda _: "default",
         {"alice": ("user", 3), "bob": ("user", 1), "planner": ("agent", 1)}, set()),
    Case("kuzu", kuzu_database, lambda _: "memory",
         {"Grace Hopper": ("person", 2), "COBOL": ("language", 1), "Harvard Mark I": ("machine", 3)},
         {("Grace Hopper", "DESIGNED", "COBOL"), ("Grace Hopper", "PROGRAMMED", "Harvard Mark I")}),
    Case("basic-memory", basic_memory_folder, lambda _: "default",
         {"Coffee Brewing Methods": ("note", 4), "Pour Over": ("technique", 3), "Coffee Beans": ("note", 2)},
         {("Coffee Brewing Methods", "includes", "Pour Over"), ("Coffee Brewing Methods", "requires", "Coffee Beans"),
          ("Pour Over", "part_of", "Coffee Brewing Methods"), ("Pour Over", "links_to", "Coffee Beans")}),
]
IDS = [case.name for case in CASES]


def graph_of(store: Path, workspace: str) -> dict[str, Any]:
    with Memory(store) as memory:
        return msgspec.to_builtins(memory.read("read_graph", {"workspace": workspace}))


def head(store: Path) -> int:
    with Memory(store) as memory:
        return memory.log.head()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_source_imports_what_it_holds_and_names_its_format_first(case: Case, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    source, store = case.make(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"format: {case.name} (")
    workspace = case.workspace(source)
    graph = graph_of(store, workspace)
    assert {e["name"]: (e["entityType"], len(e["observations"])) for e in graph["entities"]} == case.entities
    assert {(r["from"], r["relationType"], r["to"]) for r in graph["relations"]} == case.relations
    if case.context:
        with Memory(store) as memory:
            context = msgspec.to_builtins(memory.read("read_context", {"workspace": workspace}))
        assert context["status"] == "IN_PROGRESS" and len(context["nextSteps"]) == 2


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_second_import_of_a_source_writes_no_event(case: Case, tmp_path: Path) -> None:
    source, store = case.make(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store)]) == 0
    before = head(store)
    assert import_main([str(source), "--store", str(store)]) == 0
    assert head(store) == before > 0


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_plan_prints_the_counts_and_writes_nothing(case: Case, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    source, store = case.make(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store), "--plan"]) == 0
    out = capsys.readouterr().out
    assert not store_exists(str(store))
    observations = sum(count for _, count in case.entities.values())
    assert (f"plan: workspace {case.workspace(source)!r}: {len(case.entities)} entities, {len(case.relations)} "
            f"relations, {observations} observations") in out
    assert out.splitlines()[0].startswith(f"format: {case.name} (")
    with Memory(store) as memory:  # a store that holds something: the plan only reads it
        memory.write("create_entities", {"entities": [{"name": "x", "entityType": "t", "observations": []}]},
                     actor="t")
    before = head(store)
    assert import_main([str(source), "--store", str(store), "--plan"]) == 0
    assert head(store) == before


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_imported_item_names_its_source(case: Case, tmp_path: Path) -> None:
    source, store = case.make(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store)]) == 0
    with Memory(store) as memory:
        actors = {envelope.actor for envelope in memory.log.read_all()}
        workspace = case.workspace(source)
        graph = msgspec.to_builtins(memory.read("read_graph", {"workspace": workspace}))
        shown = msgspec.to_builtins(memory.read("open_nodes", {"workspace": workspace, "includeProvenance": True,
                                                               "names": sorted(case.entities)}))
    assert actors == {f"import:{case.name}"}
    assert {p["actor"] for e in shown["entities"] for p in e["provenance"]} == {f"import:{case.name}"}
    origins = {e["metadata"]["importedFrom"] for e in graph["entities"]}
    assert origins == {f"{case.name}:{source.resolve()}"}


def test_the_source_named_by_from_is_read_whatever_the_path(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "memories.txt"
    shutil.copy(FIXTURES / "mem0-export.json", source)
    store = tmp_path / "store"
    assert import_main([str(source), "--store", str(store), "--from", "mem0"]) == 0
    assert capsys.readouterr().out.startswith("format: mem0 (")
    assert len(graph_of(store, "default")["entities"]) == 3


def damaged_mem0(tmp_path: Path) -> list[str]:
    path = tmp_path / "mem0.json"
    path.write_text((FIXTURES / "mem0-export.json").read_text(encoding="utf-8")[:400], encoding="utf-8")
    return [str(path), "--from", "mem0"]


def damaged_n2n(tmp_path: Path) -> list[str]:
    root = n2n_project(tmp_path)
    (root / ".mcp" / "memory.json").write_text('{"entities": [<<<<<<< HEAD', encoding="utf-8")
    return [str(root)]


def damaged_agent_memory(tmp_path: Path) -> list[str]:
    path = tmp_path / "agent.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)
    return [str(path), "--from", "agent-memory"]


def unrelated_sqlite(tmp_path: Path) -> list[str]:
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (id integer)")
    connection.close()
    return [str(path), "--from", "agent-memory"]


def damaged_kuzu(tmp_path: Path) -> list[str]:
    pytest.importorskip("kuzu", reason="the kuzu extra is not installed (uv sync --extra kuzu)")
    path = tmp_path / "memory.kuzu"
    path.write_bytes(b"KUZU" + b"\x00\x13" * 3000)
    return [str(path)]


def damaged_note(tmp_path: Path) -> list[str]:
    root = basic_memory_folder(tmp_path)
    (root / "broken.md").write_text("---\ntitle: Broken\ntype: note\n\n- [fact] never closed\n", encoding="utf-8")
    return [str(root)]


def unknown_folder(tmp_path: Path) -> list[str]:
    folder = tmp_path / "pictures"
    folder.mkdir()
    (folder / "cat.png").write_bytes(b"\x89PNG\r\n")
    return [str(folder)]


def unknown_format(tmp_path: Path) -> list[str]:
    return [str(mem0_export(tmp_path)), "--from", "evernote"]


@pytest.mark.parametrize("arguments", [damaged_mem0, damaged_n2n, damaged_agent_memory, unrelated_sqlite, damaged_kuzu,
                                       damaged_note, unknown_folder, unknown_format])
def test_a_damaged_or_unknown_source_is_refused_in_one_line_and_nothing_is_written(
        arguments: Callable[[Path], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    assert import_main([*arguments(tmp_path), "--store", str(store)]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("chronograph import: ")
    assert not store_exists(str(store))


def test_an_agent_memory_database_becomes_the_team_memory_with_its_versions_scopes_and_tags(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, store = agent_memory_database(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("format: agent-memory (")
    with Memory(store) as memory:
        exported = memory.read("memory_export", {"action": "export", "includeVersions": True,
                                                 "includeInactive": True}).reply  # type: ignore[attr-defined]
        actors = {envelope.actor for envelope in memory.log.read_all()}
        projects = memory.read("memory_project", {"action": "list"}).reply  # type: ignore[attr-defined]
    entries = json.loads(exported["content"])["entries"]
    assert {plural: len(items) for plural, items in entries.items()} == {"tools": 1, "guidelines": 2, "knowledge": 2}
    by_id = {entry["id"]: entry for items in entries.values() for entry in items}
    cached = by_id["9a000000-0000-4000-8000-000000000001"]
    assert [v["content"] for v in cached["versions"]] == [
        "The cart is cached for speed", "The cart is cached: the pricing service is slow",
        "The cart is cached for 60 s: the pricing service takes 800 ms"]
    assert [v.get("changeReason") for v in cached["versions"]][1:] == ["Found the cause", "Measured"]
    [project] = projects["projects"]
    assert (cached["scopeType"], cached["scopeId"]) == ("project", project["id"])  # the session's project
    assert by_id["9a000000-0000-4000-8000-000000000002"]["isActive"] is False
    assert sorted(by_id["7a000000-0000-4000-8000-000000000001"]["tags"]) == ["python"]
    assert len(by_id["7a000000-0000-4000-8000-000000000001"]["versions"]) == 2
    assert actors == {"import:agent-memory"}
    assert len(json.loads(exported["content"])["relations"]) == 2


def test_an_agent_memory_entry_the_store_holds_by_name_is_brought_to_its_current_version(tmp_path: Path) -> None:
    source, store = agent_memory_database(tmp_path), tmp_path / "store"
    with Memory(store) as memory:
        added = memory.write("memory_tool", {"action": "add", "scopeType": "global", "name": "ripgrep",
                                             "description": "Searches"}, actor="t").output
    ours = added.reply["tool"]["id"]  # type: ignore[attr-defined]
    assert import_main([str(source), "--store", str(store)]) == 0
    with Memory(store) as memory:
        exported = memory.read("memory_export", {"action": "export", "includeVersions": True}).reply  # type: ignore[attr-defined]
    document = json.loads(exported["content"])
    [tool] = document["entries"]["tools"]
    assert tool["id"] == ours and tool["currentVersion"]["description"] == "Searches files fast, respecting .gitignore"
    assert {(r["sourceId"], r["relationType"]) for r in document["relations"]} >= {(ours, "applies_to")}


def test_an_agent_memory_entry_forgotten_here_comes_back_under_a_new_id_with_every_version(tmp_path: Path) -> None:
    source, store = agent_memory_database(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store)]) == 0
    cached = "9a000000-0000-4000-8000-000000000001"
    with Memory(store) as memory:
        memory.write("memory_forget", {"id": cached, "reason": "test"}, actor="t")
    assert import_main([str(source), "--store", str(store)]) == 0  # the id's stream is erased: never written again
    with Memory(store) as memory:
        exported = memory.read("memory_export", {"action": "export", "includeVersions": True,
                                                 "includeInactive": True}).reply  # type: ignore[attr-defined]
    knowledge = json.loads(exported["content"])["entries"]["knowledge"]
    [back] = [k for k in knowledge if k["currentVersion"]["content"].startswith("The cart is cached for 60 s")]
    assert back["id"] != cached and [v["content"] for v in back["versions"]] == [
        "The cart is cached for speed", "The cart is cached: the pricing service is slow",
        "The cart is cached for 60 s: the pricing service takes 800 ms"]


def test_an_agent_memory_database_imports_once_and_plans_without_writing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, store = agent_memory_database(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store), "--plan"]) == 0
    out = capsys.readouterr().out
    assert "1 tools, 2 guidelines, 2 knowledge; 8 versions, 3 tags on entries, 2 relations, 1 deactivated" in out
    assert out.splitlines()[0].startswith("format: agent-memory (")
    assert not store_exists(str(store))
    assert import_main([str(source), "--store", str(store)]) == 0
    before = head(store)
    assert import_main([str(source), "--store", str(store), "--plan"]) == 0
    assert import_main([str(source), "--store", str(store)]) == 0
    assert head(store) == before > 0
    assert capsys.readouterr().out.rstrip().endswith("0 events")


@pytest.mark.parametrize(("statement", "said"), [
    ("UPDATE knowledge_versions SET confidence = 7.5", "confidence: expected `float` <= 1.0"),
    ("UPDATE knowledge_versions SET valid_until = 'next tuesday'", "'next tuesday' is not an ISO-8601 timestamp"),
    ("UPDATE knowledge SET title = title || printf('%.600c', 'x')", "title: expected `str` of length <= 512"),
    ("INSERT INTO organizations (id, name, created_at) VALUES ('o9', '', '2026-01-05T10:00:00Z')",
     "memory_org: name: expected `str` of length >= 1"),
])
def test_an_agent_memory_database_holding_what_the_team_memory_refuses_is_refused_before_any_write(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], statement: str, said: str) -> None:
    source, store = agent_memory_database(tmp_path), tmp_path / "store"
    connection = sqlite3.connect(source)
    connection.execute(statement)
    connection.commit()
    connection.close()
    for plan in (["--plan"], []):
        assert import_main([str(source), "--store", str(store), *plan]) == 2
        err = capsys.readouterr().err
        assert "holds what the team memory refuses" in err and said in err and err.rstrip().endswith(
            "; nothing was written")
        assert not store_exists(str(store))


def test_a_kuzu_database_keeps_each_relations_confidence(tmp_path: Path) -> None:
    source, store = kuzu_database(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store)]) == 0
    graph = graph_of(store, "memory")
    assert {r["relationType"]: r.get("confidence") for r in graph["relations"]} == {"DESIGNED": 0.9,
                                                                                    "PROGRAMMED": 1.0}


def test_without_the_kuzu_extra_the_import_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "memory.kuzu"
    source.write_bytes(b"KUZU" + bytes(64))
    monkeypatch.setitem(sys.modules, "kuzu", None)  # `import kuzu` raises ImportError
    assert import_main([str(source), "--store", str(tmp_path / "store")]) == 2
    assert "pip install 'chronograph[kuzu]'" in capsys.readouterr().err


def test_an_n2n_project_goes_into_the_workspace_the_n2n_profile_reads_and_stays_untouched(tmp_path: Path) -> None:
    root, store = n2n_project(tmp_path), tmp_path / "store"
    files = sorted(p.relative_to(root) for p in root.rglob("*"))
    assert import_main([str(root / ".mcp"), "--store", str(store)]) == 0
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == files  # no marker written by the import
    with Memory(store) as memory:  # the n2n profile's own read of that project
        graph = msgspec.to_builtins(memory.read(N2N["n2n_read_graph"], {"projectPath": str(root)}))
    shown = json.dumps(graph)
    assert all(name in shown for name in ("Billing service", "Payments gateway", "Retry policy", "IN_PROGRESS"))


def test_an_n2n_file_out_of_format_is_named_with_its_field_and_the_values_it_takes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "shop"
    (root / ".mcp").mkdir(parents=True)
    (root / ".mcp" / "context.json").write_text('{"activeTask": "ship", "status": "in progress"}')
    assert import_main([str(root), "--store", str(tmp_path / "store")]) == 2
    assert (f"{root / '.mcp' / 'context.json'} is not in n2n's format: status: invalid enum value 'in progress'; "
            'choose one of "BLOCKED", "COMPLETED", "IN_PROGRESS", "PLANNING"') in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_a_context_the_workspace_already_holds_is_not_merged_again(tmp_path: Path) -> None:
    path, store = tmp_path / "memory.jsonl", tmp_path / "store"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"type": "entity", "name": "A", "entityType": "t", "observations": ["o"]},
        {"type": "context", "activeTask": "ship", "status": "IN_PROGRESS", "nextSteps": ["test"]}]), encoding="utf-8")
    assert import_main([str(path), "--store", str(store)]) == 0
    before = head(store)
    assert import_main([str(path), "--store", str(store)]) == 0
    assert head(store) == before


def test_a_plan_of_the_official_file_counts_it_and_writes_nothing(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path, store = tmp_path / "memory.jsonl", tmp_path / "store"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"type": "entity", "name": "A", "entityType": "t", "observations": ["o", "p"]},
        {"type": "entity", "name": "B", "entityType": "t", "observations": []},
        {"type": "relation", "from": "A", "to": "B", "relationType": "r"}]), encoding="utf-8")
    assert import_main([str(path), "--store", str(store), "--plan"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format: official (")
    assert "plan: workspace 'default': 2 entities, 1 relations, 2 observations\n" in out
    assert not store_exists(str(store))
    assert import_main([str(path), "--store", str(store)]) == 0
    capsys.readouterr()
    assert import_main([str(path), "--store", str(store), "--plan"]) == 0  # says what the store holds already
    assert ("plan: workspace 'default': 2 entities, 1 relations, 2 observations; in the store already: 2 of the "
            "entities (given only the observations they lack) and 1 of the relations\n") in capsys.readouterr().out


def test_mem0_graph_relations_come_with_their_ends(tmp_path: Path) -> None:
    path, store = tmp_path / "mem0.json", tmp_path / "store"
    path.write_text(json.dumps({
        "results": [{"id": "1", "memory": "Likes hiking", "user_id": "alice"}],
        "relations": [{"source": "alice", "relationship": "lives_in", "destination": "lisbon"},
                      {"source": "alice", "relationship": "works_at", "target": "acme"}]}), encoding="utf-8")
    assert import_main([str(path), "--store", str(store)]) == 0
    graph = graph_of(store, "default")
    assert {e["name"]: e["entityType"] for e in graph["entities"]} == {"alice": "user", "lisbon": "mem0 entity",
                                                                      "acme": "mem0 entity"}
    assert {(r["from"], r["relationType"], r["to"]) for r in graph["relations"]} == {
        ("alice", "lives_in", "lisbon"), ("alice", "works_at", "acme")}


def test_a_folder_of_markdown_without_basic_memory_front_matter_is_not_taken_for_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "app"
    (project / "docs").mkdir(parents=True)
    (project / "README.md").write_text("# App\n\n- [note] not a memory\n", encoding="utf-8")
    (project / "docs" / "design.md").write_text("---\ntitle: Design\n---\n# Design\n", encoding="utf-8")
    assert import_main([str(project), "--store", str(tmp_path / "store")]) == 2
    assert "no memory this import reads" in capsys.readouterr().err
    assert not store_exists(str(tmp_path / "store"))


def test_a_jsonl_export_of_mem0_is_staged_a_line_at_a_time(tmp_path: Path) -> None:
    from chronograph.application.lifecycle.from_mem0 import MEM0
    from chronograph.application.lifecycle.sources import stage

    def peak(memories: int) -> int:
        path = tmp_path / f"mem0-{memories}.jsonl"
        with path.open("w", encoding="utf-8") as file:
            for i in range(memories):
                file.write(json.dumps({"id": str(i), "memory": f"memory number {i} " + "x" * 200,
                                       "user_id": f"user{i % 5}"}) + "\n")
        tracemalloc.start()
        with stage(MEM0, path, "default") as staged:
            assert staged.counts["default"].observations == memories
        held = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return held

    assert peak(20_000) < 2 * peak(2_000)


LONG = "x" * 600
"""A name past the tools' 512 characters: a record the import refuses, whatever the format"""


def mem0_document_with_a_refused_memory(tmp_path: Path) -> Path:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({"results": [{"id": "a", "memory": "Likes tea", "user_id": "alice"},
                                            {"id": "b", "memory": "Likes coffee", "user_id": "bob"},
                                            {"id": "c", "memory": "Too long a name", "user_id": LONG}]}),
                    encoding="utf-8")
    return path


def mem0_lines_with_a_refused_memory(tmp_path: Path) -> Path:
    path = tmp_path / "mem0.jsonl"
    path.write_text(json.dumps({"id": "a", "memory": "Likes tea", "user_id": "alice"}) + "\n\n"
                    + json.dumps({"id": "c", "memory": "Too long a name", "user_id": LONG}) + "\n", encoding="utf-8")
    return path


def notes_with_a_refused_note(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "people").mkdir(parents=True)
    (folder / "alice.md").write_text("---\ntitle: alice\npermalink: alice\n---\n- [fact] Likes tea\n", encoding="utf-8")
    (folder / "people" / "long.md").write_text(f"---\ntitle: {LONG}\npermalink: long\n---\n- [fact] Too long\n",
                                               encoding="utf-8")
    return folder


def kuzu_with_a_refused_entity(tmp_path: Path) -> Path:
    kuzu = pytest.importorskip("kuzu", reason="the kuzu extra is not installed (uv sync --extra kuzu)")
    path = tmp_path / "memory.kuzu"
    database = kuzu.Database(str(path))
    connection = kuzu.Connection(database)
    connection.execute("CREATE NODE TABLE Entity(name STRING PRIMARY KEY, type STRING, observations STRING[], "
                       "created_date DATE)")
    connection.execute("CREATE REL TABLE RELATED_TO(FROM Entity TO Entity, relationship_type STRING, "
                       "confidence FLOAT, created_date DATE)")
    for name in ("alice", LONG):
        connection.execute(f"CREATE (:Entity {{name: '{name}', type: 'person', observations: ['Likes tea']}})")
    connection.close()
    database.close()
    return path


@pytest.mark.parametrize(("make", "place"), [
    (mem0_document_with_a_refused_memory, "memory 3 (id c): entity name:"),
    (mem0_lines_with_a_refused_memory, "line 3 (id c): entity name:"),
    (notes_with_a_refused_note, "note people/long.md: entity name:"),
    (kuzu_with_a_refused_entity, "memory.kuzu: entity 'xxxx"),
], ids=["mem0", "mem0-jsonl", "basic-memory", "kuzu"])
def test_a_record_of_another_server_the_tools_refuse_is_named_by_its_place_in_the_source(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], Path], place: str) -> None:
    """As the official file's lines are: reported, the rest imported (exit 1); not a line of the
    staging file the import reads, which nobody sees (a one-line JSON document has no line 3)."""
    source, store = make(tmp_path), tmp_path / "store"
    assert import_main([str(source), "--store", str(store), "--strict"]) == 1
    assert place in capsys.readouterr().err
    assert not store_exists(str(store))
    assert import_main([str(source), "--store", str(store)]) == 1
    err = capsys.readouterr().err
    [said] = [line for line in err.splitlines() if "entity name" in line]
    assert said.strip().startswith(place.partition(": entity name")[0]) and "line 3:" not in err
    workspace = "memory" if source.suffix == ".kuzu" else "default"
    assert "alice" in {entity["name"] for entity in graph_of(store, workspace)["entities"]}


def test_a_relation_to_nowhere_in_a_note_names_the_note_and_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = notes_with_a_refused_note(tmp_path)
    (folder / "alice.md").write_text("---\ntitle: alice\npermalink: alice\n---\n# Alice\n\n- [fact] Likes tea\n"
                                     "- knows [[Nobody]]\n", encoding="utf-8")
    assert import_main([str(folder), "--store", str(tmp_path / "store"), "--plan"]) == 1
    err = capsys.readouterr().err
    assert "note alice.md line 8: a relation whose end is in neither" in err


def test_the_conflicts_of_another_servers_memory_name_its_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({"results": [{"id": "a", "memory": "Likes tea", "user_id": "alice"},
                                            {"id": "b", "memory": "Plans trips", "agent_id": "alice"}]}),
                    encoding="utf-8")
    assert import_main([str(path), "--store", str(tmp_path / "store")]) == 0
    assert ("conflict: memory 2 (id b): 'alice' is a 'agent' there and a 'user' in memory 1 (id a); kept 'user'"
            in capsys.readouterr().err)


def test_many_refused_records_of_another_server_are_counted_as_records_with_their_places(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps([{"id": f"m{i}", "memory": "x", "user_id": LONG + str(i)} for i in range(7)]),
                    encoding="utf-8")
    assert import_main([str(path), "--store", str(tmp_path / "store"), "--plan"]) == 1
    assert ("entity name: expected `str` of length <= 512: 7 records (memory 1 (id m0), memory 2 (id m1), "
            "memory 3 (id m2), memory 4 (id m3), memory 5 (id m4) and 2 more)") in capsys.readouterr().err


def test_a_relation_to_nowhere_in_an_n2n_project_names_its_place_in_memory_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "shop"
    (project / ".mcp").mkdir(parents=True)
    (project / ".mcp" / "memory.json").write_text(json.dumps({
        "entities": [{"name": "Billing", "entityType": "component", "observations": ["Bills"]}],
        "relations": [{"from": "Billing", "to": "Ledger", "relationType": "writes"}]}), encoding="utf-8")
    assert import_main([str(project), "--store", str(tmp_path / "store")]) == 1
    err = capsys.readouterr().err
    assert ".mcp/memory.json relations[0]: workspace " in err and "no entity 'Ledger'" in err
