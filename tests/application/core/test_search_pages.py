"""search_nodes' pages and totals: exact counts from the index, the page alone read, a total
that says when it is a lower bound, and an over-size answer refused before it is built."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory, ReplyTooLargeError
from chronograph.application.core import search
from chronograph.application.core.search import DEPTH
from chronograph.projections.states.graph import LmdbGraph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def call(memory: Memory, **arguments: Any) -> dict[str, Any]:
    return msgspec.to_builtins(memory.read("search_nodes", arguments))  # type: ignore[no-any-return]


def names(reply: dict[str, Any]) -> list[str]:
    return [e["name"] for e in reply["entities"]]


def fill(memory: Memory, count: int, observation: str = "a common word", start: int = 0) -> None:
    for base in range(start, start + count, 500):
        memory.write("create_entities", {"entities": [
            {"name": f"E{i:05d}", "entityType": "thing" if i % 3 else "other", "observations": [f"{observation} {i}"]}
            for i in range(base, min(base + 500, start + count))]}, actor="t")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The streams whose records the live views read, as they are read."""
    read: list[str] = []
    original = LmdbGraph.entity_by_stream

    def counted(self: LmdbGraph, stream: str) -> Any:
        read.append(stream)
        return original(self, stream)

    monkeypatch.setattr(LmdbGraph, "entity_by_stream", counted)
    return read


