"""Moving in and out: importing official memory files, exporting every format, round trips."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.eventstore import StoreOpenError
from chronograph.projections import WorkspaceIndex
from chronograph.projections.search import indexes
from chronograph.tools.cli import main as chronograph_main
from chronograph.tools.common.parsing import store_location
from chronograph.tools.export_graph import main as export_main
from chronograph.tools.import_graph import main as import_main

OFFICIAL = "\n".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) for line in [
    {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["math", "ünïcode ✓"]},
    {"type": "entity", "name": "Bob \"the builder\"", "entityType": "person", "observations": []},
    {"type": "entity", "name": "Engine [v1]", "entityType": "machine", "observations": ["a|b", "x\ny"]},
    {"type": "relation", "from": "Ada", "to": "Bob \"the builder\"", "relationType": "knows"},
    {"type": "relation", "from": "Bob \"the builder\"", "to": "Engine [v1]", "relationType": "builds"},
])


def graph_of(store: Path, workspace: str = "default") -> dict[str, Any]:
    with Memory(store) as memory:
        import msgspec

        full = msgspec.to_builtins(memory.read("read_graph", {"workspace": workspace}))
    return {
        "entities": [(e["name"], e["entityType"], e["observations"]) for e in full["entities"]],
        "relations": [(r["from"], r["relationType"], r["to"]) for r in full["relations"]],
    }


def head(store: Path) -> int:
    with Memory(store) as memory:
        return memory.log.head()


@pytest.fixture
def official_file(tmp_path: Path) -> Path:
    path = tmp_path / "memory.jsonl"
    path.write_text(OFFICIAL, encoding="utf-8")
    return path


def test_an_official_file_imports_as_events_by_the_import_actor(official_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store"
    assert import_main([str(official_file), "--store", str(store)]) == 0
    assert "3 entities, 2 relations, 4 observations; 0 already present" in capsys.readouterr().out
    graph = graph_of(store)
    assert graph["entities"][0] == ("Ada", "person", ["math", "ünïcode ✓"])
    assert graph["relations"] == [("Ada", "knows", 'Bob "the builder"'), ('Bob "the builder"', "builds", "Engine [v1]")]
    with Memory(store) as memory:
        events = list(memory.log.read_all())
    assert {e.actor for e in events} == {"import"} and len({e.correlation_id for e in events}) == 1


def test_importing_the_same_file_twice_changes_nothing(official_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store"
    import_main([str(official_file), "--store", str(store)])
    before = head(store)
    assert import_main([str(official_file), "--store", str(store)]) == 0
    assert "0 entities, 0 relations, 0 observations; 5 already present" in capsys.readouterr().out
    assert head(store) == before


def test_bad_lines_are_reported_by_number_and_the_good_ones_imported(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join([
        '{"type":"entity","name":"Ada","entityType":"person","observations":[]}',
        "{not json",
        '{"type":"entity","name":"","entityType":"x","observations":[]}',
        '{"type":"thing"}',
        '{"type":"relation","from":"Ada","to":"Nobody","relationType":"knows"}',
        "",
        '{"type":"entity","name":"Bob","entityType":"person","observations":[]}',
    ]))
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store)]) == 1
    captured = capsys.readouterr()
    assert "2 entities, 0 relations" in captured.out
    errors = [line for line in captured.err.splitlines() if line.startswith("  line")]
    assert [line.split(":")[0].strip() for line in errors] == ["line 2", "line 3", "line 4", "line 5"]
    assert "no entity 'Nobody'" in errors[3] and "name" in errors[1]


def test_strict_aborts_with_nothing_written(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "memory.jsonl"
    path.write_text('{"type":"entity","name":"Ada","entityType":"p","observations":[]}\n{broken')
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store), "--strict"]) == 1
    assert "nothing was imported" in capsys.readouterr().err
    assert head(store) == 0


def test_lines_that_are_not_utf8_are_refused_not_read_as_other_names(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "latin1.jsonl"  # saved as Latin-1: read with replacement, both would be "M\ufffdller"
    path.write_bytes(b"".join(json.dumps({"type": "entity", "name": name, "entityType": "person",
                                          "observations": [where]}, ensure_ascii=False).encode("latin-1") + b"\n"
                              for name, where in (("M\u00fcller", "Bonn"), ("M\u00f6ller", "Oslo"), ("Other", "x"))))
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store), "--strict"]) == 1
    assert "  not UTF-8 text: 2 lines (1, 2)\n--strict: 2 problem(s); nothing was imported" in capsys.readouterr().err
    assert head(store) == 0
    path.write_bytes(path.read_bytes().split(b"\n", 1)[1])  # one such line: its detail is shown
    assert import_main([str(path), "--store", str(store)]) == 1
    said = capsys.readouterr().err
    assert "line 1: not UTF-8 text (byte 0xf6 at byte 30 of the line; save the file as UTF-8)" in said
    assert graph_of(store)["entities"] == [("Other", "person", ["x"])]


def test_each_line_of_a_file_ended_by_carriage_returns_is_read_on_its_own(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    def entity(name: str) -> str:
        return json.dumps({"type": "entity", "name": name, "entityType": "p", "observations": []}, ensure_ascii=False)

    path = tmp_path / "mac.jsonl"  # a classic Mac file: lines end in CR alone, one of them Latin-1
    path.write_bytes(b"\r".join([entity("A").encode(), entity("M\u00fcller").encode("latin-1"), entity("B").encode(),
                                 b"\xff", entity("C").encode()]) + b"\r")
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store)]) == 1
    said = capsys.readouterr().err
    assert "line 2: not UTF-8 text (byte 0xfc at byte 30 of the line; save the file as UTF-8)" in said
    assert "line 4: not JSON (bytes that are not UTF-8 text)" in said
    assert [name for name, _, _ in graph_of(store)["entities"]] == ["A", "B", "C"]


def test_a_binary_file_is_not_taken_for_a_memory_file_for_the_one_line_that_is_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import random

    noise = bytes(random.Random(7).randrange(128, 256) for _ in range(4000))  # no byte of it is UTF-8 alone
    path = tmp_path / "picture.png"
    path.write_bytes(b"\n".join(noise[i:i + 40] for i in range(0, 4000, 40)) + b"\n"
                     + b'{"type":"entity","name":"Ada","entityType":"p","observations":[]}\n')
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store)]) == 1
    assert "is not a memory file (JSONL or JSON): 100 of its 101 lines" in capsys.readouterr().err
    assert not store.exists()


def test_a_line_nested_too_deep_is_one_problem_not_the_end_of_the_import(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "deep.jsonl"
    path.write_text('{"type":"entity","name":"Ada","entityType":"p","observations":[]}\n'
                    + '{"type":"entity","name":"Deep","entityType":"p","observations":' + "[" * 100_000 + "]" * 100_000
                    + "}\n")
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store)]) == 1
    assert "line 2: nested too deep" in capsys.readouterr().err
    assert graph_of(store)["entities"] == [("Ada", "p", [])]


def test_an_import_a_batch_of_fails_says_what_the_batches_before_it_stored(
    official_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from chronograph.application.errors import NotFoundError
    from chronograph.application.lifecycle.importwriter import Writer

    def gone(self: Writer) -> None:  # an end forgotten by another process since the file was checked
        raise NotFoundError("Cannot create relations: no entity named 'Ada'; nothing was written")

    monkeypatch.setattr(Writer, "relations", gone)
    store = tmp_path / "store"
    assert import_main([str(official_file), "--store", str(store)]) == 2
    said = capsys.readouterr().err
    assert "nothing was written (in the batch it met; the batches before it stay: 3 entities, 0 relations" in said
    assert "Import the file again once that is fixed" in said and len(graph_of(store)["entities"]) == 3


def test_an_import_that_only_added_observations_before_a_refused_batch_says_so(
    official_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from chronograph.application.errors import NotFoundError
    from chronograph.application.lifecycle.importwriter import Writer

    store = tmp_path / "store"
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]},
                     actor="t")
    path = tmp_path / "more.jsonl"
    path.write_text('{"type":"entity","name":"Ada","entityType":"person","observations":["new"]}\n')

    def gone(self: Writer) -> None:
        raise NotFoundError("Cannot create relations: no entity named 'Ada'; nothing was written")

    monkeypatch.setattr(Writer, "relations", gone)
    assert import_main([str(path), "--store", str(store)]) == 2
    assert "0 entities, 0 relations and 1 observations of this file are stored" in capsys.readouterr().err


@pytest.mark.parametrize("batch", [1000, 1])  # the two lines in one batch, and in two
def test_a_name_given_two_types_in_one_file_is_a_conflict_and_keeps_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], batch: int
) -> None:
    from chronograph.application.lifecycle import importing

    monkeypatch.setitem(importing.FileImport.__init__.__kwdefaults__, "batch", batch)
    path = tmp_path / "twice.jsonl"
    path.write_text('{"type":"entity","name":"Ada","entityType":"person","observations":["a"]}\n'
                    '{"type":"entity","name":"Ada","entityType":"robot","observations":["b"]}\n')
    store = tmp_path / "store"
    assert import_main([str(path), "--store", str(store)]) == 0
    said = capsys.readouterr()
    assert "1 entities" in said.out and "0 already present (skipped); 1 conflict(s)" in said.out
    assert "line 2: 'Ada' is a 'robot' there and a 'person' on line 1; kept 'person'" in said.err
    assert graph_of(store)["entities"] == [("Ada", "person", ["a", "b"])]


def test_the_legacy_json_and_the_fork_files_import_too(tmp_path: Path) -> None:
    legacy = tmp_path / "memory.json"
    legacy.write_text(json.dumps({"entities": [{"name": "Ada", "entityType": "p", "observations": ["o"]}],
                                  "relations": []}))
    fork = tmp_path / "fork.jsonl"
    fork.write_text(json.dumps({"type": "entity", "name": "Cy", "entityType": "p", "observations": [],
                                "createdAt": "2025-01-02T03:04:05.000Z", "version": 3}) + "\n" +
                    json.dumps({"type": "relation", "from": "Cy", "to": "Cy", "relationType": "is",
                                "createdAt": "2025-01-02T03:04:05.000Z", "version": 1}))
    store = tmp_path / "store"
    assert import_main([str(legacy), "--store", str(store)]) == 0
    assert import_main([str(fork), "--store", str(store), "--workspace", "w"]) == 0
    assert graph_of(store)["entities"] == [("Ada", "p", ["o"])]
    with Memory(store) as memory:
        [cy] = memory.read("open_nodes", {"names": ["Cy"], "workspace": "w"}).entities  # type: ignore[attr-defined]
    assert cy.metadata == {"importedCreatedAt": "2025-01-02T03:04:05.000Z", "importedVersion": 3}


def test_official_round_trip_import_export_import_keeps_the_graph(official_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    first, second = tmp_path / "first", tmp_path / "second"
    import_main([str(official_file), "--store", str(first)])
    exported = tmp_path / "exported.jsonl"
    assert export_main(["--store", str(first), "--format", "jsonl", "-o", str(exported)]) == 0
    assert exported.read_text(encoding="utf-8") == OFFICIAL  # byte for byte the official layout
    import_main([str(exported), "--store", str(second)])
    assert graph_of(second) == graph_of(first)


@pytest.mark.parametrize("fmt", ["json", "markdown", "mermaid", "dot"])
def test_every_format_renders_every_name(official_file: Path, tmp_path: Path, capsys, fmt: str) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store"
    import_main([str(official_file), "--store", str(store)])
    capsys.readouterr()
    assert export_main(["--store", str(store), "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        assert json.loads(out)["entities"][1]["name"] == 'Bob "the builder"'
    elif fmt == "markdown":
        assert out.startswith("# Knowledge graph: default") and "## machine" in out
        assert "- x y" in out and '**Ada** knows **Bob "the builder"**' in out and "Engine \\[v1\\]" in out
    elif fmt == "mermaid":
        assert out.startswith("graph LR") and "Bob #quot;the builder#quot;" in out and "a|b" not in out
        assert '-->|"knows"|' in out
    else:
        assert out.startswith('digraph "memory: default"') and '"Bob \\"the builder\\""' in out
        assert '"Ada" -> "Bob \\"the builder\\"" [label="knows"];' in out


def test_export_at_a_past_moment(official_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store"
    import_main([str(official_file), "--store", str(store)])
    capsys.readouterr()
    assert export_main(["--store", str(store), "--format", "jsonl", "--at", "1"]) == 0
    assert [json.loads(line)["name"] for line in capsys.readouterr().out.splitlines()] == ["Ada"]


def test_a_file_with_nothing_to_import_creates_no_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n{\"type\": \"thing\"}\n")
    store = tmp_path / "store"
    assert import_main([str(bad), "--store", str(store)]) == 1
    assert not store.exists()
    assert import_main([str(official_lines(tmp_path)), "--store", str(store), "--strict"]) == 1  # a relation to nowhere
    assert not store.exists()
    assert "nothing was imported" in capsys.readouterr().err


def official_lines(tmp_path: Path) -> Path:
    path = tmp_path / "dangling.jsonl"
    path.write_text('{"type":"entity","name":"Ada","entityType":"person","observations":[]}\n'
                    '{"type":"relation","from":"Ada","to":"Nobody","relationType":"knows"}\n')
    return path


def test_an_entity_whose_type_differs_from_the_stored_one_is_reported_as_a_conflict(
    official_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    assert import_main([str(official_file), "--store", str(store)]) == 0
    robot = tmp_path / "robot.jsonl"
    robot.write_text('{"type":"entity","name":"Ada","entityType":"robot","observations":["gears"]}\n')
    capsys.readouterr()
    assert import_main([str(robot), "--store", str(store)]) == 0
    captured = capsys.readouterr()
    assert "1 conflict(s)" in captured.out
    assert "'Ada' is a 'robot' in the file and a 'person' in the store; kept 'person', merged 1" in captured.err
    assert graph_of(store)["entities"][0] == ("Ada", "person", ["math", "ünïcode ✓", "gears"])


@pytest.mark.parametrize(("name", "expected"), [
    ("graph.md", "# Knowledge graph"), ("graph.dot", "digraph"), ("graph.mmd", "graph LR"),
    ("graph.json", '"entities"'), ("graph.jsonl", '{"type":"entity"'), ("graph.txt", '{"type":"entity"'),
])
def test_the_export_format_follows_the_output_suffix(
    official_file: Path, tmp_path: Path, name: str, expected: str
) -> None:
    store = tmp_path / "store"
    import_main([str(official_file), "--store", str(store)])
    assert export_main(["--store", str(store), "-o", str(tmp_path / name)]) == 0
    assert (tmp_path / name).read_text().startswith(expected) or expected in (tmp_path / name).read_text()[:200]


def test_exporting_a_workspace_that_does_not_exist_says_so_and_lists_the_others(
    official_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    import_main([str(official_file), "--store", str(store), "--workspace", "lab"])
    capsys.readouterr()
    assert export_main(["--store", str(store), "--workspace", "lba"]) == 2
    assert "no workspace 'lba'" in capsys.readouterr().err and "'lab'" in capsys.readouterr().err + "'lab'"


def test_cli_errors_name_the_flag_typed_not_the_tool_argument(
    official_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    import_main([str(official_file), "--store", str(store)])
    capsys.readouterr()
    assert export_main(["--store", str(store), "--at", "last tuesday"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("chronograph export: --at: 'last tuesday' is not an ISO-8601 timestamp")


def test_a_closed_output_ends_the_command_quietly(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = tmp_path / "store"
    with Memory(store, sync=False) as memory:  # more output than a pipe holds
        for base in range(0, 3000, 1000):
            memory.write("create_entities", {"entities": [
                {"name": f"entity {i}", "entityType": "t", "observations": ["o" * 80]} for i in range(base, base + 1000)
            ]}, actor="t")
    for command in (["audit", "--json", "--limit", "0"], ["export", "--format", "markdown"],
                    ["replay", "--position", "3"]):
        reader = subprocess.Popen([sys.executable, "-m", "chronograph", *command, "--store", str(store)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert reader.stdout is not None and reader.stderr is not None
        reader.stdout.read(1)
        reader.stdout.close()  # as `| head -c 1` does
        error = reader.stderr.read().decode()
        reader.stderr.close()
        assert reader.wait(timeout=60) in (0, 141) and "Traceback" not in error, (command, error)


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_an_export_reimports_with_metadata_confidence_and_context(tmp_path: Path, fmt: str) -> None:
    source, target, file = tmp_path / "source", tmp_path / "target", tmp_path / f"lab.{fmt}"
    with Memory(source, sync=False) as memory:
        memory.write("create_entities", {"workspace": "lab", "entities": [
            {"name": "Ada", "entityType": "person", "observations": ["math"], "metadata": {"born": 1815}},
            {"name": "Bob", "entityType": "person", "observations": []}]}, actor="t")
        memory.write("create_relations", {"workspace": "lab", "relations": [
            {"from": "Ada", "to": "Bob", "relationType": "knows", "confidence": 0.7, "metadata": {"via": "letters"}}]},
            actor="t")
        memory.write("update_context", {"workspace": "lab", "activeTask": "round trip", "status": "IN_PROGRESS",
                                        "nextSteps": ["check"]}, actor="t")
    assert export_main(["--store", str(source), "--workspace", "lab", "-o", str(file)]) == 0
    assert import_main(["--store", str(target), "--workspace", "lab", str(file)]) == 0
    with Memory(source, sync=False) as memory:
        before = memory.read("read_graph", {"workspace": "lab"})
        context_before = memory.read("read_context", {"workspace": "lab"})
    with Memory(target, sync=False) as memory:
        after = memory.read("read_graph", {"workspace": "lab"})
        context_after = memory.read("read_context", {"workspace": "lab"})
    def own(metadata: Any) -> dict[str, Any]:  # a JSON export's version and times come back as imported*
        return {k: v for k, v in (metadata or {}).items() if not k.startswith("imported")}

    assert [(e.name, e.observations, own(e.metadata)) for e in after.entities] == [
        (e.name, e.observations, own(e.metadata)) for e in before.entities]
    assert [(r.source, r.target, r.confidence, r.metadata) for r in after.relations] == [
        (r.source, r.target, r.confidence, r.metadata) for r in before.relations]
    assert (context_after.active_task, context_after.status, context_after.next_steps) == (
        context_before.active_task, context_before.status, context_before.next_steps)


def test_an_import_that_would_drop_metadata_says_so(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store, file = tmp_path / "store", tmp_path / "m.jsonl"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": "Ada", "entityType": "person", "observations": [], "metadata": {"born": 1815}}]}, actor="t")
    file.write_text(json.dumps({"type": "entity", "name": "Ada", "entityType": "person", "observations": [],
                                "metadata": {"born": 1816}}) + "\n")
    assert import_main(["--store", str(store), str(file)]) == 0
    captured = capsys.readouterr()
    assert "1 conflict(s)" in captured.out and "other metadata" in captured.err


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_valid_time_survives_an_export_and_an_import(tmp_path: Path, fmt: str) -> None:
    source, target, file = tmp_path / "source", tmp_path / "target", tmp_path / f"g.{fmt}"
    with Memory(source, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": n, "entityType": "t", "observations": ["here"]}
                                                      for n in ("Alice", "Acme")]}, actor="t")
        memory.write("add_observations", {"observations": [
            {"entityName": "Alice", "contents": ["works at Acme"], "validFrom": "2019-01-01"}]}, actor="t")
        memory.write("invalidate_observations", {"observations": [
            {"entityName": "Alice", "observations": ["works at Acme"], "at": "2023-06-01"}]}, actor="t")
        memory.write("create_relations", {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at",
                                                         "validFrom": "2019-01-01", "validUntil": "2023-06-01"}]},
                     actor="t")
    assert export_main(["--store", str(source), "-o", str(file)]) == 0
    assert import_main(["--store", str(target), str(file)]) == 0
    for store in (source, target):
        with Memory(store, sync=False) as memory:
            then = memory.read("open_nodes", {"names": ["Alice"], "validAt": "2020-01-01"})
            now = memory.read("open_nodes", {"names": ["Alice"]})
            assert then.entities[0].observations == ["here", "works at Acme"] and len(then.relations) == 1
            assert now.entities[0].observations == ["here"] and now.relations == []


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_an_export_of_every_workspace_imports_back_into_each(tmp_path: Path, fmt: str) -> None:
    source, target, file = tmp_path / "source", tmp_path / "target", tmp_path / f"all.{fmt}"
    with Memory(source, sync=False) as memory:
        for workspace, name in (("default", "Ada"), ("lab", "Bob"), ("home", "Cy")):
            memory.write("create_entities", {"workspace": workspace, "entities": [
                {"name": name, "entityType": "person", "observations": [workspace]}]}, actor="t")
        memory.write("update_context", {"workspace": "lab", "activeTask": "sections"}, actor="t")
    assert export_main(["--store", str(source), "--all-workspaces", "-o", str(file)]) == 0
    assert import_main(["--store", str(target), str(file)]) == 0
    with Memory(target, sync=False) as memory:
        listed = {w.name: w.entities for w in memory.read("list_workspaces", {}).workspaces}
        assert listed == {"default": 1, "lab": 1, "home": 1}
        assert memory.read("read_context", {"workspace": "lab"}).active_task == "sections"
        assert [e.name for e in memory.read("read_graph", {"workspace": "home"}).entities] == ["Cy"]


def test_every_workspace_is_refused_in_a_format_import_cannot_read(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []}]},
                     actor="t")
    assert export_main(["--store", str(tmp_path / "s"), "--all-workspaces", "--format", "markdown"]) == 2


def test_an_export_past_the_end_of_the_log_says_where_the_log_ends(
    official_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    assert import_main([str(official_file), "--store", str(store)]) == 0
    capsys.readouterr()
    assert export_main(["--store", str(store), "--at", "999"]) == 0
    assert "chronograph export: position 999 is past the end of the log: it ends at position 5" in \
        capsys.readouterr().err


def test_a_file_that_is_not_a_memory_file_is_one_line_per_kind_of_problem_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Notes about the project\n\n" + "".join(f"- point {n}\n" for n in range(100))
                     + '{"type":"entity","name":"Ada","entityType":"person","observations":[]}\n', encoding="utf-8")
    store = tmp_path / "store"
    assert import_main([str(notes), "--store", str(store)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"chronograph import: {notes} is not a memory file (JSONL or JSON): 101 of its 102 lines are not "
                   "JSON; nothing was written",
                   "  not JSON: 101 lines (1, 3, 4, 5, 6 and 96 more)"]
    assert not store.exists()
    import_main([str(tmp_path / "none.jsonl"), "--store", str(store)])  # an existing store stays untouched too
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [{"name": "Bob", "entityType": "p", "observations": []}]},
                     actor="t")
    before = head(store)
    assert import_main([str(notes), "--store", str(store)]) == 1
    assert head(store) == before


def test_many_lines_with_one_problem_are_one_line_with_their_count(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(['{"type":"entity","name":"Ada","entityType":"person","observations":[]}']
                              + [f'{{"type":"entity","name":"E{n}","entityType":"t","observations":[{n}]}}'
                                 for n in range(30)]))
    assert import_main([str(path), "--store", str(tmp_path / "store")]) == 1
    problems = [line for line in capsys.readouterr().err.splitlines() if line.startswith("  ")]
    assert problems == ["  entity observations[]: expected `str`, got `int`: 30 lines (2, 3, 4, 5, 6 and 25 more)"]
def test_export_refuses_an_existing_file_unless_forced_and_names_the_flag(
    official_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 33.3: `export -o EXISTING.md` replaced it without a word."""
    store, notes = tmp_path / "store", tmp_path / "NOTES.md"
    import_main(["--store", str(store), str(official_file)])
    notes.write_text("# my notes\n")
    capsys.readouterr()
    assert export_main(["--store", str(store), "-o", str(notes)]) == 2
    assert "--force" in capsys.readouterr().err and notes.read_text() == "# my notes\n"
    assert export_main(["--store", str(store), "-o", str(notes), "--force"]) == 0
    assert "Ada" in notes.read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left


