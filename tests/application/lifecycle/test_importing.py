"""The streaming import: one batch held at a time, whatever the file's size, with the same rules."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import ChronographError, Memory
from chronograph.application.errors import SourceChangedError
from chronograph.application.lifecycle.importing import FileImport, ImportReport
from chronograph.tools.export_graph import main as export_main
from chronograph.tools.import_graph import main as import_main


def write_file(path: Path, entities: int, *, relations_first: bool = False) -> Path:
    lines = [{"type": "entity", "name": f"E{i}", "entityType": "thing", "observations": [f"o{i}", f"p{i}"]}
             for i in range(entities)]
    links = [{"type": "relation", "from": f"E{i}", "to": f"E{(i * 7 + 1) % entities}", "relationType": "knows"}
             for i in range(entities)]
    records = links + lines if relations_first else lines + links
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    return path


def imported(path: Path, store: Path, batch: int, calls: list[int] | None = None) -> tuple[FileImport, list[Any]]:
    with FileImport(path, "default", batch=batch) as job, Memory(store) as memory:
        job.survey()
        job.check_ends(memory)
        if calls is not None:
            write = memory.write

            def counted(tool: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
                calls.append(max(len(v) for v in arguments.values() if isinstance(v, list)) if any(
                    isinstance(v, list) for v in arguments.values()) else 1)
                return write(tool, arguments, **kwargs)

            memory.write = counted  # type: ignore[method-assign]
        return job, job.write(memory)


def graph(store: Path) -> Any:
    """Names, types, observations and relations (versions and times differ with the batches)."""
    with Memory(store) as memory:
        full = msgspec.to_builtins(memory.read("read_graph", {}))
    return ([(e["name"], e["entityType"], e["observations"]) for e in full["entities"]],
            [(r["from"], r["relationType"], r["to"], r.get("confidence")) for r in full["relations"]])


@pytest.mark.parametrize("entities", [40, 160])
def test_an_import_holds_and_writes_no_more_than_a_batch_whatever_the_file_size(tmp_path: Path,
                                                                                entities: int) -> None:
    calls: list[int] = []
    job, [(_, report)] = imported(write_file(tmp_path / "m.jsonl", entities), tmp_path / "s", batch=8, calls=calls)
    assert (report.created, report.related) == (entities, entities)
    assert job.held <= 8
    assert calls and max(calls) <= 8


def test_the_memory_an_import_takes_does_not_grow_with_the_file(tmp_path: Path) -> None:
    peaks = []
    for entities in (300, 1200):
        path = write_file(tmp_path / f"m{entities}.jsonl", entities)
        with FileImport(path, "default", batch=50) as job, Memory(tmp_path / f"s{entities}") as memory:
            tracemalloc.start()
            job.survey()
            job.check_ends(memory)
            job.write(memory)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    assert peaks[1] < peaks[0] * 1.5  # four times the file: not four times the memory


def test_batches_keep_the_rules_of_a_whole_file_import(tmp_path: Path) -> None:
    """Relations before the entities they name, a name repeated batches apart (one entity, every
    observation, the first type, the other a conflict), a relation repeated, bad lines: the same graph and report
    whether the file is written in batches of two or in one."""
    records = [
        {"type": "relation", "from": "Ada", "to": "Bob", "relationType": "knows"},
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["a"]},
        "{broken",
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": ["b"]},
        {"type": "entity", "name": "Cy", "entityType": "person", "observations": []},
        {"type": "entity", "name": "", "entityType": "person", "observations": []},
        {"type": "entity", "name": "Dee", "entityType": "person", "observations": ["d"]},
        {"type": "entity", "name": "Ada", "entityType": "robot", "observations": ["a", "a2"]},
        {"type": "relation", "from": "Ada", "to": "Bob", "relationType": "knows"},
        {"type": "relation", "from": "Dee", "to": "Nobody", "relationType": "knows"},
        {"type": "relation", "from": "Cy", "to": "Dee", "relationType": "met", "confidence": 0.5},
    ]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records), encoding="utf-8")
    results = []
    for batch in (2, 1000):
        store = tmp_path / f"s{batch}"
        job, [(_, report)] = imported(path, store, batch=batch)
        problems = [(kind, count, [p.line for p in first]) for kind, count, first in job.problems.kinds()]
        results.append((graph(store), report, problems))
    assert results[0] == results[1]
    the_graph, report, problems = results[0]
    assert report == ImportReport(created=4, related=2, observations=4, skipped=0, unwritten=1, repeated=1,
                                  conflicted=1, retyped=1, conflicts=[
        "line 8: 'Ada' is a 'robot' there and a 'person' on line 2; kept 'person', merged its observations"])
    assert the_graph[0][0] == ("Ada", "person", ["a", "a2"])
    assert [line for _, _, lines in problems for line in lines] == [3, 6, 10]


def test_strict_refuses_a_dangling_relation_far_down_the_file_before_writing_anything(tmp_path: Path,
                                                                                         capsys: Any) -> None:
    path = write_file(tmp_path / "m.jsonl", 3000)
    with path.open("a", encoding="utf-8") as file:
        file.write("\n" + json.dumps({"type": "relation", "from": "E1", "to": "Nobody", "relationType": "knows"}))
    store = tmp_path / "store"
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [{"name": "Kept", "entityType": "x", "observations": []}]},
                     actor="t")
        head = memory.log.head()
    assert import_main([str(path), "--store", str(store), "--strict"]) == 1
    assert "nothing was imported" in capsys.readouterr().err
    with Memory(store) as memory:
        assert memory.log.head() == head


def test_a_legacy_json_document_imports_in_batches_too(tmp_path: Path) -> None:
    document = {"entities": [{"name": f"E{i}", "entityType": "t", "observations": [str(i)]} for i in range(9)],
                "relations": [{"from": "E8", "to": "E0", "relationType": "r"}]}
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    job, [(_, report)] = imported(path, tmp_path / "s", batch=2)
    assert (report.created, report.related, job.held) == (9, 1, 2)


BREAKS = "a\u2028b\u2029c\x85d\x1ce"


@pytest.mark.parametrize("escaped", [True, False])
def test_a_line_break_unicode_knows_inside_a_string_does_not_end_a_jsonl_line(tmp_path: Path, escaped: bool) -> None:
    """Python's splitlines ends lines at U+2028 and its kin; JSON holds them raw in strings."""
    records = [{"type": "entity", "name": f"Ada{BREAKS}", "entityType": f"t{BREAKS}", "observations": [BREAKS]},
               {"type": "entity", "name": "Bob", "entityType": "t", "observations": []},
               {"type": "relation", "from": f"Ada{BREAKS}", "to": "Bob", "relationType": f"r{BREAKS}"}]
    path = tmp_path / "memory.jsonl"
    path.write_text("\r\n".join(json.dumps(r, ensure_ascii=escaped) for r in records) + "\n", encoding="utf-8")
    assert import_main([str(path), "--store", str(tmp_path / "store")]) == 0
    with Memory(tmp_path / "store") as memory:
        graph = memory.read("read_graph", {})
    assert [(e.name, e.entity_type, e.observations) for e in graph.entities] == [  # type: ignore[attr-defined]
        (f"Ada{BREAKS}", f"t{BREAKS}", [BREAKS]), ("Bob", "t", [])]
    assert [r.relation_type for r in graph.relations] == [f"r{BREAKS}"]  # type: ignore[attr-defined]


