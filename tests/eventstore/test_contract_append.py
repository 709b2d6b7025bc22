"""The log contract, appending (every backend passes it): expected versions, atomic multi-stream
writes, gap-free positions, idempotency."""

from __future__ import annotations

import pytest
from chronograph.eventstore import (
    ANY,
    EXISTS,
    NO_STREAM,
    ConcurrencyError,
    EntityCreated,
    EntityDeleted,
    EventLog,
    IdempotencyConflictError,
    ObservationsAdded,
    StreamWrite,
)
from support.logs import read_all, read_stream, stream_version


def created(name: str = "Ada") -> EntityCreated:
    return EntityCreated(workspace="default", name=name, entity_type="person")


def added(text: str) -> ObservationsAdded:
    return ObservationsAdded(observations=(text,))


def test_append_assigns_gap_free_positions_in_commit_order(log: EventLog) -> None:
    first = log.append([StreamWrite("a", [created("A"), added("1")])], actor="t")
    second = log.append([StreamWrite("b", [created("B")])], actor="t")
    assert (first.first_position, first.last_position) == (1, 2)
    assert (second.first_position, second.last_position) == (3, 3)
    assert [e.position for e in read_all(log, )] == [1, 2, 3]


def test_append_numbers_each_stream_from_version_one(log: EventLog) -> None:
    log.append([StreamWrite("a", [created()]), StreamWrite("b", [created("B")])], actor="t")
    result = log.append([StreamWrite("a", [added("x"), added("y")])], actor="t")
    assert result.versions == {"a": 3}
    assert [(e.stream, e.version) for e in read_all(log, )] == [
        ("a", 1), ("b", 1), ("a", 2), ("a", 3)
    ]


def test_no_stream_accepts_a_new_stream_and_rejects_an_existing_one(log: EventLog) -> None:
    log.append([StreamWrite("a", [created()], NO_STREAM)], actor="t")
    with pytest.raises(ConcurrencyError) as raised:
        log.append([StreamWrite("a", [created()], NO_STREAM)], actor="t")
    assert (raised.value.stream, raised.value.expected, raised.value.actual) == ("a", "no_stream", 1)


def test_exists_rejects_a_stream_with_no_events(log: EventLog) -> None:
    with pytest.raises(ConcurrencyError) as raised:
        log.append([StreamWrite("ghost", [added("x")], EXISTS)], actor="t")
    assert raised.value.actual == 0
    log.append([StreamWrite("ghost", [created()])], actor="t")
    log.append([StreamWrite("ghost", [added("x")], EXISTS)], actor="t")
    assert stream_version(log, "ghost") == 2


def test_an_exact_version_must_match_the_stream_head(log: EventLog) -> None:
    log.append([StreamWrite("a", [created(), added("1")])], actor="t")
    log.append([StreamWrite("a", [added("2")], 2)], actor="t")
    with pytest.raises(ConcurrencyError) as raised:
        log.append([StreamWrite("a", [added("3")], 2)], actor="t")
    assert raised.value.expected == 2 and raised.value.actual == 3


def test_any_writes_whatever_version_the_stream_is_at(log: EventLog) -> None:
    log.append([StreamWrite("a", [created()], ANY)], actor="t")
    log.append([StreamWrite("a", [added("x")], ANY)], actor="t")
    assert stream_version(log, "a") == 2


def test_the_concurrency_error_names_the_stream_and_both_versions(log: EventLog) -> None:
    log.append([StreamWrite("entity-7", [created()])], actor="t")
    with pytest.raises(ConcurrencyError, match=r"'entity-7'.*version 4.*version 1"):
        log.append([StreamWrite("entity-7", [added("x")], 4)], actor="t")


def test_a_mismatch_on_one_stream_writes_nothing_to_any_stream(log: EventLog) -> None:
    log.append([StreamWrite("a", [created()])], actor="t")
    with pytest.raises(ConcurrencyError):
        log.append(
            [StreamWrite("b", [created("B")], NO_STREAM), StreamWrite("a", [added("x")], 5)],
            actor="t",
        )
    assert log.head() == 1
    assert stream_version(log, "b") == 0


def test_two_writes_to_one_stream_in_one_append_are_checked_in_order(log: EventLog) -> None:
    result = log.append(
        [StreamWrite("a", [created()], NO_STREAM), StreamWrite("a", [added("x")], 1)], actor="t"
    )
    assert result.versions == {"a": 2}


def test_every_event_of_one_append_shares_its_correlation_id(log: EventLog) -> None:
    log.append([StreamWrite("a", [created()]), StreamWrite("b", [created("B")])], actor="t")
    log.append([StreamWrite("c", [created("C")])], actor="t", correlation_id="call-42")
    ids = [e.correlation_id for e in read_all(log, )]
    assert ids[0] == ids[1] and ids[1] != ids[2] and ids[2] == "call-42"


def test_the_envelope_records_actor_and_idempotency_key(log: EventLog) -> None:
    log.append([StreamWrite("a", [created()])], actor="claude-desktop", idempotency_key="req-1")
    [envelope] = read_all(log, )
    assert (envelope.actor, envelope.idempotency_key, envelope.type) == (
        "claude-desktop", "req-1", "entity_created"
    )


def test_a_repeated_idempotency_key_returns_the_first_result_and_writes_nothing(
    log: EventLog,
) -> None:
    writes = [StreamWrite("a", [created()], NO_STREAM)]
    first = log.append(writes, actor="t", idempotency_key="req-1")
    again = log.append(writes, actor="t", idempotency_key="req-1")
    assert (again.first_position, again.last_position, again.versions) == (
        first.first_position, first.last_position, first.versions
    )
    assert again.replayed and not first.replayed
    assert log.head() == 1