@pytest.mark.parametrize("force", [[], ["--force"]])
@pytest.mark.parametrize("aim", ["store/data.mdb", "store/lock.mdb", "store/graph.jsonl", "link.md"])
def test_export_never_writes_into_a_store_even_when_forced(
    official_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], aim: str, force: list[str],
) -> None:
    """Issue 27.2: `export -o STORE/data.mdb` exited 0 and replaced the log."""
    store = tmp_path / "store"
    import_main(["--store", str(store), str(official_file)])
    (tmp_path / "link.md").symlink_to(store / "data.mdb")
    before = (store / "data.mdb").read_bytes()
    assert export_main(["--store", str(store), "-o", str(tmp_path / aim), *force]) == 2
    assert "store" in capsys.readouterr().err or aim == "link.md"
    assert (store / "data.mdb").read_bytes() == before
    assert sorted(p.name for p in store.iterdir()) == ["data.mdb", "lock.mdb"]
    assert graph_of(store)["entities"]


def test_the_first_search_after_an_import_loads_the_image_it_kept_in_parts_and_answers_as_from_the_entities(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexes, "PART_DOCS", 4)  # 30 entities: seven parts and the head
    words = ["river", "stone", "maple", "copper", "lantern", "orbit"]
    source = tmp_path / "memory.jsonl"
    source.write_text("".join(json.dumps({
        "type": "entity", "name": f"Thing {i}", "entityType": f"kind{i % 3}",
        "observations": [f"{words[i % 6]} {words[(i * 5) % 6]} number {i}", f"note {i * 7}"]}) + "\n"
        for i in range(30)))
    store = tmp_path / "store"
    assert import_main([str(source), "--store", str(store)]) == 0
    queries = [{"query": "river"}, {"query": "thing 1"}, {"query": "mapel lantrn", "mode": "fuzzy"},
               {"query": "copper orbit", "mode": "ranked"}, {"query": "kind2"}]
    indexed: list[str] = []
    put = WorkspaceIndex.put
    monkeypatch.setattr(WorkspaceIndex, "put", lambda self, record: (indexed.append(record.name), put(self, record)))
    with Memory(store) as memory:
        with memory.views.env.read() as txn:
            cursor = txn.cursor(db=memory.views.search.db)
            keys = [bytes(key) for key in cursor.iternext(values=False)]
        assert len(keys) == 8  # the head and the seven parts before it
        from_image = [msgspec.to_builtins(memory.read("search_nodes", query)) for query in queries]
        assert indexed == []  # loaded, nothing indexed
        memory.views.env.write(lambda txn: memory.views.search.forget(txn))
    with Memory(store) as memory:
        from_entities = [msgspec.to_builtins(memory.read("search_nodes", query)) for query in queries]
    assert len(indexed) == 30  # this time every entity was indexed
    assert from_image == from_entities
    assert [len(answer["entities"]) for answer in from_image][:2] == [5, 11]


