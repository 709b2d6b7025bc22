"""The reply budget's lower bound never exceeds the reply: an answer that fits is never refused."""

from __future__ import annotations

from typing import Any

import pytest
from chronograph.application import Memory
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
