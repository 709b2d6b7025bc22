"""A command's write transaction: a retried requestId answered from the log, a reused one
refused, and nothing of a refused command written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application.engine.arguments import parse
from chronograph.application.engine.commands import Written, commit
from chronograph.application.engine.registry import find
from chronograph.application.errors import ChronographError, RequestReplayError

CREATE = find("create_entities")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store") as opened:
        yield opened


def create(memory: Memory, arguments: dict[str, object]) -> Written:
    return commit(memory, CREATE, parse(CREATE.name, arguments, CREATE.arguments), actor="t", correlation_id=None,
                  principal="local")


def test_a_retried_request_is_answered_as_the_first_time_and_writes_nothing(memory: Memory) -> None:
    arguments = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["x"]}], "requestId": "r1"}
    first = create(memory, arguments)
    head = memory.log.head()
    again = create(memory, arguments)
    assert (first.changed, again.changed, again.replayed) == (True, False, True)
    assert msgspec.to_builtins(again.output) == msgspec.to_builtins(first.output)
    assert memory.log.head() == head


def test_a_request_id_reused_with_other_arguments_is_refused_and_writes_nothing(memory: Memory) -> None:
    create(memory, {"entities": [{"name": "Ada", "entityType": "person", "observations": []}], "requestId": "r1"})
    head = memory.log.head()
    with pytest.raises(RequestReplayError, match="r1"):
        create(memory, {"entities": [{"name": "Bob", "entityType": "person", "observations": []}], "requestId": "r1"})
    assert memory.log.head() == head
    assert memory.read("open_nodes", {"names": ["Bob"]}).entities == []  # type: ignore[attr-defined]


def test_a_refused_command_leaves_neither_events_nor_its_request_id(memory: Memory) -> None:
    relation = {"relations": [{"from": "Ada", "to": "Nobody", "relationType": "knows"}], "requestId": "r2"}
    rel = find("create_relations")
    with pytest.raises(ChronographError):
        commit(memory, rel, parse(rel.name, relation, rel.arguments), actor="t", correlation_id=None,
               principal="local")
    assert memory.log.head() == 0
    create(memory, {"entities": [{"name": "Ada", "entityType": "p", "observations": []},
                                 {"name": "Nobody", "entityType": "p", "observations": []}]})
    made = commit(memory, rel, parse(rel.name, relation, rel.arguments), actor="t", correlation_id=None,
                  principal="local")
    assert made.changed and not made.replayed  # the refused call did not keep its requestId


def test_a_retried_forget_answers_as_the_first_call_did_after_its_scrub(memory: Memory) -> None:
    memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["x"]}]},
                 actor="t")
    call = {"name": "Ada", "reason": "asked", "requestId": "forget-1"}
    first = msgspec.to_builtins(memory.write("forget_entity", call, actor="t").output)
    again = memory.write("forget_entity", call, actor="t")
    assert again.replayed
    assert "message" in first and "scrubbed" in first  # completed after the commit
    assert msgspec.to_builtins(again.output) == first


def test_a_completed_answer_is_not_remembered_for_a_call_whose_result_was_erased_since(memory: Memory) -> None:
    from chronograph.application.engine.commands import _keep_final

    arguments = {"entities": [{"name": "Ada", "entityType": "person", "observations": []}], "requestId": "r1"}
    made = create(memory, arguments)
    memory.write("forget_entity", {"name": "Ada", "reason": "asked"}, actor="t")
    _keep_final(memory, "create_entities\x00default\x00r1", b"", made.output)
    with pytest.raises(RequestReplayError):  # still erased, not answered again
        create(memory, arguments)


def test_a_failure_after_the_commit_says_the_write_was_stored_not_that_nothing_was(memory: Memory) -> None:
    from chronograph.application.errors import StorageError
    from chronograph.eventstore import StoreWriteError

    def failing(*_: object) -> None:
        raise StoreWriteError("the store at /s could not be written: its filesystem is mounted read-only; "
                              "nothing was written")

    memory.after_commit.append(failing)
    with pytest.raises(StorageError, match="^The write was stored, but what follows it could not be done") as said:
        create(memory, {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]})
    assert said.value.code == "storage"
    assert memory.read("open_nodes", {"names": ["Ada"]}).entities  # type: ignore[attr-defined]