@pytest.mark.parametrize(("argv", "says"), [
    (["export", "--store", ""], "argument --store: is empty"),
    (["import", "FILE", "--store", " "], "argument --store: is empty"),
    (["copy", "--from", "", "--to", "x"], "argument --from: is empty"),
    (["copy", "--from", "x", "--to", "mysql://db/x"], "not a mysql:// one"),
    (["copy", "--from", "x", "--to", "postgresql+psycopg://db/x"], "not a postgresql+psycopg:// one"),
    (["copy", "--from", "x", "--to", "postgresql:/postgres@db/x?schema=team"], "two slashes"),
    (["import", "FILE", "--store", "Postgres:db/x"], "two slashes"),
    (["backup", "-o", "b", "--key-file", ""], "argument --key-file: is empty"),
    (["restore", "b", "--key-file", ""], "argument --key-file: is empty"),
    (["serve", "--store", ""], "argument --store: is empty"),
    (["export", "-o", ""], "argument -o/--output: is empty"),
    (["backup", "-o", " "], "argument -o/--output: is empty"),
    (["forget", "Ada", "--reason", "r", "--as", ""], "argument --as: is empty"),
])
def test_an_empty_or_foreign_store_or_key_is_refused_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str],
        says: str) -> None:
    """An unset shell variable made --store '' the per-user store (forget erased there) and
    --key-file '' no key; a mistyped URL scheme became a folder named after the URL."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(SystemExit) as refused:
        chronograph_main(argv)
    assert refused.value.code == 2 and says in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_database_url_missing_a_slash_is_refused_by_every_way_a_store_is_named(tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreOpenError, match="two slashes"):
        resolve_store("postgresql:/postgres@db/x")
    with pytest.raises(StoreOpenError, match="two slashes"):
        Memory("postgresql:/postgres@db/x")
    assert list(tmp_path.iterdir()) == []


def test_a_postgresql_scheme_is_read_in_any_case() -> None:
    assert resolve_store("PostgreSQL://db.example/team") == "postgresql://db.example/team"
    assert store_location("Postgres://h/d") == "postgres://h/d"


def test_a_database_url_pasted_with_spaces_around_it_is_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trailing space or line break (a client's configuration) crashed some commands with a traceback."""
    assert resolve_store(" postgresql://db.example/team \n") == "postgresql://db.example/team"
    assert store_location("postgresql://h/d ") == "postgresql://h/d"


