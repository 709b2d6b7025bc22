"""Servers racing on one PostgreSQL log, each in a process of its own: a reader tailing the log
sees every event once, in position order; expected versions and idempotency keys hold
across processes; and a write waits on the network once while it holds the log's lock,
however much the other servers wrote since it last looked."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.postgres import database

pglog = pytest.importorskip("chronograph.eventstore.postgres.log")

WRITER = """
import json, sys, time
from chronograph.eventstore import ConcurrencyError, ObservationsAdded, StreamWrite
from chronograph.eventstore.postgres.log import PgLog
url, mode, name, start, count = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
outcomes = []
with PgLog(url) as log:
    while time.time() < start:
        time.sleep(0.001)
    for i in range(count):
        event = ObservationsAdded(observations=(f"{name}/{i}",))
        if mode == "spread":  # each its own stream, batches of one to three events
            result = log.append([StreamWrite(f"{name}-{i % 3}", [event] * (1 + i % 3))], actor=name)
            outcomes.append([result.first_position, result.last_position])
        elif mode == "expect":  # all on one stream, each at the version it read
            with log.read() as reader:
                seen = reader.stream_version("shared")
            try:
                log.append([StreamWrite("shared", [event], seen)], actor=name)
                outcomes.append([seen, "written"])
            except ConcurrencyError as error:
                outcomes.append([seen, error.stream, error.expected, error.actual])
        else:  # the same call, the same key, from every process
            result = log.append([StreamWrite("keyed", [ObservationsAdded(observations=("once",))] * 2)],
                                actor="same", idempotency_key=f"key-{i}")
            outcomes.append([result.first_position, result.last_position, result.replayed])
print(json.dumps(outcomes))
"""


def race(url: str, mode: str, processes: int, count: int) -> list[list[Any]]:
    """Run `processes` writers in `mode`, starting together; their outcomes, by process."""
    start = time.time() + 2.0
    running = [subprocess.Popen([sys.executable, "-c", WRITER, url, mode, f"w{n}", str(start), str(count)],
                                stdout=subprocess.PIPE, text=True) for n in range(processes)]
    outcomes = []
    for process in running:
        out, _ = process.communicate(timeout=300)
        assert process.returncode == 0
        outcomes.append(json.loads(out))
    return outcomes


def test_a_reader_tailing_the_log_while_processes_race_sees_every_event_once_in_order() -> None:
    url = database().log_url()
    with pglog.PgLog(url) as log:
        start = time.time() + 2.0
        writers = [subprocess.Popen([sys.executable, "-c", WRITER, url, "spread", f"w{n}", str(start), "40"],
                                    stdout=subprocess.PIPE, text=True) for n in range(4)]
        seen: list[int] = []
        while True:
            finished = all(writer.poll() is not None for writer in writers)
            with log.read() as reader:  # from where it stopped, as a follower reads
                seen.extend(envelope.position for envelope in reader.all(len(seen) + 1))
            if finished:
                break
        outcomes = [json.loads(writer.communicate()[0]) for writer in writers]
        written = sorted(p for runs in outcomes for first, last in runs for p in range(first, last + 1))
        assert all(writer.returncode == 0 for writer in writers)
        assert seen == written == list(range(1, len(written) + 1))
        with log.read() as reader:
            assert [e.position for e in reader.all()] == seen


def test_racing_processes_that_expect_a_version_write_it_once_and_the_others_are_refused() -> None:
    url = database().log_url()
    with pglog.PgLog(url) as log:
        outcomes = [o for runs in race(url, "expect", 4, 25) for o in runs]
        with log.read() as reader:
            final = reader.stream_version("shared")
            versions = [e.version for e in reader.stream("shared")]
    written = sorted(seen for seen, *rest in outcomes if rest == ["written"])
    refused = [o for o in outcomes if o[1:] != ["written"]]
    assert written == list(range(final))  # each version written once, by the one that expected it
    assert all(stream == "shared" and expected == seen and actual > seen for seen, stream, expected, actual in refused)
    assert len(written) + len(refused) == 4 * 25
    assert versions == list(range(1, final + 1))


def test_processes_racing_with_one_idempotency_key_write_once_and_all_get_that_result() -> None:
    url = database().log_url()
    with pglog.PgLog(url) as log:
        outcomes = race(url, "keyed", 4, 10)
        for i in range(10):
            results = [runs[i] for runs in outcomes]
            assert len({(first, last) for first, last, _ in results}) == 1
            assert sorted(replayed for _, _, replayed in results) == [False, True, True, True]
        with log.read() as reader:
            assert (reader.head(), reader.stream_version("keyed")) == (20, 20)


def test_a_write_waits_on_the_network_once_while_it_holds_the_lock_and_for_the_flush_after_it(tmp_path: Path) -> None:
    import psycopg
    from chronograph.application import Memory

    url = database().log_url()
    with Memory(url, cache=tmp_path / "other") as other, Memory(url, cache=tmp_path / "ours") as ours:
        ours.write("create_entities", {"entities": [{"name": "A", "entityType": "t", "observations": []}]}, actor="a")
        for n in range(3):  # what another server wrote since: ours folds it before deciding
            other.write("create_entities", {"entities": [{"name": f"B{n}", "entityType": "t", "observations": []}]},
                        actor="b")
        pool = ours.log.pool
        for connection in [pool.getconn() for _ in range(3)]:  # enough idle ones that the write opens no other
            pool.putconn(connection)  # (a snapshot waiting for a flush may write a barrier on a second one)
        idle = [pool.getconn() for _ in range(pool.get_stats()["pool_available"])]
        traces = [tmp_path / f"trace-{n}" for n in range(len(idle))]
        sinks = [path.open("w") for path in traces]
        for connection, sink in zip(idle, sinks, strict=True):  # every connection the write may be given, traced
            connection.pgconn.trace(sink.fileno())
            connection.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            pool.putconn(connection)
        ours.write("create_entities", {"entities": [{"name": "C", "entityType": "t", "observations": ["c"]}]},
                   actor="a")
        for connection, sink in zip(idle, sinks, strict=True):
            connection.pgconn.untrace()  # written out
            sink.close()
        assert {e.name for e in ours.read("read_graph", {}).entities} == {"A", "B0", "B1", "B2", "C"}
    held = [lines for lines in (path.read_text().splitlines() for path in traces)
            if any("pg_advisory_xact_lock" in line for line in lines)]
    assert len(held) == 1
    locked = next(i for i, line in enumerate(held[0]) if "pg_advisory_xact_lock" in line)
    answers = [line.split("\t")[-1].strip() for line in held[0][locked:] if "\tReadyForQuery" in line]
    assert answers == ["T", "I"]  # the lock, with the events to fold; then the append and its commit
    sent = [line for line in held[0][locked:] if line.startswith("F\t")]
    unflushed, commit, barrier = (next(i for i, line in enumerate(sent) if said in line)
                                  for said in ("synchronous_commit TO off", '"COMMIT"', "pg_logical_emit_message(true"))
    assert unflushed < commit < barrier  # the lock goes with the commit's record; the flush is waited for after it