def test_an_idempotency_key_reused_for_other_content_is_an_error(log: EventLog) -> None:
    log.append([StreamWrite("a", [created()])], actor="t", idempotency_key="req-1")
    with pytest.raises(IdempotencyConflictError, match="req-1"):
        log.append([StreamWrite("a", [added("other")])], actor="t", idempotency_key="req-1")
    assert log.head() == 1


def test_an_idempotency_key_longer_than_an_lmdb_key_still_works(log: EventLog) -> None:
    key = "k" * 2000
    log.append([StreamWrite("a", [created()])], actor="t", idempotency_key=key)
    assert log.append([StreamWrite("a", [created()])], actor="t", idempotency_key=key).replayed


def test_a_stream_id_longer_than_an_lmdb_key_is_stored_and_read_back(log: EventLog) -> None:
    stream = "relation:" + "é" * 1000
    log.append([StreamWrite(stream, [created(), added("x")])], actor="t")
    assert [e.version for e in read_stream(log, stream)] == [1, 2]
    assert read_stream(log, stream)[0].stream == stream


def scattered(count: int, salt: int = 0) -> str:
    """CJK text that compresses little: three bytes a character, as PostgreSQL keeps it."""
    return "".join(chr(0x4E00 + (k * 7919 + salt * 104729) % 20000) for k in range(count))


def test_a_stream_id_past_what_postgresql_indexes_is_stored_versioned_and_read_back(log: EventLog) -> None:
    stream = "relation\x1fdefault\x1f" + scattered(1200)  # 3,600 bytes: a b-tree entry takes about 2,700
    twin = stream[:-1] + "x"  # the same but its last character
    log.append([StreamWrite(stream, [created(), added("x")], NO_STREAM)], actor="t")
    log.append([StreamWrite(twin, [created()], NO_STREAM), StreamWrite(stream, [added("y")], 2)], actor="t")
    with pytest.raises(ConcurrencyError) as raised:
        log.append([StreamWrite(stream, [created()], NO_STREAM)], actor="t")
    assert raised.value.actual == 3
    assert [(e.stream, e.version, e.position) for e in read_stream(log, stream)] == [(stream, 1, 1), (stream, 2, 2),
                                                                                    (stream, 3, 4)]
    assert (stream_version(log, stream), stream_version(log, twin)) == (3, 1)
    with log.read() as reader:
        assert [e.version for e in reader.stream_backward(stream)] == [3, 2, 1]
        assert reader.positions_of([stream, twin]) == [1, 2, 3, 4] and reader.positions(twin) == [3]


def test_an_inline_hook_sees_the_new_envelopes_inside_the_same_transaction(
    log: EventLog,
) -> None:
    seen: list[tuple[int, int]] = []

    def hook(tx, envelopes):  # type: ignore[no-untyped-def]
        seen.append((tx.head(), len(envelopes)))

    log.add_inline_hook(hook)
    log.append([StreamWrite("a", [created(), added("x")])], actor="t")
    assert seen == [(2, 2)]


def test_a_failing_inline_hook_rolls_the_append_back(log: EventLog) -> None:
    def hook(tx, envelopes):  # type: ignore[no-untyped-def]
        raise RuntimeError("view update failed")

    log.add_inline_hook(hook)
    with pytest.raises(RuntimeError):
        log.append([StreamWrite("a", [created()])], actor="t")
    assert log.head() == 0


def test_work_in_a_transaction_that_raises_leaves_the_store_untouched(log: EventLog) -> None:
    def work(tx):  # type: ignore[no-untyped-def]
        tx.append([StreamWrite("a", [created()])], actor="t")
        raise ValueError("validation failed after deciding")

    with pytest.raises(ValueError):
        log.transact(work)
    assert log.head() == 0


def test_an_appended_event_can_be_deleted_only_by_a_new_event(log: EventLog) -> None:
    log.append([StreamWrite("a", [created()])], actor="t")
    log.append([StreamWrite("a", [EntityDeleted()], 1)], actor="t")
    assert [e.type for e in read_stream(log, "a")] == ["entity_created", "entity_deleted"]


def test_a_transaction_sees_the_versions_its_own_appends_and_erasures_leave(log: EventLog) -> None:
    log.append([StreamWrite("ada", [created()], NO_STREAM)], actor="t")

    def work(tx):  # type: ignore[no-untyped-def]
        seen = [tx.stream_version("ada"), tx.stream_version("bob")]
        tx.append([StreamWrite("ada", [added("one"), added("two")], 1), StreamWrite("bob", [created("Bob")])],
                  actor="t")
        seen += [tx.stream_version("ada"), tx.stream_version("bob")]
        with pytest.raises(ConcurrencyError):  # the version read before the append is stale now
            tx.append([StreamWrite("ada", [added("three")], 1)], actor="t")
        tx.erase({"ada": "ada-moved"}, lambda envelope: envelope.event)
        seen += [tx.stream_version("ada"), tx.stream_version("ada-moved")]
        tx.append([StreamWrite("ada", [created()], NO_STREAM)], actor="t")
        return [*seen, tx.stream_version("ada")]

    assert log.transact(work) == [1, 0, 3, 1, 0, 3, 1]
    assert stream_version(log, "ada") == 1 and stream_version(log, "ada-moved") == 3