@pytest.mark.parametrize("command", [["scrub"], ["suggest"], ["backup", "-o", "b.chronograph"], ["audit"]])
def test_a_mistyped_url_in_the_environment_is_one_line_from_every_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        command: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHRONOGRAPH_STORE", "postgresql:/ada:secret@db/x")
    assert chronograph_main(command) == 2
    said = capsys.readouterr().err
    assert "two slashes" in said and "secret" not in said and "Traceback" not in said
    assert list(tmp_path.iterdir()) == []


def test_a_file_of_every_workspace_refuses_a_workspace_flag_and_an_empty_one_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "all.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"type": "workspace", "name": "alpha"}, {"type": "entity", "name": "A", "entityType": "t", "observations": []},
        {"type": "workspace", "name": "beta"}, {"type": "entity", "name": "B", "entityType": "t", "observations": []},
    ]), encoding="utf-8")
    assert import_main([str(path), "--workspace", "gamma", "--store", str(tmp_path / "store")]) == 2
    assert "names its workspaces (alpha, beta)" in capsys.readouterr().err and not (tmp_path / "store").exists()
    with pytest.raises(SystemExit):
        import_main([str(path), "--workspace", "", "--store", str(tmp_path / "store")])
    assert "a workspace is named by 1 to 128 characters" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()
    assert import_main([str(path), "--store", str(tmp_path / "store")]) == 0


