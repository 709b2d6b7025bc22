"""Benchmark the PostgreSQL log side by side with LMDB, and servers sharing one database.

    python bench/bench_postgres.py [--url postgresql://postgres@127.0.0.1:5432] [--cold 1000000] [--json FILE]

In one run, on one machine:
  * durable appends of one event, and of batches of 1,000, per second, LMDB (sync) and
    PostgreSQL (synchronous_commit on);
  * create_entities p50 over stdio, a server on a store folder and one on a database;
  * 8 stdio server processes x 1,000 writes on one database: lost writes, views == a replay;
  * catch-up lag between two servers: one writes, another process follows (p50, p99);
  * cold start of a server with an empty cache on a database of --cold events (and of a
    quarter of it, to show the time is proportional to what it folds).
The database named by --url gets a fresh schema per measure; nothing else is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
from chronograph.application import Memory
from chronograph.eventstore import EntityCreated, LmdbLog, ObservationsAdded, StreamWrite
from chronograph.eventstore.copying import copy_log
from chronograph.eventstore.postgres.log import PgLog
from chronograph.projections import verify
from mcp import Client, StdioServerParameters
from report import print_table, write_json
from stdio_transport import linear_stdio_client

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "CHRONOGRAPH_EMBEDDINGS": "off"}


def schema(base: str) -> str:
    return f"{base}?schema=bench_{uuid.uuid4().hex[:10]}"


def appends(make: Any, singles: int, batches: int) -> tuple[float, float]:
    """(single-event appends/s, events/s in batches of 1,000) on the log `make()` opens."""
    with make() as log:
        began = time.perf_counter()
        for i in range(singles):
            log.append([StreamWrite(f"s{i % 50}", [ObservationsAdded(observations=(f"o{i}",))])], actor="bench")
        single = singles / (time.perf_counter() - began)
        began = time.perf_counter()
        for b in range(batches):
            log.append([StreamWrite(f"b{b}-{i}", [EntityCreated(workspace="w", name=f"n{b}-{i}", entity_type="t")])
                        for i in range(1000)], actor="bench")
        batched = batches * 1000 / (time.perf_counter() - began)
    return single, batched


def stdio(store: str, cache: Path | None = None) -> StdioServerParameters:
    extra = ["--cache", str(cache)] if cache else []
    return StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", store, *extra],
                                 env=ENV, cwd=str(ROOT))


async def create_p50(first: StdioServerParameters, second: StdioServerParameters, count: int) -> tuple[float, float]:
    """create_entities p50 (ms) of two servers, their calls alternating so both see the same machine."""
    async with Client(linear_stdio_client(first)) as a, Client(linear_stdio_client(second)) as b:
        samples: tuple[list[float], list[float]] = ([], [])
        for i in range(count):
            for client, out in ((a, samples[0]), (b, samples[1])):
                began = time.perf_counter()
                result = await client.call_tool("create_entities", {"entities": [
                    {"name": f"E{i}", "entityType": "t", "observations": ["x"]}]})
                out.append((time.perf_counter() - began) * 1e3)
                assert not result.is_error, result.content
    return statistics.median(samples[0][20:]), statistics.median(samples[1][20:])


async def many_servers(url: str, root: Path, servers: int, writes: int) -> tuple[int, int, bool]:
    """(writes acknowledged, entities stored, views of a fresh cache == a replay)."""
    acknowledged = 0

    async def server(n: int) -> None:
        nonlocal acknowledged
        async with Client(linear_stdio_client(stdio(url, root / f"cache-{n}"))) as client:
            for i in range(writes):
                result = await client.call_tool("create_entities", {"entities": [
                    {"name": f"S{n}-{i}", "entityType": "t", "observations": []}]})
                if not result.is_error:
                    acknowledged += 1

    Memory(url, cache=root / "first").close()  # the log's tables, once
    async with anyio.create_task_group() as group:
        for n in range(servers):
            group.start_soon(server, n)
    with Memory(url, cache=root / "check") as memory:
        stored = len(memory.read("read_graph", {}).entities)
        whole = verify(memory.views) == []
    return acknowledged, stored, whole


FOLLOWER = """
import sys, time, json
from chronograph.application import Memory
with Memory(sys.argv[1], cache=sys.argv[2]) as memory:
    memory.follow()
    print("ready", flush=True)
    seen, times = 0, {}
    deadline = time.time() + float(sys.argv[3])
    while time.time() < deadline:
        if memory.followed > seen:
            now = time.time()
            for position in range(seen + 1, memory.followed + 1):
                times[position] = now
            seen = memory.followed
        time.sleep(0.0005)
    print(json.dumps(times), flush=True)
