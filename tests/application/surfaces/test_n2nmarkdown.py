"""n2n's Markdown export written as the views are read: the text the whole sorted graph
rendered at once gave, for any history, and a file that takes its place whole or not at all."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from chronograph.application.engine.sink import Sink
from chronograph.application.errors import ChronographError
from chronograph.application.lifecycle.export import render
from chronograph.application.surfaces import n2nmarkdown
from chronograph.application.surfaces.n2n import project_graph
from chronograph.application.surfaces.n2nmarkdown import write_markdown
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.projects import SECRET, projects, swap_for_link

WS = "n2n:repo:0000000000000000"
names = st.sampled_from(["Ada", "ada", "Zoë", "a*b", "日本 x"])
words = st.text(st.sampled_from('ab \n"\\#|*é<&-.('), max_size=6)
spans = st.sampled_from([{}, {"validUntil": "2001-01-01T00:00:00Z"}, {"validFrom": "2999-01-01T00:00:00Z"},
                         {"validFrom": "2001-01-01T00:00:00Z"}])
steps = st.one_of(
    st.tuples(st.just("create_entities"), st.lists(st.fixed_dictionaries({
        "name": names, "entityType": st.sampled_from(["PERSON", "CLASS", "b"]),
        "observations": st.lists(words, max_size=3)}), min_size=1, max_size=3)),
    st.tuples(st.just("add_observations"), names, st.lists(words, min_size=1, max_size=2), spans),
    st.tuples(st.just("create_relations"), names, st.sampled_from(["USES", "knows"]), names, spans),
    st.tuples(st.just("delete_entities"), names),
)


def run(memory: Memory, step: tuple[Any, ...]) -> None:
    """One step of a history; a step the memory refuses (a missing entity) changes nothing."""
    kind, *rest = step
    if kind == "create_entities":
        arguments: dict[str, Any] = {"entities": rest[0]}
    elif kind == "add_observations":
        arguments = {"observations": [{"entityName": rest[0], "contents": rest[1], **rest[2]}]}
    elif kind == "create_relations":
        arguments = {"relations": [{"from": rest[0], "relationType": rest[1], "to": rest[2], **rest[3]}]}
    else:
        arguments = {"entityNames": [rest[0]]}
    try:
        memory.write(kind, {"workspace": WS, **arguments}, actor="t")
    except Exception:  # noqa: BLE001 (refused as a whole: nothing written)
        pass


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(steps, max_size=16))
@example([("create_entities", [{"name": n, "entityType": "b", "observations": ["o"]} for n in ("Ada", "Zoë")]),
          ("create_relations", "Zoë", "knows", "Ada", {"validUntil": "2001-01-01T00:00:00Z"}),
          ("create_relations", "Ada", "knows", "Zoë", {}),
          ("add_observations", "Ada", ["then"], {"validFrom": "2999-01-01T00:00:00Z"})])
def test_the_markdown_written_as_it_is_read_is_the_sorted_graph_rendered_whole(
        tmp_path_factory: pytest.TempPathFactory, history: list[tuple[Any, ...]]) -> None:
    with Memory(tmp_path_factory.mktemp("n2n") / "store", sync=False) as memory:
        for step in history:
            run(memory, step)
        passed: list[str] = []
        write_markdown(memory, WS, "repo", Sink(passed.append, spill=8))
        assert "".join(passed) == render(project_graph(memory, WS), "markdown", "repo")


def test_the_export_holds_a_chunk_of_the_graph_not_the_graph(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        for start in range(0, 2000, 500):
            memory.write("create_entities", {"workspace": WS, "entities": [
                {"name": f"E{i:04d}", "entityType": "thing",
                 "observations": [f"{i} {k} " + "x" * 200 for k in range(10)]} for i in range(start, start + 500)]},
                actor="t")
        written = [0]

        def count(text: str) -> None:
            written[0] += len(text)

        tracemalloc.start()
        try:
            write_markdown(memory, WS, "repo", Sink(count, spill=256 << 10))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert written[0] > 4_000_000
    assert peak < written[0]  # the whole graph as data took 3.4 times the text it renders, this 0.5


def test_the_export_writes_into_the_project_the_call_resolved_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link aimed at the other project each time it is resolved: the export resolved it again
    and wrote the victim's graph into the attacker's file (or the attacker's over the victim's)."""
    with Memory(tmp_path / "store", sync=False, project_files=True) as memory:
        two = projects(memory, tmp_path)
        for root in (two.mine, two.victim):
            (root / "NOTES.md").write_text("the owner's own notes\n")
        two.flipped_at_every_resolution(monkeypatch)
        two.read("n2n_export_markdown", {"outputPath": "NOTES.md", "overwrite": True})
    assert (two.victim / "NOTES.md").read_text() == "the owner's own notes\n"
    ours = (two.mine / "NOTES.md").read_text()
    assert "Mine" in ours and SECRET not in ours


@pytest.mark.parametrize("swapped", ["the root", "a folder above it"])
def test_an_export_into_a_project_swapped_after_the_check_is_refused_and_writes_nothing(
        tmp_path: Path, swapped: str) -> None:
    with Memory(tmp_path / "store", sync=False, project_files=True) as memory:
        two = projects(memory, tmp_path, mine=tmp_path / "parent" / "mine", victim=tmp_path / "other" / "mine")
        (two.victim / "NOTES.md").write_text("the victim's own notes\n")
        folder, target = (two.mine, two.victim) if swapped == "the root" else (two.mine.parent, two.victim.parent)
        two.after_the_check(lambda: swap_for_link(folder, target))
        with pytest.raises(ChronographError, match="changed while the call ran"):
            two.read("n2n_export_markdown", {"outputPath": "NOTES.md", "overwrite": True}, two.mine)
    assert (two.victim / "NOTES.md").read_text() == "the victim's own notes\n"
    assert sorted(p.name for p in two.victim.iterdir()) == [".git", ".mcp", "NOTES.md"]


def test_a_folder_of_the_output_path_swapped_for_a_link_after_it_was_checked_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`docs` is a folder of the project when `outputPath` is checked, then a link to the victim's."""
    with Memory(tmp_path / "store", sync=False, project_files=True) as memory:
        two = projects(memory, tmp_path)
        (two.mine / "docs").mkdir()
        (two.victim / "NOTES.md").write_text("the victim's own notes\n")
        checked = n2nmarkdown._inside

        def then_swapped(*args: Any) -> Any:
            found = checked(*args)
            swap_for_link(two.mine / "docs", two.victim)
            return found

        monkeypatch.setattr(n2nmarkdown, "_inside", then_swapped)
        with pytest.raises(ChronographError, match="the folder docs changed while the call ran"):
            two.read("n2n_export_markdown", {"outputPath": "docs/NOTES.md", "overwrite": True}, two.mine)
    assert (two.victim / "NOTES.md").read_text() == "the victim's own notes\n"