def test_every_workspace_exported_to_jsonl_comes_back_whole_whatever_its_names_hold(tmp_path: Path) -> None:
    with Memory(tmp_path / "source") as memory:
        for workspace in ("alpha", f"beta{BREAKS}"):
            memory.write("create_entities", {"workspace": workspace, "entities": [
                {"name": f"{workspace} one", "entityType": "t", "observations": [f"x{BREAKS}"]}]}, actor="t")
    out = tmp_path / "all.jsonl"
    assert export_main(["--store", str(tmp_path / "source"), "--all-workspaces", "-o", str(out)]) == 0
    assert "\u2028" not in out.read_text(encoding="utf-8")  # escaped: any line reader splits it right
    assert import_main([str(out), "--store", str(tmp_path / "copy")]) == 0
    with Memory(tmp_path / "copy") as memory:
        for workspace in ("alpha", f"beta{BREAKS}"):
            [entity] = memory.read("read_graph", {"workspace": workspace}).entities  # type: ignore[attr-defined]
            assert (entity.name, entity.observations) == (f"{workspace} one", [f"x{BREAKS}"])


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_an_entity_s_observations_keep_their_order_through_an_export_and_import_whatever_their_valid_times(
        tmp_path: Path, fmt: str) -> None:
    with Memory(tmp_path / "source") as memory:
        memory.write("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": ["o1", "o2"]}]},
                     actor="t")
        for contents, span in ((["o3"], {"validUntil": "2001-01-01T00:00:00Z"}), (["o4", "o5"], {}),
                               (["o6"], {"validFrom": "2000-01-01T00:00:00Z"}), (["o7"], {})):
            memory.write("add_observations", {"observations": [{"entityName": "A", "contents": contents, **span}]},
                         actor="t")
    out = tmp_path / f"graph.{fmt}"
    assert export_main(["--store", str(tmp_path / "source"), "--format", fmt, "-o", str(out)]) == 0
    assert import_main([str(out), "--store", str(tmp_path / "copy")]) == 0
    for valid_at in ("2000-06-01T00:00:00Z", "2026-01-01T00:00:00Z"):
        seen = []
        for store in ("source", "copy"):
            with Memory(tmp_path / store) as memory:
                [entity] = memory.read("open_nodes", {"names": ["A"], "validAt": valid_at}).entities  # type: ignore[attr-defined]
                seen.append(entity.observations)
        assert seen[0] == seen[1] and seen[0][0] == "o1"
    assert seen[0] == ["o1", "o2", "o4", "o5", "o6", "o7"]


