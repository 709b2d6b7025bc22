"""A sink: pieces passed on as they come or held, sections written in order at the close,
held sections spilled to a temporary file, and a limit that stops it."""

from __future__ import annotations

import pytest
from chronograph.application.engine.sink import Overflow, Sink
from hypothesis import given, settings
from hypothesis import strategies as st

text = st.text(st.sampled_from('ab \n"\\#|*é日<&-.('), max_size=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([(0, ""), (1, "b"), (1, "a"), (2, "")]), text), max_size=12))
def test_a_sink_writes_its_sections_in_order_held_or_passed_on(pieces: list[tuple[tuple[int, str], str]]) -> None:
    passed: list[str] = []
    spilled: list[str] = []
    held, passing, spilling = Sink(), Sink(passed.append), Sink(spilled.append, spill=3)
    for section, piece in pieces:
        held(piece, section)
        passing(piece, section)
        spilling(piece, section)
    passing.close()
    spilling.close()
    main = 0  # the pieces of the first section written before any other pass straight on
    while main < len(pieces) and pieces[main][0] == (0, ""):
        main += 1
    rest = sorted(pieces[main:], key=lambda p: p[0])  # stable: in order within a section
    expected = "".join(t for _, t in pieces[:main]) + "".join(t for _, t in rest)
    assert held.text() == "".join(passed) == "".join(spilled) == expected


def test_a_sink_stops_once_past_its_limit_and_a_discarded_one_writes_nothing() -> None:
    passed: list[str] = []
    sink = Sink(passed.append, limit=5, spill=2)
    sink("ab")
    sink("cd", (1, "x"))
    with pytest.raises(Overflow) as over:
        sink("efg", (1, "x"))
    assert over.value.chars == 7
    sink.discard()
    sink.close()
    assert passed == ["ab"]
