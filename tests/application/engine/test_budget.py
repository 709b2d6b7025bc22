"""The reply budget's lower bound never exceeds the reply: an answer that fits is never refused; it
counts only the observations an answer keeps; and a refusal's advice is a call that is answered."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory, ReplyTooLargeError
from chronograph.application.engine.budget import ReplyBudget, reply_size
from chronograph.server.results import reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAME = st.text(alphabet="abXY0é中ß\"'-_.", min_size=1, max_size=10)
TEXT = st.text(alphabet="ab \"\\\n\té中ß😀'<>&", min_size=1, max_size=12)
ENTITIES = st.lists(st.tuples(NAME, NAME, st.lists(TEXT, max_size=4, unique=True), st.booleans()), min_size=1,
                    max_size=8, unique_by=lambda e: e[0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entities=ENTITIES, summary=st.booleans(), exact=st.booleans())
def test_the_bound_of_an_answer_is_never_more_than_its_reply(tmp_path_factory: pytest.TempPathFactory,
                                                              entities: list[Any], summary: bool, exact: bool) -> None:
    with Memory(tmp_path_factory.mktemp("budget") / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": name, "entityType": kind, "observations": notes, **({"metadata": {"k": "v"}} if meta else {})}
            for name, kind, notes, meta in entities]}, actor="t")
        ended = [(name, notes[0]) for name, _, notes, meta in entities if notes and meta]
        if ended:  # an observation whose valid time ended is hidden from the answer: it must weigh nothing
            memory.write("invalidate_observations", {"observations": [
                {"entityName": name, "observations": [note]} for name, note in ended]}, actor="t")
        budget = ReplyBudget("read_graph", 10**9, summary=summary)
        with memory.views.search.lock, memory.timeline.at("t") as moment:
            bound = budget.selection(memory.views.search_index(moment.snapshot, "default").everything())
        for tool, arguments in (("read_graph", {}), ("search_nodes", {"query": ""})):
            output = memory.read(tool, {**arguments, "summaryMode": summary})
            answer = reply(output, exact=exact)
            assert bound <= len(answer.text_json) + len(answer.raw) == reply_size(output)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entities=ENTITIES, summary=st.booleans(), cap=st.integers(0, 3), exact=st.booleans())
def test_the_bound_of_a_search_that_keeps_few_observations_is_never_more_than_its_reply(
        tmp_path_factory: pytest.TempPathFactory, entities: list[Any], summary: bool, cap: int, exact: bool) -> None:
    with Memory(tmp_path_factory.mktemp("budget") / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": name, "entityType": kind, "observations": notes} for name, kind, notes, _ in entities]}, actor="t")
        ended = [(name, notes[-1]) for name, _, notes, meta in entities if notes and meta]
        if ended:  # hidden from the answer, and the shortest of all may be one of them
            memory.write("invalidate_observations", {"observations": [
                {"entityName": name, "observations": [note]} for name, note in ended]}, actor="t")
        budget = ReplyBudget("search_nodes", 10**9, summary=summary, observations=cap)
        counted = ReplyBudget("search_nodes", 10**9, summary=summary, observations=cap)
        with memory.views.search.lock, memory.timeline.at("t") as moment:
            bound = budget.selection(memory.views.search_index(moment.snapshot, "default").everything())
            for record in moment.graph.entities("default"):
                counted.add(record)
        output = memory.read("search_nodes", {"query": "", "summaryMode": summary, "observationsLimit": cap})
        answer = reply(output, exact=exact)
        assert max(bound, counted.spent) <= len(answer.text_json) + len(answer.raw) == reply_size(output)


NOTE = "note {} about project apollo " + "lorem ipsum " * 80


def apollo(memory: Memory, people: int = 30, notes: int = 40) -> None:
    for i in range(people):
        memory.write("create_entities", {"entities": [{"name": f"person{i}", "entityType": "person", "observations": [
            NOTE.format(j) for j in range(notes)]}]}, actor="t")


SEARCHES = [{"query": "apollo"}, {"query": "apollo", "mode": "ranked", "limit": 30},
            {"query": "project apollo", "limit": 30}]


@pytest.mark.parametrize("arguments", SEARCHES, ids=["one word", "ranked", "two words"])
def test_a_search_is_weighed_by_the_observations_its_answer_keeps(tmp_path: Path, arguments: dict[str, Any]) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        apollo(memory)
        memory.reply_limit = 200_000
        answer = memory.read("search_nodes", {**arguments, "observationsLimit": 1})
        assert len(answer.entities) == 30 and all(len(e.observations) == 1 for e in answer.entities)  # type: ignore[attr-defined]
        if "mode" not in arguments:  # (a ranked page is measured once built, by the server)
            with pytest.raises(ReplyTooLargeError, match="observationsLimit"):
                memory.read("search_nodes", arguments)


def advised(error: pytest.ExceptionInfo[ReplyTooLargeError]) -> int:
    found = re.search(r"with limit (\d+) and offset (\d+)", str(error.value))
    assert found is not None, str(error.value)
    return int(found.group(1))


@pytest.mark.parametrize(("tool", "arguments"), [
    ("read_graph", {}), ("search_nodes", {"query": "common"}), ("search_nodes", {"query": "common word"})],
    ids=["read_graph", "search of one word", "search of two"])
def test_the_page_a_refusal_advises_is_answered_though_larger_entities_follow_the_measured_ones(
        tmp_path: Path, tool: str, arguments: dict[str, Any]) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"small{i}", "entityType": "t", "observations": [f"a common word {i}"]} for i in range(60)]},
            actor="t")
        memory.write("create_entities", {"entities": [
            {"name": f"large{i}", "entityType": "t", "observations": [f"a common word {j} " + "x" * 1000
                                                                       for j in range(10)]} for i in range(60)]},
            actor="t")
        memory.read("search_nodes", {"query": "small1"})  # the word index at hand
        memory.reply_limit = 100_000
        with pytest.raises(ReplyTooLargeError) as refused:
            memory.read(tool, arguments)
        fit = advised(refused)
        page = memory.read(tool, {**arguments, "limit": fit})  # not refused again
        assert 60 < fit < 120 and reply_size(page) <= 100_000


@pytest.mark.parametrize(("tool", "arguments", "way"), [
    ("read_graph", {}, "summaryMode"), ("search_nodes", {"query": "huge"}, "observationsLimit")])
def test_an_entity_too_large_on_its_own_is_refused_with_a_smaller_shape_as_advice_not_a_page(
        tmp_path: Path, tool: str, arguments: dict[str, Any], way: str) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "huge", "entityType": "t", "observations": [
            f"huge fact {j} " + "y" * 1000 for j in range(100)]}]}, actor="t")
        memory.read("search_nodes", {"query": "huge"})
        memory.reply_limit = 100_000
        with pytest.raises(ReplyTooLargeError, match=f"Not even .* fits on its own.*{way}") as refused:
            memory.read(tool, arguments)
        assert "with limit" not in str(refused.value)
        memory.read("search_nodes", {"query": "huge", "observationsLimit": 10})