@pytest.mark.parametrize("form", ["jsonl", "json"])
def test_a_file_that_begins_with_a_byte_order_mark_imports_whole(tmp_path: Path, form: str) -> None:
    records = [{"type": "entity", "name": "Ada", "entityType": "t", "observations": ["x"]},
               {"type": "entity", "name": "Bob", "entityType": "t", "observations": []}]
    if form == "jsonl":
        text = "\n".join(json.dumps(r) for r in records)
    else:
        text = json.dumps({"entities": [{k: v for k, v in r.items() if k != "type"} for r in records],
                           "relations": []})
    path = tmp_path / f"memory.{form}"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert import_main([str(path), "--store", str(tmp_path / "store")]) == 0
    with Memory(tmp_path / "store") as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Ada", "Bob"]  # type: ignore[attr-defined]


def test_a_json_export_imported_back_into_its_store_reports_no_conflict(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "t", "observations": ["x"], "metadata": {"k": 1}},
            {"name": "Bob", "entityType": "t", "observations": []}]}, actor="t")
    out = tmp_path / "graph.json"
    assert export_main(["--store", str(tmp_path / "store"), "--format", "json", "-o", str(out)]) == 0
    capsys.readouterr()
    assert import_main([str(out), "--store", str(tmp_path / "store")]) == 0
    said = capsys.readouterr().out
    assert "0 conflict(s)" in said and "other metadata" not in said


