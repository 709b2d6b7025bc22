"""The log contract, reading (every backend passes it): one stream by version, the whole log by
position, and the position at a time."""

from __future__ import annotations

from datetime import UTC, datetime

from chronograph.eventstore import EntityCreated, EventLog, ObservationsAdded, StreamWrite
from chronograph.eventstore.clock import isoformat, parse_iso, to_us
from freezegun import freeze_time
from support.logs import position_at, read_all, read_stream


def created(name: str) -> EntityCreated:
    return EntityCreated(workspace="default", name=name, entity_type="person")


def fill(log: EventLog, count: int) -> None:
    log.append(
        [StreamWrite(f"s{i % 3}", [ObservationsAdded(observations=(str(i),))]) for i in range(count)],
        actor="t",
    )


def test_an_empty_log_has_head_zero_and_reads_nothing(log: EventLog) -> None:
    assert log.head() == 0
    assert list(read_all(log, )) == []
    assert read_stream(log, "nothing") == []


def test_a_stream_reads_between_two_versions_inclusive(log: EventLog) -> None:
    fill(log, 30)
    assert [e.version for e in read_stream(log, "s1", 3, 5)] == [3, 4, 5]
    assert [e.version for e in read_stream(log, "s1", 9)] == [9, 10]


def test_a_stream_never_reads_into_a_stream_whose_id_extends_it(log: EventLog) -> None:
    log.append([StreamWrite("ab", [created("x")]), StreamWrite("a", [created("y")])], actor="t")
    assert [e.stream for e in read_stream(log, "a")] == ["a"]



def test_the_positions_of_several_streams_come_lowest_first_in_one_answer(log: EventLog) -> None:
    fill(log, 10)  # s0 at 1, 4, 7, 10; s1 at 2, 5, 8; s2 at 3, 6, 9
    with log.read() as reader:
        assert reader.positions_of(["s2", "s0"]) == [1, 3, 4, 6, 7, 9, 10]
        assert reader.positions_of(["s1", "nothing", "s1"]) == [2, 5, 8]
        assert reader.positions_of([]) == []

def test_the_log_reads_a_position_range_in_batches(log: EventLog) -> None:
    fill(log, 25)
    with log.read() as reader:
        batches = list(reader.batches(3, 20, batch_size=7))
    assert [len(b) for b in batches] == [7, 7, 4]
    assert [e.position for b in batches for e in b] == list(range(3, 21))


def test_reading_everything_is_a_lazy_iterator(log: EventLog) -> None:
    fill(log, 10)
    with log.read() as reader:
        events = reader.all(batch_size=4)
        assert next(events).position == 1
        assert [e.position for e in events] == list(range(2, 11))


def test_the_log_reads_backwards_from_a_position_in_batches(log: EventLog) -> None:
    fill(log, 10)
    with log.read() as reader:
        assert [e.position for b in reader.batches_backward(8, 3, batch_size=4) for e in b] == [8, 7, 6, 5, 4, 3]
        assert [e.position for b in reader.batches_backward() for e in b] == list(range(10, 0, -1))


def test_a_stream_reads_backwards_from_its_newest_version(log: EventLog) -> None:
    fill(log, 9)  # streams s0, s1, s2: three events each
    with log.read() as reader:
        assert [e.version for e in reader.stream_backward("s1")] == [3, 2, 1]
        assert [e.version for e in reader.stream_backward("s1", 2)] == [2, 1]
        assert list(reader.stream_backward("nothing")) == []


def test_one_event_is_read_by_its_position(log: EventLog) -> None:
    fill(log, 3)
    with log.read() as reader:
        assert reader.get(2) is not None and reader.get(2).position == 2  # type: ignore[union-attr]
        assert reader.get(4) is None


def test_position_at_finds_the_state_in_force_at_a_timestamp(log: EventLog) -> None:
    moments = ["2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"]
    for i, moment in enumerate(moments):
        with freeze_time(moment):
            log.append([StreamWrite(f"s{i}", [created(str(i)), created(str(i))])], actor="t")
    assert position_at(log, parse_iso("2026-01-01T09:59:59Z")) == 0
    assert position_at(log, parse_iso("2026-01-01T10:00:00Z")) == 2
    assert position_at(log, parse_iso("2026-01-01T11:30:00Z")) == 4
    assert position_at(log, parse_iso("2030-01-01T00:00:00Z")) == 6


def test_recorded_at_never_goes_backwards_when_the_wall_clock_does(log: EventLog) -> None:
    with freeze_time("2026-05-01T12:00:00Z"):
        log.append([StreamWrite("a", [created("a")])], actor="t")
    with freeze_time("2026-05-01T08:00:00Z"):
        log.append([StreamWrite("b", [created("b")])], actor="t")
    first, second = read_all(log, )
    assert second.recorded_at == first.recorded_at == to_us(datetime(2026, 5, 1, 12, tzinfo=UTC))
    assert position_at(log, parse_iso("2026-05-01T12:00:00Z")) == 2


def test_timestamps_come_from_the_frozen_clock(log: EventLog) -> None:
    with freeze_time("2026-11-21T14:00:00.123456Z"):
        log.append([StreamWrite("a", [created("a")])], actor="t")
    [envelope] = read_all(log, )
    assert isoformat(envelope.recorded_at) == "2026-11-21T14:00:00.123456Z"


def test_a_reader_sees_one_snapshot_while_others_write(log: EventLog) -> None:
    fill(log, 3)
    with log.read() as reader:
        fill(log, 3)
        assert reader.head() == 3
    assert log.head() == 6


def test_every_event_of_one_transaction_shares_its_timestamp(log: EventLog) -> None:
    with freeze_time("2026-01-01T10:00:00Z") as frozen:

        def work(tx):  # type: ignore[no-untyped-def]
            stamp = tx.recorded_at
            tx.append([StreamWrite("a", [created("A")])], actor="t")
            frozen.tick(5)
            tx.append([StreamWrite("b", [created("B")])], actor="t")
            return stamp

        stamp = log.transact(work)
    assert [e.recorded_at for e in read_all(log)] == [stamp, stamp]
    assert stamp == to_us(datetime(2026, 1, 1, 10, tzinfo=UTC))


def test_a_reader_waiting_for_an_append_sees_another_writer_s_event(log: EventLog) -> None:
    import threading

    fill(log, 1)
    writer = threading.Timer(0.05, lambda: log.append([StreamWrite("late", [created("L")])], actor="t"))
    writer.start()
    try:
        assert log.wait_for_append(1, timeout=10) == 2
    finally:
        writer.join()
    assert log.wait_for_append(2, timeout=0.01) == 2  # nothing more: the head, after the timeout
