"""A reply is encoded once: its size is checked on the very JSON the stdio front sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import Memory, ReplyTooLargeError
from chronograph.application.engine import turns
from chronograph.server.results import plain, reply


class Counting:
    """An encoder that counts what it encodes."""

    def __init__(self) -> None:
        self.inner = msgspec.json.Encoder()
        self.calls: list[Any] = []

    def encode(self, value: Any) -> bytes:
        self.calls.append(value)
        return self.inner.encode(value)


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    with Memory(tmp_path / "store", sync=False) as opened:
        opened.write("create_entities", {"entities": [
            {"name": f"E{i}", "entityType": "t", "observations": [f"fact {i}", 'a "quoted"\nline']}
            for i in range(50)]}, actor="t")
        yield opened


def test_a_reply_encodes_its_answer_and_its_text_once_each(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    counting = Counting()
    monkeypatch.setattr(turns, "_encoder", counting)  # the reply encodes through turns.py
    output = memory.read("read_graph", {})
    answer = reply(output, tool="read_graph", limit=10**9)
    assert [type(value).__name__ for value in counting.calls] == [type(output).__name__, "str"]
    assert answer.raw == msgspec.json.encode(output) and answer.text_json == msgspec.json.encode(answer.text)
    with pytest.raises(ReplyTooLargeError):
        reply(output, tool="read_graph", limit=len(answer.raw))


def test_a_big_answer_reaches_the_encoder_a_turn_at_a_time(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    counting = Counting()
    monkeypatch.setattr(turns, "_encoder", counting)
    monkeypatch.setattr(turns, "TURN", 8)  # 50 entities: seven turns
    output = memory.read("read_graph", {})
    answer = reply(output, tool="read_graph", limit=10**9)

    def items(value: Any) -> int:  # the most items of one list the encoder was given at once
        if isinstance(value, list):
            return len(value)
        if isinstance(value, msgspec.Struct):
            return max((items(getattr(value, name)) for name in value.__struct_fields__), default=0)
        return 0

    assert max(items(value) for value in counting.calls) <= 8
    assert answer.raw == msgspec.json.encode(output) and answer.text_json == msgspec.json.encode(answer.text)
    assert answer.text == msgspec.json.format(answer.raw, indent=2).decode()  # read_graph prints its page whole


def test_the_wire_form_is_the_json_of_the_plain_result(memory: Memory) -> None:
    calls = (("read_graph", {}), ("search_nodes", {"query": "fact 1"}), ("open_nodes", {"names": ["E1"]}))
    for tool, arguments in calls:
        answer = reply(memory.read(tool, arguments), tool=tool)
        text, structured, meta = answer
        sent = msgspec.json.encode(plain(*answer.wire(), meta=meta))
        assert sent == msgspec.json.encode(plain(text, structured, meta=meta))
        assert json.loads(sent)["structuredContent"] == structured