def test_a_relation_whose_end_leaves_the_store_during_the_import_is_a_problem_not_a_stop(tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": []},
        {"type": "relation", "from": "Bob", "to": "Ada", "relationType": "knows"},
        {"type": "relation", "from": "Bob", "to": "Cy", "relationType": "knows"}]) + "\n")
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [{"name": n, "entityType": "person", "observations": []}
                                                      for n in ("Ada", "Cy")]}, actor="t")
        for strict in (False, True):
            with FileImport(path, "default", strict=strict) as job:
                job.survey()
                job.check_ends(memory)  # both ends are in the store: checked
                memory.write("delete_entities", {"entityNames": ["Ada"]}, actor="another process")
                if strict:
                    with pytest.raises(ChronographError, match="no entity named 'Ada'"):
                        job.write(memory)
                    continue
                ((_, report),) = job.write(memory)
                problems = [(kind, [p.line for p in first]) for kind, _, first in job.problems.kinds()]
                memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person",
                                                               "observations": []}]}, actor="t")
        graph = msgspec.to_builtins(memory.read("read_graph", {}))
    assert (report.created, report.related, report.skipped) == (1, 1, 0)
    assert problems == [("a relation whose end left the store during the import", [2])]
    assert [(r["from"], r["to"]) for r in graph["relations"]] == [("Bob", "Cy")]


def test_a_later_line_of_an_entity_removed_mid_import_is_a_problem_not_a_stop(tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["first"]},
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": ["here"]},
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["second"]}]) + "\n")
    with Memory(tmp_path / "store") as memory:
        def meanwhile(stage: str, done: int, total: int) -> None:
            if stage == "entities" and done == 1:  # after the first batch, another process deletes Ada
                memory.write("delete_entities", {"entityNames": ["Ada"]}, actor="another process")

        with FileImport(path, "default", batch=1, progress=meanwhile) as job:
            job.survey()
            job.check_ends(memory)
            ((_, report),) = job.write(memory)
            problems = [(kind, [p.line for p in first]) for kind, _, first in job.problems.kinds()]
        graph = msgspec.to_builtins(memory.read("read_graph", {}))
    assert problems == [("an entity that left the store during the import", [3])]
    assert report.created == 2 and [e["name"] for e in graph["entities"]] == ["Bob"]


def test_an_entity_another_process_makes_during_the_import_gets_the_file_s_observations_and_counts_them_once(
        tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["first"]},
        {"type": "entity", "name": "Bob", "entityType": "person", "observations": ["from the file", "and more"]}
    ]) + "\n")
    with Memory(tmp_path / "store") as memory:  # empty when the import began: nothing to look up
        def meanwhile(stage: str, done: int, total: int) -> None:
            if stage == "entities" and done == 1:
                memory.write("create_entities", {"entities": [{"name": "Bob", "entityType": "person",
                                                               "observations": ["theirs"]}]}, actor="another")

        with FileImport(path, "default", batch=1, progress=meanwhile) as job:
            job.survey()
            ((_, report),) = job.write(memory)
        graph = msgspec.to_builtins(memory.read("read_graph", {}))
    assert {e["name"]: e["observations"] for e in graph["entities"]} == {
        "Ada": ["first"], "Bob": ["theirs", "from the file", "and more"]}
    assert (report.created, report.observations) == (1, 3)


def test_an_entity_another_process_makes_and_removes_during_the_import_is_a_problem_of_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronograph.application.lifecycle.importwriter import Writer  # noqa: PLC0415

    path = tmp_path / "memory.jsonl"
    path.write_text(json.dumps({"type": "entity", "name": "Bob", "entityType": "person",
                                "observations": ["from the file"]}) + "\n")
    real = Writer.call
    with Memory(tmp_path / "store") as memory:
        def call(writer: Writer, tool: str, arguments: dict[str, Any]) -> Any:
            if tool != "create_entities":
                return real(writer, tool, arguments)
            bob = {"name": "Bob", "entityType": "person", "observations": []}
            memory.write("create_entities", {"entities": [bob]}, actor="another")  # after the import looked
            try:
                return real(writer, tool, arguments)  # skips Bob: he exists
            finally:
                memory.write("delete_entities", {"entityNames": ["Bob"]}, actor="another")

        monkeypatch.setattr(Writer, "call", call)
        with FileImport(path, "default") as job:
            job.survey()
            ((_, report),) = job.write(memory)
            problems = [(kind, [p.line for p in first]) for kind, _, first in job.problems.kinds()]
    assert problems == [("an entity that left the store during the import", [1])]
    assert (report.created, report.observations) == (0, 0)


