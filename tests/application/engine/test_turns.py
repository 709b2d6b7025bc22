"""Big answers in turns: the same plain data and JSON as one call, made of small calls into C."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from chronograph.application.engine import turns
from chronograph.application.engine.turns import TURN, builtins_in_turns, encoded, formatted


class Item(msgspec.Struct):
    name: str
    observations: list[str]
    weight: float | None = None


class Page(msgspec.Struct, omit_defaults=True):
    entities: list[Item]
    relations: list[dict[str, Any]]
    content: str = ""
    total: int = 0


def items(count: int) -> list[Item]:
    return [Item(f"Entity {i} «é» \"q\" \\ \n\t😀", [f"saw {i}", "line\nbreak"], i / 3 if i % 2 else None)
            for i in range(count)]


def shapes() -> list[Any]:
    many = items(3 * TURN + 7)
    text = "".join(f'{{"name": "é{i}\\n😀"}}\n' for i in range(60_000))  # over TURN_CHARS
    return [
        many,
        [],
        text,
        Page(entities=many, relations=[{"from": "a", "to": f"b{i}", "type": "knows"} for i in range(TURN + 1)]),
        Page(entities=[], relations=[], content=text, total=3),
        {"entities": many, "empty": [], "small": [1, 2], "content": text, "n": None},
        {"nested": {"entities": many}},
        Item("small", ["one"]),
    ]


@pytest.mark.parametrize("value", shapes(), ids=lambda value: type(value).__name__)
def test_a_value_encoded_in_turns_is_byte_for_byte_what_one_call_gives(value: Any) -> None:
    assert encoded(value) == msgspec.json.encode(value)


@pytest.mark.parametrize("value", shapes(), ids=lambda value: type(value).__name__)
def test_a_value_formatted_in_turns_reads_as_one_call_formats_it(value: Any) -> None:
    assert formatted(value) == msgspec.json.format(msgspec.json.encode(value), indent=2).decode()


def test_plain_data_made_in_turns_is_what_one_call_makes() -> None:
    many = items(2 * TURN + 1)
    assert builtins_in_turns(many) == msgspec.to_builtins(many)


def test_no_call_into_c_is_given_more_than_a_turn_of_a_big_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[int] = []

    class Counting:
        def encode(self, value: Any) -> bytes:
            given.append(len(value) if isinstance(value, list) else 0)
            return msgspec.json.encode(value)

    monkeypatch.setattr(turns, "_encoder", Counting())
    page = Page(entities=items(5 * TURN), relations=[])
    assert encoded(page) == msgspec.json.encode(page)
    formatted(page)
    assert given and max(given) <= TURN
