"""read_graph's refusal of an answer over the reply limit, decided before the answer is built; open_nodes'
word on a name that is gone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory, ReplyTooLargeError
from chronograph.application.core import graph as core_graph
from chronograph.application.engine import budget


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        opened.write("create_entities", {"entities": [
            {"name": f"E{i:04d}", "entityType": "thing", "observations": [f"an observation of some length {i}"]}
            for i in range(600)]}, actor="t")
        opened.write("create_relations", {"relations": [
            {"from": f"E{i:04d}", "to": f"E{i + 1:04d}", "relationType": "next"} for i in range(599)]}, actor="t")
        opened.read("search_nodes", {"query": "E0001"})  # the word index is at hand
        yield opened


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many entities each built read_graph answer held."""
    sizes: list[int] = []
    original = core_graph.page

    def counted(*args: Any, **kwargs: Any) -> Any:
        answer = original(*args, **kwargs)
        sizes.append(len(answer.entities))
        return answer

    monkeypatch.setattr(core_graph, "page", counted)
    return sizes


def test_a_refused_read_graph_builds_only_the_page_that_measures_what_fits(memory: Memory, built: list[int]) -> None:
    memory.reply_limit = 30_000
    with pytest.raises(ReplyTooLargeError, match=r"at least .* KiB.*read_graph with limit (\d+)") as refused:
        memory.read("read_graph", {})
    assert built == [budget.SAMPLE]
    fit = int(str(refused.value).split("limit ")[1].split()[0])
    page = msgspec.json.encode(memory.read("read_graph", {"limit": fit}))
    assert 0 < fit < 600 and 2 * len(page) < 30_000


def test_a_large_page_or_a_summary_is_refused_early_too_and_a_small_one_is_not(memory: Memory,
                                                                              built: list[int]) -> None:
    memory.reply_limit = 30_000
    with pytest.raises(ReplyTooLargeError):
        memory.read("read_graph", {"limit": 500, "offset": 50})
    with pytest.raises(ReplyTooLargeError, match="summaryMode"):
        memory.read("read_graph", {"summaryMode": True})
    assert built == [budget.SAMPLE, budget.SAMPLE]
    assert len(memory.read("read_graph", {"limit": 20, "offset": 580}).entities) == 20


def test_without_a_limit_the_whole_graph_is_answered(memory: Memory) -> None:
    assert len(memory.read("read_graph", {}).entities) == 600


def test_a_workspace_without_a_word_index_gets_one_when_it_is_large(tmp_path: Path, built: list[int],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"E{i:04d}", "entityType": "thing", "observations": ["x" * 100]} for i in range(300)]}, actor="t")
        memory.reply_limit = 30_000
        assert len(memory.read("read_graph", {}).entities) == 300  # small: built (and measured by the server)
        assert built == [300]
        monkeypatch.setattr(core_graph, "INDEX_FOR_REFUSAL", 100)
        with pytest.raises(ReplyTooLargeError):
            memory.read("read_graph", {})
        assert built == [300, budget.SAMPLE]


def test_a_name_two_entities_bore_in_turn_is_gone_by_the_end_of_its_last_tenure(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        def write(tool: str, **arguments: Any) -> None:
            memory.write(tool, arguments, actor="t")

        write("create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": []}])
        write("rename_entity", name="Ada", newName="Ada (old)")
        write("create_entities", entities=[{"name": "Ada", "entityType": "robot", "observations": []},
                                           {"name": "Zed", "entityType": "t", "observations": []}])
        write("rename_entity", name="Ada", newName="Robo")  # the second Ada leaves the name
        write("rename_entity", name="Ada (old)", newName="Ada")  # the first takes it back
        before = memory.log.head()
        write("merge_entities", target="Zed", sources=["Ada"])
        [gone] = memory.read("open_nodes", {"names": ["Ada"]}).gone
        assert (gone.event, gone.into, gone.position) == ("entity_merged", "Zed", memory.log.head())
        assert memory.read("open_nodes", {"names": ["Ada"], "asOf": before}).gone is msgspec.UNSET