@pytest.mark.parametrize("record", [
    {"type": "entity", "name": "Late", "entityType": "x", "observations": ["o"],
     "validity": {"o": {"validFrom": "soon"}}},
    {"type": "entity", "name": "Late", "entityType": "x", "observations": ["o"],
     "validity": {"o": {"validFrom": "2026-02-01", "validUntil": "2026-01-01"}}},
    {"type": "relation", "from": "E1", "to": "E2", "relationType": "met", "validUntil": "someday"},
], ids=["entity's time", "entity's span backwards", "relation's time"])
def test_strict_refuses_a_bad_valid_time_far_down_the_file_before_writing_anything(
    tmp_path: Path, capsys: Any, record: dict[str, Any],
) -> None:
    path = write_file(tmp_path / "m.jsonl", 3000)
    with path.open("a", encoding="utf-8") as file:
        file.write("\n" + json.dumps(record))
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store), "--strict"]) == 1
    err = capsys.readouterr().err
    assert "nothing was imported" in err and "valid" in err
    assert not store.exists()
    assert import_main([str(path), "--store", str(store)]) == 1  # without --strict: that line left out, the rest in
    assert len(graph(store)[0]) == 3000


def test_a_workspace_no_tool_takes_is_refused_before_anything_is_written(tmp_path: Path, capsys: Any) -> None:
    good = [{"type": "entity", "name": "A", "entityType": "x", "observations": []}]
    lines = [{"type": "workspace", "name": "lab"}, *good, {"type": "workspace", "name": "   "}, *good]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    store = tmp_path / "store"
    for plan in (["--plan"], [], ["--strict"]):
        assert import_main([str(path), "--store", str(store), *plan]) == 2
        assert "workspace: must not be blank; nothing was written" in capsys.readouterr().err
        assert not store.exists()  # not even an empty store


def test_a_file_holding_a_relation_with_a_valid_time_imports_again_writing_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"type": "entity", "name": "Ada", "entityType": "person", "observations": []},
        {"type": "entity", "name": "Acme", "entityType": "org", "observations": []},
        {"type": "relation", "from": "Ada", "to": "Acme", "relationType": "works_at", "validFrom": "2020-01-01",
         "confidence": 0.5},
        {"type": "relation", "from": "Acme", "to": "Ada", "relationType": "pays", "validUntil": "2030-01-01"}]))
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store)]) == 0
    with Memory(store) as memory:
        head = memory.log.head()
    capsys.readouterr()
    assert import_main([str(path), "--store", str(store)]) == 0
    assert "0 conflict(s)" in capsys.readouterr().out
    path.write_text(path.read_text().replace("2020-01-01", "2021-01-01"))
    assert import_main([str(path), "--store", str(store)]) == 0
    assert "works_at]-> Acme exists with another confidence, metadata or valid time" in capsys.readouterr().err
    with Memory(store) as memory:
        assert memory.log.head() == head


@pytest.mark.parametrize("batch", [3, 1000])
def test_a_name_on_many_lines_is_one_entity_of_every_observation_with_its_valid_time_however_many(
        tmp_path: Path, batch: int) -> None:
    """Lines of one name merge within a batch and across batches, past the observations one call
    may carry, and what a later line says of when an observation was true is kept."""
    def x(observations: list[str], **more: Any) -> dict[str, Any]:
        return {"type": "entity", "name": "X", "entityType": "t", "observations": observations, **more}

    paris = {"validFrom": "2020-01-01T00:00:00Z", "validUntil": "2021-01-01T00:00:00Z"}
    lines = [x([f"fact {i}" for i in range(600)]),
             {"type": "entity", "name": "Y", "entityType": "t", "observations": []},
             x([f"fact {i}" for i in range(400, 1300)]), x(["lived in Paris"], validity={"lived in Paris": paris})]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in lines))
    job, [(_, report)] = imported(path, tmp_path / "store", batch=batch)
    assert list(job.problems.kinds()) == []
    assert report.observations == 1301
    with Memory(tmp_path / "store") as memory:
        for valid_at, last in (("2020-06-01T00:00:00Z", "lived in Paris"), ("2026-01-01T00:00:00Z", "fact 1299")):
            [x] = memory.read("open_nodes", {"names": ["X"], "validAt": valid_at}).entities  # type: ignore[attr-defined]
            assert x.observations[:2] == ["fact 0", "fact 1"] and x.observations[-1] == last
        assert len(x.observations) == 1300


