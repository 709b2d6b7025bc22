"""Exports written a piece at a time: the same text as a whole document, sent on as it is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.application.engine.exportdir import ExportDir, ExportRefused
from chronograph.application.engine.sink import Overflow, Sink
from chronograph.application.lifecycle.export import FORMATS, export, render
from chronograph.tools.export_graph import main as export_main
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET
from support.reads import count_entities_read

text = st.text(st.sampled_from('ab \n"\\#|*é日<&-.('), max_size=8)
entity = st.fixed_dictionaries({"name": text, "entityType": text, "observations": st.lists(text, max_size=3)},
                                optional={"metadata": st.dictionaries(text, text, max_size=2)})
relation = st.fixed_dictionaries({"from": text, "to": text, "relationType": text},
                                  optional={"confidence": st.floats(0, 1)})
graphs = st.fixed_dictionaries({"entities": st.lists(entity, max_size=5), "relations": st.lists(relation, max_size=4)},
                               optional={"context": st.fixed_dictionaries({"status": text})})


@settings(max_examples=200, deadline=None)
@given(graphs)
def test_json_written_an_item_at_a_time_is_the_document_dumped_whole(graph: dict[str, Any]) -> None:
    document = {key: graph[key] for key in ("entities", "relations", "context") if graph.get(key)}
    document.setdefault("entities", [])
    document.setdefault("relations", [])
    whole = {"entities": document["entities"], "relations": document["relations"],
             **({"context": document["context"]} if "context" in document else {})}
    assert render(graph, "json") == json.dumps(whole, indent=2, ensure_ascii=False)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    with Memory(tmp_path / "store", sync=False) as memory:
        entities = [{"name": f"E{i:04d}", "entityType": "thing", "observations": [f"fact {i}"]} for i in range(500)]
        memory.write("create_entities", {"entities": entities}, actor="t")
        memory.write("create_relations", {"relations": [
            {"from": f"E{i:04d}", "to": f"E{i + 1:04d}", "relationType": "next"} for i in range(499)]}, actor="t")
    return tmp_path / "store"


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "markdown"])
def test_an_export_is_passed_on_while_the_entities_are_still_being_read(
        store: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    read = count_entities_read(monkeypatch)
    first: list[int] = []
    with Memory(store, readonly=True) as memory:
        counts = export(memory, "default", fmt, UNSET, Sink(lambda _: first.append(read[0])))
    assert counts == (500, 499)
    assert first[0] < 500 == read[0]  # the first piece went out before the last entity was read


def test_an_answer_stops_reading_once_it_is_over_its_limit(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = count_entities_read(monkeypatch)
    with Memory(store, readonly=True) as memory, pytest.raises(Overflow) as over:
        export(memory, "default", "jsonl", UNSET, Sink(limit=1_000))
    assert 1_000 < over.value.chars < 1_200 and read[0] < 50


def test_every_workspace_as_json_is_each_export_nested_as_one_document(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(tmp_path / "s", sync=False) as memory:
        for workspace in ("default", "lab", "empty"):
            memory.write("create_entities", {"workspace": workspace, "entities": [
                {"name": f"{workspace} one", "entityType": "t", "observations": ["x\ny", '"q"']}]}, actor="t")
        memory.write("delete_entities", {"workspace": "empty", "entityNames": ["empty one"]}, actor="t")
        memory.write("update_context", {"workspace": "lab", "activeTask": "nested"}, actor="t")
    singles = {}
    for workspace in ("default", "lab", "empty"):
        assert export_main(["--store", str(tmp_path / "s"), "--workspace", workspace, "--format", "json"]) == 0
        singles[workspace] = json.loads(capsys.readouterr().out)
    assert export_main(["--store", str(tmp_path / "s"), "--all-workspaces", "--format", "json"]) == 0
    everything = capsys.readouterr().out
    listed = json.loads(everything)["workspaces"]
    assert listed == {name: singles[name] for name in listed} and set(listed) >= {"default", "lab"}
    assert everything == json.dumps({"workspaces": listed}, indent=2, ensure_ascii=False) + "\n"


def test_an_export_file_past_its_limit_leaves_nothing_behind(tmp_path: Path) -> None:
    exports = ExportDir(tmp_path, max_export=10)
    with pytest.raises(ExportRefused, match="over the 10 bytes"), exports.writing("graph.md") as file:
        for _ in range(5):
            file.write("abc")
    assert list(tmp_path.iterdir()) == []


def test_an_export_says_how_far_it_has_read_each_part(store: Path) -> None:
    heard: list[tuple[str, int, int]] = []
    with Memory(store, readonly=True) as memory:
        export(memory, "default", "jsonl", UNSET, Sink(lambda _: None), lambda *step: heard.append(step))
    assert heard[0][0] == "entities" and heard[-1] == ("relations", 499, 499)
    assert ("entities", 500, 500) in heard and all(done <= total for _, done, total in heard)


GRAPH = {"entities": [{"name": "Bo", "entityType": "pet", "observations": ["barks"]},
                      {"name": "Ada", "entityType": "person", "observations": []},
                      {"name": "Cy", "entityType": "pet", "observations": ["a.b", "c"]}],
         "relations": [{"from": "Ada", "to": "Bo", "relationType": "owns"}]}


@pytest.mark.parametrize(("fmt", "text"), [
    ("markdown", "# Knowledge graph: home\n\n3 entities, 1 relations.\n\n## person\n\n### Ada\n- *(no observations)*"
                 "\n\n## pet\n\n### Bo\n- barks\n\n### Cy\n- a\\.b\n- c\n\n## Relations\n\n- **Ada** owns **Bo**\n"),
    ("jsonl", '{"type":"entity","name":"Bo","entityType":"pet","observations":["barks"]}\n'
              '{"type":"entity","name":"Ada","entityType":"person","observations":[]}\n'
              '{"type":"entity","name":"Cy","entityType":"pet","observations":["a.b","c"]}\n'
              '{"type":"relation","from":"Ada","to":"Bo","relationType":"owns"}'),
    ("mermaid", 'graph LR\n    n0["Bo<br/><i>pet</i>"]\n    n1["Ada<br/><i>person</i>"]\n    n2["Cy<br/><i>pet</i>"]\n'
                '    n1 -->|"owns"| n0\n'),
    ("dot", 'digraph "memory: home" {\n    rankdir=LR;\n    node [shape=box];\n    "Bo" [label="Bo\\n(pet)"];\n'
            '    "Ada" [label="Ada\\n(person)"];\n    "Cy" [label="Cy\\n(pet)"];\n'
            '    "Ada" -> "Bo" [label="owns"];\n}\n'),
])
def test_each_format_reads_as_it_always_has(fmt: str, text: str) -> None:
    assert render(GRAPH, fmt, "home") == text


def test_markdown_of_nothing_says_so() -> None:
    assert render({"entities": [], "relations": []}, "markdown", "w") == (
        "# Knowledge graph: w\n\n0 entities, 0 relations.\n\n## Relations\n\n*(none)*\n")


def test_a_failed_export_drops_its_spilled_sections_and_writes_nothing_more() -> None:
    written: list[str] = []
    sink = Sink(written.append, spill=1)
    for letter in "abc":
        sink(letter * 4, (1, letter))
    assert sink._file is not None  # noqa: SLF001 (what the sink holds on disk)
    sink.discard()
    sink.close()
    assert written == [] and sink._file is None  # noqa: SLF001


def test_drawings_and_markdown_escape_what_their_readers_would_take_for_syntax() -> None:
    """A backtick opens Mermaid's Markdown text and %% its comments and directives; Graphviz and
    Markdown read HTML entities (a name AT&amp;T must not show as AT&T)."""
    graph = {"entities": [{"name": "`code` AT&amp;T", "entityType": "%%{init: {}}%%", "observations": ["a&lt;b"]}],
             "relations": [{"from": "`code` AT&amp;T", "to": "x", "relationType": "%%{init: {}}%%"}]}
    mermaid = render(graph, "mermaid")
    assert "`" not in mermaid and "%" not in mermaid and "#96;code#96; AT#amp;amp;T" in mermaid
    assert '-->|"#37;#37;{init: {}}#37;#37;"|' in mermaid
    dot = render(graph, "dot")
    assert '"`code` AT&amp;amp;T" -> "x" [label="%%{init: {}}%%"];' in dot
    markdown = render(graph, "markdown")
    assert "### \\`code\\` AT\\&amp;T" in markdown and "- a\\&lt;b" in markdown
