"""Reading: one stream by version, the whole log by position, and the position at a time."""

from __future__ import annotations

from datetime import UTC, datetime

from freezegun import freeze_time

from chronograph.eventstore import EntityCreated, LmdbLog, ObservationsAdded, StreamWrite
from chronograph.eventstore.clock import isoformat, parse_iso, to_us


def created(name: str) -> EntityCreated:
    return EntityCreated(workspace="default", name=name, entity_type="person")


def fill(store: LmdbLog, count: int) -> None:
    store.append(
        [StreamWrite(f"s{i % 3}", [ObservationsAdded(observations=(str(i),))]) for i in range(count)],
        actor="t",
    )


def test_an_empty_log_has_head_zero_and_reads_nothing(store: LmdbLog) -> None:
    assert store.head() == 0
    assert list(store.read_all()) == []
    assert store.read_stream("nothing") == []


def test_a_stream_reads_between_two_versions_inclusive(store: LmdbLog) -> None:
    fill(store, 30)
    assert [e.version for e in store.read_stream("s1", 3, 5)] == [3, 4, 5]
    assert [e.version for e in store.read_stream("s1", 9)] == [9, 10]


def test_a_stream_never_reads_into_a_stream_whose_id_extends_it(store: LmdbLog) -> None:
    store.append([StreamWrite("ab", [created("x")]), StreamWrite("a", [created("y")])], actor="t")
    assert [e.stream for e in store.read_stream("a")] == ["a"]


def test_the_log_reads_a_position_range_in_batches(store: LmdbLog) -> None:
    fill(store, 25)
    with store.read() as reader:
        batches = list(reader.batches(3, 20, batch_size=7))
    assert [len(b) for b in batches] == [7, 7, 4]
    assert [e.position for b in batches for e in b] == list(range(3, 21))


def test_read_all_is_a_lazy_iterator(store: LmdbLog) -> None:
    fill(store, 10)
    events = store.read_all(batch_size=4)
    assert next(events).position == 1
    assert [e.position for e in events] == list(range(2, 11))


def test_position_at_finds_the_state_in_force_at_a_timestamp(store: LmdbLog) -> None:
    moments = ["2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"]
    for i, moment in enumerate(moments):
        with freeze_time(moment):
            store.append([StreamWrite(f"s{i}", [created(str(i)), created(str(i))])], actor="t")
    assert store.position_at(parse_iso("2026-01-01T09:59:59Z")) == 0
    assert store.position_at(parse_iso("2026-01-01T10:00:00Z")) == 2
    assert store.position_at(parse_iso("2026-01-01T11:30:00Z")) == 4
    assert store.position_at(parse_iso("2030-01-01T00:00:00Z")) == 6


def test_recorded_at_never_goes_backwards_when_the_wall_clock_does(store: LmdbLog) -> None:
    with freeze_time("2026-05-01T12:00:00Z"):
        store.append([StreamWrite("a", [created("a")])], actor="t")
    with freeze_time("2026-05-01T08:00:00Z"):
        store.append([StreamWrite("b", [created("b")])], actor="t")
    first, second = store.read_all()
    assert second.recorded_at == first.recorded_at == to_us(datetime(2026, 5, 1, 12, tzinfo=UTC))
    assert store.position_at(parse_iso("2026-05-01T12:00:00Z")) == 2


def test_timestamps_come_from_the_frozen_clock(store: LmdbLog) -> None:
    with freeze_time("2026-11-21T14:00:00.123456Z"):
        store.append([StreamWrite("a", [created("a")])], actor="t")
    [envelope] = store.read_all()
    assert isoformat(envelope.recorded_at) == "2026-11-21T14:00:00.123456Z"


def test_a_reader_sees_one_snapshot_while_others_write(store: LmdbLog) -> None:
    fill(store, 3)
    with store.read() as reader:
        fill(store, 3)
        assert reader.head() == 3
    assert store.head() == 6
