"""Benchmark the PostgreSQL log's work by stream, and the upgrade of a log to format 3.

    python bench/bench_pg_streams.py --compare BEFORE_PYTHON AFTER_PYTHON [--runs 3] [--streams 20000]
    python bench/bench_pg_streams.py --upgrade BEFORE_PYTHON AFTER_PYTHON [--events 100000]

`--compare` runs this script's measure in processes of two checkouts' interpreters (each imports
its own `chronograph`), alternating them `--runs` times, and prints the median of each one's
p50s side by side: an append of one event to an existing stream (its head read by key, or by
text before), an append that makes a new relation stream, a read of a stream's events, and a
read of its version, each in its own transaction, in process. Each run fills a new schema
with `--streams` entity streams of two events and half as many relation streams of one.

`--upgrade` fills a log of `--events` events with the first interpreter (an earlier format),
then times the second's first open of it (the upgrade), and a second open.

The database (`--url`, default a new `pgstream_bench` on 127.0.0.1) is dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from report import print_table, write_json

SERVER = "postgresql://postgres@127.0.0.1:5432"
OPS = ("append to a stream", "append a new stream", "read a stream", "read a stream's version")


def relation(i: int) -> str:
    return f"relation\x1fdefault\x1fPerson {i}\x1fPerson {i * 7 % 1000}\x1fknows"


def entities(count: int) -> list[str]:
    began = int(time.time() * 1000) << 8
    return [f"entity-{began + i:014x}{random.getrandbits(64):016x}" for i in range(count)]


def fill(url: str, streams: list[str], relations: int) -> Any:
    from chronograph.eventstore import EntityCreated, ObservationsAdded, StreamWrite  # noqa: PLC0415
    from chronograph.eventstore.postgres.log import PgLog  # noqa: PLC0415

    log = PgLog(url)
    for start in range(0, len(streams), 1000):
        log.append([StreamWrite(s, [EntityCreated(workspace="w", name=s[-8:], entity_type="t"),
                                    ObservationsAdded(observations=("likes tea",))])
                    for s in streams[start:start + 1000]], actor="bench")
    for start in range(0, relations, 1000):
        log.append([StreamWrite(relation(i), [ObservationsAdded(observations=("r",))])
                    for i in range(start, min(relations, start + 1000))], actor="bench")
    return log


def measure(url: str, count: int, samples: int) -> dict[str, float]:
    """p50 (µs) of each of `OPS` on a new log of `count` entity streams."""
    from chronograph.eventstore import ANY, NO_STREAM, ObservationsAdded, StreamWrite  # noqa: PLC0415

    streams = entities(count)
    log = fill(url, streams, count // 2)
    times: dict[str, list[float]] = {op: [] for op in OPS}
    fresh = count
    for n in range(samples):
        stream = random.choice(streams)
        for op in random.sample(OPS, len(OPS)):
            began = time.perf_counter()
            if op == OPS[0]:
                log.append([StreamWrite(stream, [ObservationsAdded(observations=(f"o{n}",))], ANY)], actor="bench")
            elif op == OPS[1]:
                fresh += 1
                log.append([StreamWrite(relation(fresh), [ObservationsAdded(observations=("r",))], NO_STREAM)],
                           actor="bench")
            elif op == OPS[2]:
                with log.read() as reader:
                    assert list(reader.stream(stream))
            else:
                with log.read() as reader:
                    assert reader.stream_version(stream) >= 2
            times[op].append((time.perf_counter() - began) * 1e6)
    log.close()
    return {op: statistics.median(values) for op, values in times.items()}


def upgrade_fill(url: str, events: int) -> None:
    streams = entities(events // 3)
    fill(url, streams, events - 2 * len(streams)).close()


def upgrade_open(url: str) -> dict[str, float]:
    from chronograph.eventstore.postgres.log import PgLog  # noqa: PLC0415

    out = {}
    for name in ("first open (upgrade)", "second open"):
        began = time.perf_counter()
        PgLog(url).close()
        out[name] = time.perf_counter() - began
    return out


def run(python: str, *args: str) -> Any:
    done = subprocess.run([python, __file__, *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{python} {' '.join(args)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def admin(statement: str) -> None:
    import psycopg  # noqa: PLC0415

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as connection:
        connection.execute(statement)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--upgrade", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--streams", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--json", type=Path, default=Path("bench-pg-streams.json"))
    parser.add_argument("--one", choices=("measure", "fill", "open"))
    parser.add_argument("--url")
    options = parser.parse_args(argv)
    if options.one == "measure":
        print(json.dumps(measure(options.url, options.streams, options.samples)))
        return 0
    if options.one == "fill":
        upgrade_fill(options.url, options.events)
        print("{}")
        return 0
    if options.one == "open":
        print(json.dumps(upgrade_open(options.url)))
        return 0
    database = f"pgstream_bench_{uuid.uuid4().hex[:8]}"
    admin(f'CREATE DATABASE "{database}"')
    base = f"{SERVER}/{database}"
    figures: dict[str, Any] = {}
    try:
        if options.compare:
            found: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
            for _ in range(options.runs):
                for side, python in zip(("before", "after"), options.compare, strict=True):
                    found[side].append(run(python, "--one", "measure", "--url",
                                           f"{base}?schema=s_{uuid.uuid4().hex[:10]}", "--streams",
                                           str(options.streams), "--samples", str(options.samples)))
            medians = {side: {op: statistics.median(r[op] for r in runs) for op in OPS} for side, runs in found.items()}
            figures["compare"] = {"runs": found, "medians": medians, "streams": options.streams}
            print_table(f"p50 by stream, µs (median of {options.runs} alternated runs, {options.streams:,} entity "
                        "streams)", [(op, f"{medians['before'][op]:.0f} -> {medians['after'][op]:.0f}",
                                      f"{medians['after'][op] / medians['before'][op]:.2f}x") for op in OPS])
        if options.upgrade:
            url = f"{base}?schema=u_{uuid.uuid4().hex[:10]}"
            run(options.upgrade[0], "--one", "fill", "--url", url, "--events", str(options.events))
            opened = run(options.upgrade[1], "--one", "open", "--url", url)
            figures["upgrade"] = {"events": options.events, **opened}
            print_table(f"upgrade of a log of {options.events:,} events", [
                (name, f"{seconds:.2f} s", "") for name, seconds in opened.items()])
    finally:
        admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    write_json(options.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