@pytest.fixture
def full_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """$TMPDIR, on a filesystem with next to no room left."""
    import tempfile

    from support.disks import full_filesystem

    with full_filesystem(tmp_path / "tmp", size="1m", leave=64 << 10) as folder:
        monkeypatch.setenv("TMPDIR", str(folder))
        monkeypatch.setattr(tempfile, "tempdir", None)  # (found again: it is kept once found)
        yield folder


def test_an_import_whose_temporary_folder_is_full_names_it_and_tmpdir_writing_nothing(
        tmp_path: Path, full_tmpdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite's "database or disk is full" crashed the import with a traceback naming no folder."""
    source = tmp_path / "memory.jsonl"
    source.write_text("".join(json.dumps({"type": "entity", "name": f"entity {i}", "entityType": "t",
                                          "observations": [f"fact {i} " + "z" * 300]}) + "\n" for i in range(3000)))
    assert import_main([str(source), "--store", str(tmp_path / "store")]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"chronograph import: nothing was written: the temporary folder {full_tmpdir} could "
                           "not hold the import's index of names (database or disk is full)")
    assert "$TMPDIR" in said and len(said.splitlines()) == 1
    assert not (tmp_path / "store").exists()


def test_another_server_s_memory_the_temporary_folder_cannot_hold_is_not_blamed_on_the_source(
        tmp_path: Path, full_tmpdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mem0 export: its records are staged in the temporary folder first; full, the import said
    "cannot read <source>: No space left on device"."""
    source = tmp_path / "mem0.json"
    source.write_text(json.dumps({"results": [{"id": f"m{i}", "memory": f"fact {i} " + "w" * 300,
                                               "user_id": "u"} for i in range(3000)]}))
    assert import_main([str(source), "--store", str(tmp_path / "store")]) == 2
    said = capsys.readouterr().err.strip()
    assert f"the temporary folder {full_tmpdir} could not hold another server's memory as records (No space " \
           "left on device)" in said and "$TMPDIR" in said
    assert f"cannot read {source}" not in said
