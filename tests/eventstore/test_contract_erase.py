"""The log contract, erasing (every backend passes it): events replaced in place with their
envelopes kept, streams moved to new ids, idempotency results dropped, the count of erasures."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest
from chronograph.eventstore import (
    ContentErased,
    EntityCreated,
    EntityMerged,
    Envelope,
    EventLog,
    LogTransaction,
    ObservationsAdded,
    RelationCreated,
    StreamWrite,
)
from support.logs import read_all, read_stream, stream_version


def erased(envelope: Envelope) -> ContentErased:
    return ContentErased(erased=envelope.type, workspace="w")


def seed(log: EventLog) -> None:
    log.append([StreamWrite("ada", [EntityCreated(workspace="w", name="Ada Secret", entity_type="person"),
                                    ObservationsAdded(observations=("born 1815",))])], actor="writer")
    log.append([StreamWrite("bob", [EntityCreated(workspace="w", name="Bob", entity_type="person")]),
                StreamWrite("rel:ada", [RelationCreated(workspace="w", source="Bob", target="Ada Secret",
                                                        relation_type="knows")])],
               actor="writer", idempotency_key="call-1")


def erase(log: EventLog, streams: dict[str, str]) -> list[Envelope]:
    return log.transact(lambda tx: tx.erase(streams, erased))


def test_erase_replaces_every_event_of_a_stream_and_keeps_its_envelopes(log: EventLog) -> None:
    seed(log)
    before = read_stream(log, "ada")
    originals = erase(log, {"ada": "ada"})
    after = read_stream(log, "ada")
    assert originals == before
    assert [e.event for e in after] == [ContentErased(erased="entity_created", workspace="w"),
                                        ContentErased(erased="observations_added", workspace="w")]
    keep = [(e.position, e.version, e.recorded_at, e.actor, e.correlation_id) for e in after]
    assert keep == [(e.position, e.version, e.recorded_at, e.actor, e.correlation_id) for e in before]


def test_erase_moves_a_stream_to_its_new_id(log: EventLog) -> None:
    seed(log)
    erase(log, {"rel:ada": "erased:1"})
    assert read_stream(log, "rel:ada") == [] and stream_version(log, "rel:ada") == 0
    moved = read_stream(log, "erased:1")
    assert [(e.stream, e.version, e.position) for e in moved] == [("erased:1", 1, 4)]
    log.append([StreamWrite("rel:ada", [RelationCreated(workspace="w", source="Bob", target="Cy",
                                                        relation_type="knows")], 0)], actor="writer")
    assert stream_version(log, "rel:ada") == 1


def test_erase_moves_a_stream_whose_id_passes_what_postgresql_indexes_and_back(log: EventLog) -> None:
    long = "rel\x1f" + "".join(chr(0x4E00 + (k * 7919) % 20000) for k in range(1200))  # 3,600 bytes
    elsewhere = "erased:" + long[::-1]
    log.append([StreamWrite(long, [RelationCreated(workspace="w", source="Bob", target="Ada", relation_type="k"),
                                   ObservationsAdded(observations=("x",))])], actor="writer")
    erase(log, {long: long})
    assert [e.event for e in read_stream(log, long)] == [ContentErased(erased="relation_created", workspace="w"),
                                                         ContentErased(erased="observations_added", workspace="w")]
    erase(log, {long: elsewhere})
    assert read_stream(log, long) == [] and stream_version(log, long) == 0
    assert [(e.stream, e.version) for e in read_stream(log, elsewhere)] == [(elsewhere, 1), (elsewhere, 2)]
    assert stream_version(log, elsewhere) == 2
    log.append([StreamWrite(long, [ObservationsAdded(observations=("y",))], 0)], actor="writer")
    assert [e.version for e in read_stream(log, long)] == [1]
    with log.read() as reader:
        assert list(reader.index_problems()) == []


def test_erased_events_pass_their_checksums(log: EventLog) -> None:
    seed(log)
    erase(log, {"ada": "ada", "rel:ada": "erased:1"})
    with log.read() as reader:
        assert list(reader.verify()) == []
    assert [e.position for e in read_all(log)] == [1, 2, 3, 4]


def test_erase_counts_erasures(log: EventLog) -> None:
    seed(log)
    with log.read() as reader:
        assert reader.erasures() == 0
    erase(log, {"ada": "ada"})
    erase(log, {"bob": "bob"})
    with log.read() as reader:
        assert reader.erasures() == 2


def test_erase_drops_the_results_idempotency_keys_remember_for_the_streams(log: EventLog) -> None:
    log.append([StreamWrite("bob", [EntityCreated(workspace="w", name="Bob", entity_type="person")])],
               actor="writer", idempotency_key="call-1")
    log.transact(lambda tx: tx.attach_result("call-1", b"Bob and his secrets"))  # type: ignore[attr-defined]
    erase(log, {"bob": "erased:b"})

    def recall(tx: LogTransaction) -> object:
        return tx.recall("call-1")

    recalled = log.transact(recall)
    assert recalled is not None and recalled.result is None and recalled.versions == {"erased:b": 1}


def test_erase_keeps_the_events_redact_keeps_of_a_stream_that_stays(log: EventLog) -> None:
    """A stream another thing took up after: only the events `redact` replaces are erased, and
    only the results of the calls that wrote them go."""
    seed(log)
    log.append([StreamWrite("rel:ada", [RelationCreated(workspace="w", source="Bob", target="Ada Secret",
                                                        relation_type="knows")])],
               actor="writer", idempotency_key="call-2")
    for key in ("call-1", "call-2"):
        log.transact(lambda tx, key=key: tx.attach_result(key, key.encode()))  # type: ignore[attr-defined]
    originals = log.transact(lambda tx: tx.erase({"rel:ada": "rel:ada"},
                                                 lambda e: erased(e) if e.version == 1 else None))
    assert [(e.stream, e.version) for e in originals] == [("rel:ada", 1)]
    assert [type(e.event) for e in read_stream(log, "rel:ada")] == [ContentErased, RelationCreated]
    assert stream_version(log, "rel:ada") == 2
    results = log.transact(lambda tx: [tx.recall(key).result for key in ("call-1", "call-2")])
    assert results == [None, b"call-2"]


def test_erase_refuses_to_keep_part_of_a_stream_it_moves_and_writes_nothing(log: EventLog) -> None:
    seed(log)
    before = read_all(log)
    with pytest.raises(ValueError, match="every event"):
        log.transact(lambda tx: tx.erase({"rel:ada": "erased:1"}, lambda e: None))
    assert read_all(log) == before


def test_erase_drops_the_results_that_quote_what_it_erased(log: EventLog) -> None:
    seed(log)
    log.append([], actor="writer", idempotency_key="quoting")  # wrote nothing, answered with Ada
    log.transact(lambda tx: tx.attach_result("quoting", b"Ada Secret, born 1815"))  # type: ignore[attr-defined]
    log.append([], actor="writer", idempotency_key="other")
    log.transact(lambda tx: tx.attach_result("other", b"Bob"))  # type: ignore[attr-defined]
    log.transact(lambda tx: tx.erase({"ada": "ada"}, erased, [b"Ada Secret"]))
    results = log.transact(lambda tx: [tx.recall(key).result for key in ("quoting", "other")])
    assert results == [None, b"Bob"]


def test_erase_finds_a_short_text_where_it_stands_alone_and_an_unreadable_answer_quoting_it_goes(
        log: EventLog) -> None:
    seed(log)
    answers = {"whole": ["Bo"], "word": ["merged 'Bo' into Cy"], "inside": ["Bob", "Bowl"], "none": ["Cy"],
               "unreadable": None}
    for key, answer in answers.items():
        log.append([], actor="writer", idempotency_key=key)
        result = b"\xc1Bo" if answer is None else msgspec.msgpack.encode(answer)  # 0xc1: never msgpack
        log.transact(lambda tx, key=key, result=result: tx.attach_result(key, result))  # type: ignore[attr-defined]
    log.transact(lambda tx: tx.erase({"ada": "ada"}, erased, [b"Bo"]))
    results = log.transact(lambda tx: {key: tx.recall(key).result for key in answers})
    assert {key for key, result in results.items() if result is None} == {"whole", "word", "unreadable"}


def test_rewrite_replaces_one_event_and_keeps_its_envelope(log: EventLog) -> None:
    log.append([StreamWrite("dup", [EntityCreated(workspace="w", name="Dup", entity_type="t"),
                                    EntityMerged(into="Ada Secret")])], actor="writer")
    before = read_stream(log, "dup")[1]
    original = log.transact(lambda tx: tx.rewrite(2, EntityMerged(into="(erased)")))
    after = read_stream(log, "dup")[1]
    assert original == before
    assert after.event == EntityMerged(into="(erased)") and after.recorded_at == before.recorded_at


def test_mentions_finds_the_events_whose_bytes_hold_a_needle(log: EventLog) -> None:
    seed(log)
    with log.read() as reader:
        found = list(reader.mentions([b"Ada Secret"]))
        later = list(reader.mentions([b"Ada Secret"], 2))
        none = list(reader.mentions([]))
    assert [e.position for e in found] == [1, 4] and [e.position for e in later] == [4] and none == []


def test_erase_runs_the_erase_hooks_with_the_originals(log: EventLog) -> None:
    seed(log)
    seen: list[Sequence[Envelope]] = []
    log.add_erase_hook(lambda tx, originals: seen.append(originals))
    erase(log, {"ada": "ada"})
    assert [[e.position for e in batch] for batch in seen] == [[1, 2]]


def test_an_erase_that_fails_writes_nothing(log: EventLog) -> None:
    seed(log)
    before = read_all(log)

    def fail(tx: LogTransaction) -> None:
        tx.erase({"ada": "ada"}, erased)
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        log.transact(fail)
    assert read_all(log) == before


def test_a_log_copies_into_another_event_for_event_and_resumes_where_it_stopped(log: EventLog, tmp_path) -> None:
    from chronograph.eventstore import LmdbLog
    from chronograph.eventstore.copying import copy_log, verify_copy

    seed(log)
    erase(log, {"bob": "erased:b"})
    with LmdbLog(tmp_path / "copy") as target:
        target.transact(lambda tx: tx.restore(read_all(log)[:2]))  # a copy cut off after two events
        assert copy_log(log, target) == 2
        assert verify_copy(log, target) == []
        with target.read() as reader:
            assert reader.erasures() == 1
            assert [e.event for e in reader.all()] == [e.event for e in read_all(log)]