"""


def lag(url: str, root: Path, writes: int) -> list[float]:
    """Milliseconds from a write's acknowledgment by one server to another server's views holding it."""
    with Memory(url, cache=root / "writer") as writer:
        follower = subprocess.Popen([sys.executable, "-c", FOLLOWER, url, str(root / "follower"),
                                     str(writes * 0.05 + 15)], stdout=subprocess.PIPE, text=True, env=ENV)
        assert follower.stdout is not None and follower.stdout.readline().strip() == "ready"
        acked: dict[int, float] = {}
        for i in range(writes):
            writer.write("create_entities", {"entities": [{"name": f"L{i}", "entityType": "t", "observations": []}]},
                         actor="bench")
            acked[writer.log.head()] = time.time()
            time.sleep(0.02)
        seen = {int(k): v for k, v in json.loads(follower.stdout.readline()).items()}
        follower.wait(timeout=60)
    return sorted((seen[p] - t) * 1e3 for p, t in acked.items() if p in seen)


def cold_start(url: str, events: int, root: Path) -> tuple[float, int]:
    """(seconds for a server with an empty cache to open a database log of `events` events, its head)."""
    from bench_history import fill

    fill(root / f"source-{events}", events)
    with LmdbLog(root / f"source-{events}") as source, PgLog(url) as target:
        copy_log(source, target)
    began = time.perf_counter()
    with Memory(url, cache=root / f"cold-{events}") as memory:
        seconds = time.perf_counter() - began
        head = memory.log.head()
    return seconds, head


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--cold", type=int, default=1_000_000)
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=Path("bench-postgres.json"))
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-pg-") as base:
        root = Path(base)
        lmdb_single, lmdb_batched = appends(lambda: LmdbLog(root / "lmdb-appends"), 2000, 100)
        pg_single, pg_batched = appends(lambda: PgLog(schema(args.url)), 2000, 100)
        figures["appends_per_s"] = {"lmdb": [round(lmdb_single), round(lmdb_batched)],
                                    "postgresql": [round(pg_single), round(pg_batched)]}
        print(f"appends/s: LMDB {lmdb_single:.0f} single, {lmdb_batched:.0f} batched; PostgreSQL {pg_single:.0f}, "
              f"{pg_batched:.0f}", file=sys.stderr)
        lmdb_p50, pg_p50 = anyio.run(create_p50, stdio(str(root / "stdio-lmdb")),
                                     stdio(schema(args.url), root / "stdio-pg-cache"), 1000)
        figures["create_p50_ms"] = {"lmdb": round(lmdb_p50, 2), "postgresql": round(pg_p50, 2),
                                    "ratio": round(pg_p50 / lmdb_p50, 2)}
        print(f"create p50 over stdio: {figures['create_p50_ms']}", file=sys.stderr)
        acked, stored, whole = anyio.run(many_servers, schema(args.url), root / "many", args.servers, args.writes)
        figures["many_servers"] = {"servers": args.servers, "writes": args.servers * args.writes,
                                   "acknowledged": acked, "stored": stored, "views_equal_replay": whole}
        print(f"many servers: {figures['many_servers']}", file=sys.stderr)
        lags = lag(schema(args.url), root / "lag", 300)
        figures["lag_ms"] = {"p50": round(statistics.median(lags), 1), "p99": round(lags[int(len(lags) * 0.99) - 1], 1),
                             "samples": len(lags)}
        print(f"catch-up lag: {figures['lag_ms']}", file=sys.stderr)
        colds = {}
        for events in (args.cold // 4, args.cold):
            seconds, head = cold_start(schema(args.url), events, root / "cold")
            colds[events] = {"seconds": round(seconds, 1), "events_per_s": round(head / seconds)}
            print(f"cold start at {events:,} events: {colds[events]}", file=sys.stderr)
        figures["cold_start"] = colds
    a = figures["appends_per_s"]
    print_table("PostgreSQL beside LMDB, one run", [
        ("durable single-event appends/s, LMDB / PostgreSQL", f"{a['lmdb'][0]:,} / {a['postgresql'][0]:,}", ""),
        ("events/s appended in batches of 1,000, LMDB / PostgreSQL", f"{a['lmdb'][1]:,} / {a['postgresql'][1]:,}",
         ""),
        ("create_entities p50 over stdio, LMDB / PostgreSQL",
         f"{figures['create_p50_ms']['lmdb']} / {figures['create_p50_ms']['postgresql']} ms "
         f"({figures['create_p50_ms']['ratio']}x)", "<= 2x"),
        (f"{args.servers} servers x {args.writes:,} writes: acknowledged / stored",
         f"{acked:,} / {stored:,}", "0 lost"),
        ("views of a fresh cache equal a replay", str(whole), "True"),
        ("catch-up lag between two servers, p50 / p99",
         f"{figures['lag_ms']['p50']} / {figures['lag_ms']['p99']} ms", "<= 50 / 500 ms"),
        *((f"cold start, empty cache, {events:,} events", f"{c['seconds']} s ({c['events_per_s']:,} events/s)", "")
          for events, c in colds.items()),
    ])
    write_json(args.json, figures)
    return 0 if acked == stored and whole else 1


if __name__ == "__main__":
    raise SystemExit(main())