@pytest.fixture
def big(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as memory:
        fill(memory, DEPTH + 300)
        yield memory


def test_a_page_of_a_common_word_reads_the_page_and_counts_every_match(big: Memory, reads: list[str]) -> None:
    reply = call(big, query="common", limit=20, offset=40)
    assert names(reply) == [f"E{i:05d}" for i in range(40, 60)]
    assert (reply["total"], reply["nextOffset"], "totalIsLowerBound" in reply) == (DEPTH + 300, 60, False)
    assert len(reads) == 20


@pytest.mark.parametrize("mode", ["ranked", "fuzzy"])
def test_ranked_and_fuzzy_totals_count_every_match_not_the_first_thousand(big: Memory, mode: str) -> None:
    reply = call(big, query="common", mode=mode, limit=5)
    assert reply["total"] == DEPTH + 300 and "totalIsLowerBound" not in reply
    deep = call(big, query="common", mode=mode, limit=5, offset=DEPTH + 290)  # pages reach past the thousandth
    assert len(deep["entities"]) == 5 and "nextOffset" in deep


def test_a_total_is_a_lower_bound_when_and_only_when_counting_stopped_early(big: Memory, reads: list[str]) -> None:
    # Two words: the index narrows to candidates that must each be read and checked.
    stopped = call(big, query="common word", limit=10)
    assert stopped["totalIsLowerBound"] is True and stopped["nextOffset"] == 10
    assert stopped["total"] == 10 + DEPTH and len(reads) == 11 + DEPTH  # the page, DEPTH more, one that says more
    whole = call(big, query="common word", limit=10, offset=DEPTH + 290)  # the last page: everything was counted
    assert (whole["total"], "totalIsLowerBound" in whole, "nextOffset" in whole) == (DEPTH + 300, False, False)
    few = call(big, query="word 7", limit=5)  # few candidates: counted to the end
    assert "totalIsLowerBound" not in few and few["total"] == len(call(big, query="word 7")["entities"])
    filtered = call(big, query="common", entityTypes=["other"], limit=5)  # a filter reads every candidate it counts
    assert filtered["totalIsLowerBound"] is True
    ranked = call(big, query="common", mode="ranked", entityTypes=["other"], limit=5)  # filtered among the best DEPTH
    assert ranked["totalIsLowerBound"] is True and ranked["total"] < DEPTH


def test_an_unpaged_search_answers_every_match_and_no_total(big: Memory) -> None:
    reply = call(big, query="common word")
    assert len(reply["entities"]) == DEPTH + 300 and "total" not in reply and "totalIsLowerBound" not in reply


def test_a_refused_search_costs_no_answer(big: Memory, reads: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = search._answer
    # _answer(memory, moment, args, page, ...): the page is its fourth argument
    monkeypatch.setattr(search, "_answer", lambda *a, **k: built.append(len(a[3])) or original(*a, **k))
    big.reply_limit = 20_000
    refusal = r"at least .* KiB.*search_nodes with limit (\d+) and offset 0"
    with pytest.raises(ReplyTooLargeError, match=refusal) as refused:
        call(big, query="common")
    assert len(reads) <= search.SAMPLE and built == [search.SAMPLE]  # only the page that measures what fits
    fit = int(str(refused.value).split("limit ")[1].split()[0])
    page = call(big, query="common", limit=fit)
    assert len(msgspec.json.encode(page)) * 2 < 20_000  # the page it names fits


def test_a_search_over_the_limit_with_a_filter_stops_building_at_the_limit(big: Memory, reads: list[str]) -> None:
    big.reply_limit = 20_000
    with pytest.raises(ReplyTooLargeError, match="search_nodes with limit"):
        call(big, query="common word", entityTypes=["thing"])
    assert len(reads) < 400  # stopped once what it had built was over the limit, not after every match


def test_small_answers_pass_the_limit(big: Memory) -> None:
    big.reply_limit = 20_000
    assert names(call(big, query="E00042")) == ["E00042"]
    assert len(call(big, query="common", limit=20)["entities"]) == 20


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.sampled_from(["common", "word 1", "E0001", "word", "other", "thing", "1"]),
       mode=st.sampled_from(["substring", "ranked", "fuzzy"]), size=st.integers(1, 40),
       types=st.none() | st.just(["other"]))
def test_concatenated_pages_are_the_whole_ordered_answer(tmp_path_factory: pytest.TempPathFactory, query: str,
                                                         mode: str, size: int, types: list[str] | None) -> None:
    memory = _small(tmp_path_factory)
    extra = {} if types is None else {"entityTypes": types}
    whole = call(memory, query=query, mode=mode, limit=DEPTH, **extra)
    pages: list[str] = []
    offset: int | None = 0
    while offset is not None:
        reply = call(memory, query=query, mode=mode, limit=size, offset=offset, **extra)
        assert reply["total"] == whole["total"] and "totalIsLowerBound" not in reply
        pages += names(reply)
        offset = reply.get("nextOffset")
    assert pages == names(whole) and len(pages) == whole["total"]
    if mode == "substring":  # the count equals a brute-force count of the official rule
        every = msgspec.to_builtins(memory.read("read_graph", {}))["entities"]
        expected = [e["name"] for e in every if (types is None or e["entityType"] in types)
                    and any(query.lower() in t.lower() for t in (e["name"], e["entityType"], *e["observations"]))]
        assert pages == expected


_SMALL: dict[str, Memory] = {}


def _small(factory: pytest.TempPathFactory) -> Memory:
    """One store of 150 entities for every example (some changed, some deleted after creation)."""
    if "memory" not in _SMALL:
        memory = Memory(factory.mktemp("pages") / "store", sync=False)
        fill(memory, 150)
        memory.write("add_observations", {"observations": [
            {"entityName": f"E{i:05d}", "contents": [f"word {i * 7}"]} for i in range(0, 150, 4)]}, actor="t")
        memory.write("delete_entities", {"entityNames": [f"E{i:05d}" for i in range(0, 150, 9)]}, actor="t")
        _SMALL["memory"] = memory
    return _SMALL["memory"]


@pytest.fixture(scope="module", autouse=True)
def _close_small() -> Iterator[None]:
    yield
    if "memory" in _SMALL:
        _SMALL.pop("memory").close()


def test_a_tool_built_on_search_is_measured_on_its_own_answer_not_the_inner_one(big: Memory) -> None:
    big.reply_limit = 20_000  # a surface (n2n's search) asks for 1,000 and answers a page of them
    inner = search.search_nodes(big, search.SearchNodes(query="common", limit=DEPTH))
    assert len(inner.entities) == DEPTH
    with pytest.raises(ReplyTooLargeError):
        big.read("search_nodes", {"query": "common", "limit": DEPTH})
    assert len(big.read("search_nodes", {"query": "common", "limit": DEPTH}, reply_limit=None).entities) == DEPTH


@pytest.mark.parametrize("mode", ["substring", "ranked", "fuzzy"])
def test_a_page_as_of_then_reads_the_entities_as_they_were(tmp_path: Path, mode: str) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        fill(memory, 30)
        then = memory.log.head()
        memory.write("delete_entities", {"entityNames": ["E00003"]}, actor="t")
        reply = call(memory, query="common", mode=mode, limit=5, asOf=then)
        assert "E00003" in names(reply) and reply["total"] == 30
