"""Copying a log: a batch at a time, events and idempotency records alike."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from chronograph.eventstore import (
    ContentErased,
    EntityCreated,
    Envelope,
    EventLog,
    LmdbLog,
    ObservationsAdded,
    StoreCorruptError,
    StreamWrite,
    copying,
)
from chronograph.eventstore.copying import CopyError, copy_log, verify_copy
from chronograph.eventstore.lmdb.holders import StoreBusyError
from support.holders import held_open
from support.logs import read_all


def test_a_copy_holds_one_batch_of_events_and_of_idempotency_records_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copying, "BATCH", 4)
    with LmdbLog(tmp_path / "source") as source, LmdbLog(tmp_path / "target") as target:
        for i in range(11):
            source.append([StreamWrite(f"s{i}", [EntityCreated(workspace="w", name=f"n{i}", entity_type="t")])],
                          actor="t", idempotency_key=f"key-{i}")
        held: list[int] = []
        transaction = target.transaction

        def counted(txn: Any) -> Any:
            tx = transaction(txn)
            restore, records = tx.restore, tx.restore_records
            tx.restore = lambda envelopes, stored=None: (held.append(len(envelopes)), restore(envelopes, stored))[1]
            tx.restore_records = lambda rows, erasures, **kw: (held.append(len(rows)), records(rows, erasures, **kw))[1]
            return tx

        monkeypatch.setattr(target, "transaction", counted)
        assert copy_log(source, target) == 11
        assert max(held) <= 4 and sum(held) == 22
        assert verify_copy(source, target) == []


@pytest.mark.parametrize("damaged", ["n1-middle", "n2-newest"])
def test_a_damaged_event_is_never_copied_under_a_new_checksum(tmp_path: Path, damaged: str) -> None:
    with LmdbLog(tmp_path / "source") as source:
        for name in ("n0-first", "n1-middle", "n2-newest"):
            source.append([StreamWrite(name, [EntityCreated(workspace="w", name=name, entity_type="t")])], actor="t")
    data = (tmp_path / "source" / "data.mdb").read_bytes()
    (tmp_path / "source" / "data.mdb").write_bytes(data.replace(damaged.encode(), damaged.upper().encode()))
    with pytest.raises(StoreCorruptError, match=f"position {2 if damaged == 'n1-middle' else 3} does not match"):
        with LmdbLog(tmp_path / "source", readonly=True) as source, LmdbLog(tmp_path / "target") as target:
            copy_log(source, target)
    if damaged == "n2-newest":  # the source refused to open: nothing was begun
        assert not (tmp_path / "target").exists()
        return
    with LmdbLog(tmp_path / "target", readonly=True) as target:
        assert target.head() == 0  # the batch that held it was not written


def _seed(log: EventLog) -> None:
    log.append([StreamWrite("ada", [EntityCreated(workspace="w", name="Ada Secret", entity_type="person"),
                                    ObservationsAdded(observations=("born 1815",))])], actor="t")
    log.append([StreamWrite("bob", [EntityCreated(workspace="w", name="Bob", entity_type="person")])],
               actor="t", idempotency_key="call-1")


def _erased(envelope: Envelope) -> ContentErased:
    return ContentErased(erased=envelope.type, workspace="w")


def test_a_copy_resumed_after_the_source_forgot_part_of_what_it_holds_is_refused_before_anything_is_written(
        log: EventLog, tmp_path: Path) -> None:
    with LmdbLog(tmp_path / "source") as source:
        _seed(source)
        log.transact(lambda tx: tx.restore(read_all(source)))  # a copy cut off after three events
        source.transact(lambda tx: tx.erase({"ada": "ada"}, _erased))  # then `forget` in the source
        source.append([StreamWrite("cy", [EntityCreated(workspace="w", name="Cy", entity_type="t")])], actor="t")
        kept = read_all(log)
        with pytest.raises(CopyError, match="not exactly the first ones.*nothing was copied.*empty store"):
            copy_log(source, log)
    assert read_all(log) == kept and kept[0].event == EntityCreated(workspace="w", name="Ada Secret",
                                                                    entity_type="person")
    with log.read() as reader:
        assert (reader.head(), reader.erasures(), reader.scrubbed_through()) == (3, 0, 0)


def test_a_resumed_copy_into_a_target_that_held_records_leaves_its_erasures_to_its_scrub(
        log: EventLog, tmp_path: Path) -> None:
    with LmdbLog(tmp_path / "source") as source:
        _seed(source)
        assert copy_log(source, log) == 3
        source.append([StreamWrite("cy", [EntityCreated(workspace="w", name="Cy", entity_type="t")])], actor="t",
                      idempotency_key="call-2")
        source.transact(lambda tx: tx.erase({"cy": "erased:c"}, _erased, [b"Bob"]))  # rewrites call-1's record
        assert copy_log(source, log) == 1
        assert verify_copy(source, log) == []
    with log.read() as reader:  # the record it held before, overwritten, may linger in its storage
        assert (reader.erasures(), reader.scrubbed_through()) == (1, 0)


def test_a_copy_into_an_empty_target_counts_the_sources_erasures_as_scrubbed(log: EventLog, tmp_path: Path) -> None:
    with LmdbLog(tmp_path / "source") as source:
        _seed(source)
        source.transact(lambda tx: tx.erase({"ada": "ada"}, _erased))
        assert copy_log(source, log) == 3
    with log.read() as reader:
        assert (reader.erasures(), reader.scrubbed_through()) == (1, 1)




def test_a_copy_into_a_store_another_process_has_open_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    LmdbLog(tmp_path / "target").close()
    with held_open(tmp_path / "target", "writer"), LmdbLog(tmp_path / "source") as source, \
            LmdbLog(tmp_path / "target") as target:
        _seed(source)
        with pytest.raises(StoreBusyError, match=f"the store at {tmp_path / 'target'} is open in another"):
            copy_log(source, target)
        assert target.head() == 0


def test_another_servers_write_to_a_database_target_waits_for_the_whole_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg  # noqa: PLC0415 (the postgresql extra)
    from chronograph.eventstore.postgres.log import PgLog  # noqa: PLC0415
    from support.postgres import database  # noqa: PLC0415

    monkeypatch.setattr(copying, "BATCH", 1)
    url = database().log_url()
    with LmdbLog(tmp_path / "source") as source, PgLog(url) as target, PgLog(url) as server:
        _seed(source)
        writes: list[threading.Thread] = []

        def write_between_batches(done: int, total: int) -> None:
            if writes:
                return
            writes.append(threading.Thread(target=server.append, args=(
                [StreamWrite("live", [EntityCreated(workspace="w", name="Live", entity_type="t")])],),
                kwargs={"actor": "server"}))
            writes[0].start()
            with psycopg.connect(url.partition("?")[0], autocommit=True) as admin:
                for _ in range(10_000):  # until the server's write waits on the log's lock
                    if admin.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                                     " AND database = (SELECT oid FROM pg_database WHERE datname = "
                                     "current_database())").fetchone() == (1,):
                        return
                    writes[0].join(0.001)
                    if not writes[0].is_alive():
                        pytest.fail("another server wrote into the target between two batches of the copy")

        assert copy_log(source, target, write_between_batches) == 3
        writes[0].join(60)
        assert [e.stream for e in read_all(target)] == ["ada", "ada", "bob", "live"]


def _misfile(log: EventLog, position: int) -> None:
    """File the event at `position` under another stream in the log's index, its bytes untouched."""
    if isinstance(log, LmdbLog):
        with log.read() as reader:
            event = reader.get(position)
        assert event is not None
        index, key = log.dbs.layout, log.dbs.key
        with log.environment.env.begin(write=True) as txn:
            assert txn.delete(index.key(key(event.stream), event.version), db=log.dbs.streams)
            txn.put(index.key(key(event.stream + "-"), 1), index.value(position), db=log.dbs.streams)
        return
    import psycopg  # noqa: PLC0415 (the postgresql extra)
    from chronograph.eventstore.postgres.log import PgLog  # noqa: PLC0415

    assert isinstance(log, PgLog)
    with psycopg.connect(log.pool.conninfo, autocommit=True) as connection:
        connection.execute(log.schema.sql("UPDATE {events} SET stream = stream || '-' WHERE position = %s"),
                           (position,))


def test_the_check_of_a_copy_finds_an_event_its_index_files_under_another_stream(
        log: EventLog, tmp_path: Path) -> None:
    with LmdbLog(tmp_path / "source") as source:
        _seed(source)
        assert copy_log(source, log) == 3
        _misfile(log, 2)  # as a process might while the copy is checked: reads by stream would miss it
        problems = verify_copy(source, log)
    assert problems and "position 2" in problems[0] and all(p.startswith("index:") for p in problems)
