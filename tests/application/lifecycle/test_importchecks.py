"""What an import takes of a line: what the store holds (not a tool call's limits on content), the
tools' limits on what names something, refused loudly; fields it does not read, ignored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.application.engine.arguments import Limits
from chronograph.application.lifecycle.importing import FileImport
from chronograph.tools.export_graph import main as export_main
from chronograph.tools.import_graph import main as import_main


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def imported(path: Path, store: Path) -> FileImport:
    with FileImport(path, "default") as job, Memory(store) as memory:
        job.survey()
        job.check_ends(memory)
        job.write(memory)
        return job


def test_an_entity_grown_past_a_call_s_observations_comes_back_from_its_own_export_in_as_many_events(
        tmp_path: Path) -> None:
    """The documented migration path: what the store holds, exported, imports back whole."""
    many = [f"o{i}" for i in range(Limits.OBSERVATIONS)]
    with Memory(tmp_path / "a") as memory:
        memory.write("create_entities", {"entities": [{"name": "Many", "entityType": "t", "observations": many}]},
                     actor="t")
        memory.write("add_observations", {"observations": [{"entityName": "Many", "contents": ["one more"]}]},
                     actor="t")
        memory.write("create_entities", {"entities": [{"name": "Few", "entityType": "t", "observations": []}]},
                     actor="t")
        memory.write("create_relations", {"relations": [{"from": "Few", "to": "Many", "relationType": "r"}]},
                     actor="t")
        live = memory.log.head()
    assert export_main(["--store", str(tmp_path / "a"), "-o", str(tmp_path / "e.jsonl")]) == 0
    assert import_main([str(tmp_path / "e.jsonl"), "--store", str(tmp_path / "b")]) == 0
    with Memory(tmp_path / "b") as memory:
        graph: Any = memory.read("read_graph", {})
        assert [(e.name, e.observations) for e in graph.entities] == [("Many", [*many, "one more"]), ("Few", [])]
        assert [(r.source, r.target) for r in graph.relations] == [("Few", "Many")]
        assert memory.log.head() == live  # the creation, one addition, Few, the relation


def test_an_official_file_s_long_type_and_observation_import_whole_with_the_relations_naming_them(
        tmp_path: Path) -> None:
    """The official server takes an observation, a type of any length: its file is imported whole."""
    note, kind = "long note: " + "x" * (Limits.OBSERVATION + 600), "p" * (Limits.TYPE + 1)
    path = write_lines(tmp_path / "memory.jsonl", [
        {"type": "entity", "name": "Ada", "entityType": kind, "observations": ["short note", note]},
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": [f"b{i}" for i in range(2500)]},
        {"type": "relation", "from": "Bob", "to": "Ada", "relationType": "knows"}])
    job = imported(path, tmp_path / "store")
    assert not job.problems
    with Memory(tmp_path / "store") as memory:
        graph: Any = memory.read("read_graph", {})
        assert [(e.name, e.entity_type, len(e.observations)) for e in graph.entities] == [
            ("Ada", kind, 2), ("Bob", "person", 2500)]
        assert graph.entities[0].observations[1] == note
        assert [(r.source, r.relation_type, r.target) for r in graph.relations] == [("Bob", "knows", "Ada")]
        assert [e.name for e in memory.read("search_nodes", {"query": "long note"}).entities] == [  # type: ignore[attr-defined]
            "Ada"]


def test_a_name_no_tool_could_take_is_refused_on_its_line_and_a_relation_to_a_refused_entity_says_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "memory.jsonl", [
        {"type": "entity", "name": "N" * (Limits.NAME + 1), "entityType": "t", "observations": []},
        {"type": "entity", "name": "Ada", "entityType": "", "observations": ["kept nowhere"]},
        {"type": "entity", "name": "Bob", "entityType": "t", "observations": []},
        {"type": "relation", "from": "Bob", "to": "Ada", "relationType": "knows"},
        {"type": "relation", "from": "Bob", "to": "Cy", "relationType": "knows"}])
    assert import_main([str(path), "--store", str(tmp_path / "store")]) == 1
    err = capsys.readouterr().err
    assert f"line 1: entity name: expected `str` of length <= {Limits.NAME}" in err
    assert "line 4: a relation whose end the import refused (Bob -[knows]-> Ada: entity 'Ada' (line 2))" in err
    assert "line 5: a relation whose end is in neither the file nor the store" in err


def test_fields_the_format_does_not_name_are_ignored_and_counted_and_the_fork_s_still_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "memory.jsonl", [
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["tea"], "id": "e1",
         "createdAt": "2025-01-01T00:00:00Z"},
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": [], "id": "e2", "tags": []},
        {"type": "relation", "from": "Ada", "to": "Bob", "relationType": "knows", "id": "r1"}])
    said = "ignored 2 field(s) the format does not name: 'id' (3 line(s)), 'tags' (1 line(s))"
    assert import_main([str(path), "--store", str(tmp_path / "store"), "--plan"]) == 0
    assert f"plan: {said}" in capsys.readouterr().out
    assert import_main([str(path), "--store", str(tmp_path / "store")]) == 0
    assert said in capsys.readouterr().out
    with Memory(tmp_path / "store") as memory:
        graph: Any = memory.read("read_graph", {"includeMetadata": True})
        assert [(e.name, e.observations) for e in graph.entities] == [("Ada", ["tea"]), ("Bob", [])]
        assert graph.entities[0].metadata == {"importedCreatedAt": "2025-01-01T00:00:00Z"}
        assert len(graph.relations) == 1


def test_an_import_counts_what_it_wrote_and_what_the_file_repeated(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "memory.jsonl", [
        {"type": "entity", "name": "A", "entityType": "t", "observations": ["x", "x", "y"]},
        {"type": "relation", "from": "A", "to": "A", "relationType": "r"},
        {"type": "relation", "from": "A", "to": "A", "relationType": "r"}])
    with FileImport(path, "default") as job, Memory(tmp_path / "store") as memory:
        job.survey()
        job.check_ends(memory)
        [(_, report)] = job.write(memory)
        [entity] = memory.read("read_graph", {}).entities  # type: ignore[attr-defined]
    assert entity.observations == ["x", "y"]
    assert (report.created, report.related, report.observations, report.unwritten, report.repeated) == (1, 1, 2, 1, 1)