def test_what_an_import_finds_present_is_counted_once_whatever_its_conflicts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Entities and relations the store holds, with another type, metadata or confidence: each is
    present once (skipped) unless the file gave it something new, and each difference a conflict."""
    store, path = tmp_path / "store", tmp_path / "m.jsonl"
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [
            {"name": n, "entityType": "t", "observations": ["old"], "metadata": {"k": 1}} for n in "ABC"]}, actor="t")
        memory.write("create_relations", {"relations": [
            {"from": "A", "to": "B", "relationType": "r", "confidence": 0.5},
            {"from": "B", "to": "C", "relationType": "r", "confidence": 0.5}]}, actor="t")
    path.write_text("\n".join(json.dumps(r) for r in [
        {"type": "entity", "name": "A", "entityType": "u", "observations": ["old", "new"], "metadata": {"k": 2}},
        *[{"type": "entity", "name": n, "entityType": "u", "observations": [], "metadata": {"k": 2}} for n in "BC"],
        {"type": "relation", "from": "A", "to": "B", "relationType": "r", "confidence": 0.9},
        {"type": "relation", "from": "B", "to": "C", "relationType": "r", "confidence": 0.9}]))
    assert import_main([str(path), "--store", str(store)]) == 0
    assert ("0 entities, 0 relations, 1 observations; 4 already present (skipped); not written again: 1 "
            "observation(s) repeated in the file or held already; 8 conflict(s)") in capsys.readouterr().out


@pytest.mark.parametrize("change", ["rewritten", "grown"])
def test_a_file_that_changes_after_it_was_checked_is_refused_before_its_first_write(
        tmp_path: Path, change: str) -> None:
    """The official server rewrites its file on every call: lines the survey never checked are
    not written."""
    path = write_file(tmp_path / "m.jsonl", 40)
    with FileImport(path, "default", batch=10) as job, Memory(tmp_path / "store") as memory:
        job.survey()
        job.check_ends(memory)
        if change == "rewritten":
            path.write_text(json.dumps({"type": "entity", "name": "B"}), encoding="utf-8")
        else:
            with path.open("a", encoding="utf-8") as file:
                file.write("\n" + json.dumps({"type": "entity", "name": "C", "entityType": "t", "observations": []}))
        with pytest.raises(SourceChangedError, match="changed while it was imported.*nothing was written"):
            job.write(memory)
        assert memory.log.head() == 0


def test_a_file_that_changes_while_it_is_written_stops_the_import_at_the_next_batch(tmp_path: Path) -> None:
    path = write_file(tmp_path / "m.jsonl", 40)
    with FileImport(path, "default", batch=10) as job, Memory(tmp_path / "store") as memory:
        job.survey()
        job.check_ends(memory)
        write = memory.write

        def then_changed(tool: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
            done = write(tool, arguments, **kwargs)
            path.write_text(path.read_text(encoding="utf-8").replace("thing", "thang"), encoding="utf-8")
            return done

        memory.write = then_changed  # type: ignore[method-assign]
        with pytest.raises(SourceChangedError, match="what was written of it stays"):
            job.write(memory)
        assert len(memory.read("read_graph", {}).entities) == 10  # type: ignore[attr-defined]


@pytest.mark.parametrize("layout", ["indent 0", "an object a line", "one object a line", "the first on the first line",
                                    "the key alone on the first line"])
def test_a_json_document_written_with_an_object_a_line_is_read_as_one_document(tmp_path: Path, layout: str) -> None:
    entities = [{"name": "Ada", "entityType": "person", "observations": ["x"]},
                {"name": "Bob", "entityType": "person", "observations": []}]
    entities = entities[:1] if layout == "one object a line" else entities
    document = {"entities": entities, "relations": []}
    if layout == "indent 0":
        text = json.dumps(document, indent=0)
    elif layout == "the first on the first line":
        text = '{"entities": [' + ",\n".join(json.dumps(e) for e in entities) + '\n], "relations": []}'
    elif layout == "the key alone on the first line":
        text = '{"entities":\n[\n' + ",\n".join(json.dumps(e) for e in entities) + '\n], "relations": []}'
    else:
        text = '{"entities": [\n' + ",\n".join(json.dumps(e) for e in entities) + '\n], "relations": []}'
    path = tmp_path / "memory.json"
    path.write_text(text, encoding="utf-8")
    assert import_main([str(path), "--store", str(tmp_path / "store")]) == 0
    with Memory(tmp_path / "store") as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == [e["name"] for e in entities]  # type: ignore[attr-defined]


def test_jsonl_whose_first_line_is_cut_short_after_a_comma_is_read_as_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    lines = [json.dumps({"type": "entity", "name": n, "entityType": "t", "observations": []}) for n in ("Ada", "Bob")]
    path.write_text('{"type": "entity", "name": "broken",\n' + "\n".join(lines), encoding="utf-8")
    job, [(_, report)] = imported(path, tmp_path / "store", batch=10)
    assert report.created == 2 and [p.line for _, _, first in job.problems.kinds() for p in first] == [1]


def test_an_export_of_facts_that_stopped_being_true_imports_again_writing_nothing(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Bob", "entityType": "t", "observations": ["works at Acme", "likes tea"]}]}, actor="t")
        memory.write("add_observations", {"observations": [{"entityName": "Bob", "contents": ["lived in Rome"],
                                                            "validFrom": "2001-01-01", "validUntil": "2002-01-01"}]},
                     actor="t")
        memory.write("invalidate_observations", {"observations": [
            {"entityName": "Bob", "observations": ["works at Acme"], "at": "2022-01-01"}]}, actor="t")
    out = tmp_path / "graph.jsonl"
    assert export_main(["--store", str(tmp_path / "store"), "-o", str(out)]) == 0
    for store in ("store", "copy", "copy"):
        with Memory(tmp_path / store) as memory:
            head = memory.log.head()
        assert import_main([str(out), "--store", str(tmp_path / store)]) == 0
        with Memory(tmp_path / store) as memory:
            assert memory.log.head() == head or head == 0  # only the first import into the copy writes
            [bob] = memory.read("open_nodes", {"names": ["Bob"]}).entities  # type: ignore[attr-defined]
            assert bob.observations == ["likes tea"]


def test_an_export_taken_before_a_fact_was_invalidated_does_not_make_it_true_again(tmp_path: Path) -> None:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Bob", "entityType": "t", "observations": ["works at Acme", "likes tea"]}]}, actor="t")
    for form in ("official", "export"):
        out = tmp_path / f"{form}.jsonl"
        if form == "export":  # with valid times: "works at Acme" from its start, no end
            assert export_main(["--store", str(tmp_path / "store"), "-o", str(out)]) == 0
        else:  # the official server's file: no valid times at all
            out.write_text(json.dumps({"type": "entity", "name": "Bob", "entityType": "t",
                                       "observations": ["works at Acme", "likes tea", "plays chess"]}) + "\n")
    with Memory(tmp_path / "store") as memory:
        memory.write("invalidate_observations", {"observations": [
            {"entityName": "Bob", "observations": ["works at Acme"], "at": "2022-01-01"}]}, actor="t")
    for form in ("official", "export"):
        assert import_main([str(tmp_path / f"{form}.jsonl"), "--store", str(tmp_path / "store")]) == 0
        with Memory(tmp_path / "store") as memory:
            [bob] = memory.read("open_nodes", {"names": ["Bob"]}).entities  # type: ignore[attr-defined]
            assert bob.observations == ["likes tea", "plays chess"]  # what the file adds, not what ended
