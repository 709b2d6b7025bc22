"""Writes/s as servers are added, on one PostgreSQL database and on one LMDB store, before and after.

    flock /work/scratch/heavy.lock python bench/bench_pg_servers.py \
        --baseline /work/before/.venv/bin/python [--servers 1,2,4,8] [--seconds 5] [--repeats 3]

For each number of servers K, each backend and each code (this checkout, and the baseline
checkout's Python if given), K processes open the store as `chronograph serve` does (a
database store gets a local cache and a follower that folds the other servers' writes) and
call `create_entities` (one entity, one observation) as fast as they can for --seconds,
all starting together. Every (K, backend) runs the codes one after the other, so they
share the machine's weather; the figures are medians over --repeats such rounds.

Printed and written to JSON: writes/s all together, the ratio to one server of the same
code and backend, and the per-call p50 and p99 under each K. The tool-call transport (MCP
over stdio) is left out: it costs the same per call whatever the store, and a driver
process of its own would compete for the same two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from report import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "CHRONOGRAPH_EMBEDDINGS": "off"}

SERVER = """
import json, sys, time
from chronograph.application import Memory
store, cache, name = sys.argv[1], sys.argv[2], sys.argv[3]
with Memory(store, **({"cache": cache} if cache != "-" else {})) as memory:
    memory.follow()  # as a server does: other servers' writes reach the views between its own
    memory.write("create_entities", {"entities": [{"name": name, "entityType": "t", "observations": []}]}, actor=name)
    print("ready", flush=True)
    start, seconds = map(float, sys.stdin.readline().split())  # every server open and warm: go together
    while time.time() < start:
        time.sleep(0.0005)
    latencies, end = [], start + seconds
    while time.time() < end:
        began = time.perf_counter()
        memory.write("create_entities", {"entities": [{"name": f"{name}-{len(latencies)}", "entityType": "t",
                                                       "observations": ["x"]}]}, actor=name)
        latencies.append(time.perf_counter() - began)
print(json.dumps(latencies))
"""

CREATE = """
import sys
from chronograph.application import Memory
Memory(sys.argv[1], **({"cache": sys.argv[2]} if sys.argv[2] != "-" else {})).close()
"""


def run(python: str, backend: str, servers: int, seconds: float, url: str, root: Path) -> dict[str, float]:
    """One round: `servers` processes of `python` writing to a fresh store of `backend`."""
    folder = Path(tempfile.mkdtemp(prefix=f"{backend}-{servers}-", dir=root))
    store = f"{url}?schema=bench_{uuid.uuid4().hex[:10]}" if backend == "postgresql" else str(folder / "store")
    cache = (lambda k: str(folder / f"cache-{k}")) if backend == "postgresql" else (lambda k: "-")
    command = python.split()
    subprocess.run([*command, "-c", CREATE, store, cache(0)], check=True, env=ENV, cwd=folder)
    processes = [subprocess.Popen([*command, "-c", SERVER, store, cache(k), f"s{k}"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=ENV, cwd=folder) for k in range(servers)]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    start = time.time() + 0.2
    for process in processes:  # every server told before any is waited for: they write at the same time
        assert process.stdin is not None
        process.stdin.write(f"{start} {seconds}\n")
        process.stdin.flush()
    each = [json.loads(p.communicate(timeout=seconds + 120)[0]) for p in processes]
    if any(p.returncode for p in processes):
        raise SystemExit(f"a server of {python} on {backend} failed")
    if not all(each):
        raise SystemExit(f"a server of {python} on {backend} wrote nothing in {seconds} s: they did not run together")
    latencies = sorted(x for one in each for x in one)
    shutil.rmtree(folder, ignore_errors=True)
    if backend == "postgresql":
        drop(url, store.rsplit("=", 1)[1])
    return {"writes_per_s": len(latencies) / seconds, "p50_ms": statistics.median(latencies) * 1e3,
            "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3}


def drop(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--baseline", help="the Python of a baseline checkout, e.g. /work/before/.venv/bin/python")
    parser.add_argument("--servers", default="1,2,4,8")
    parser.add_argument("--backends", default="postgresql,lmdb")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=Path("bench-pg-servers.json"))
    args = parser.parse_args(argv)
    codes = {"after": sys.executable, **({"before": args.baseline} if args.baseline else {})}
    counts = [int(k) for k in args.servers.split(",")]
    backends = args.backends.split(",")
    samples: dict[tuple[str, str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-pg-servers-") as base:
        for repeat in range(args.repeats):
            for servers in counts:
                for backend in backends:
                    for code, python in (codes.items() if repeat % 2 == 0 else reversed(codes.items())):
                        figure = run(python, backend, servers, args.seconds, args.url, Path(base))
                        samples.setdefault((code, backend, servers), []).append(figure)
                        print(f"round {repeat + 1}: {code} {backend} x{servers}: {figure['writes_per_s']:.0f} "
                              f"writes/s, p50 {figure['p50_ms']:.2f} ms", file=sys.stderr, flush=True)
    figures: dict[str, Any] = {"seconds": args.seconds, "repeats": args.repeats, "results": []}
    rows = []
    for backend in backends:
        for code in codes:
            one = statistics.median(s["writes_per_s"] for s in samples[(code, backend, counts[0])])
            for servers in counts:
                runs = samples[(code, backend, servers)]
                rate = statistics.median(s["writes_per_s"] for s in runs)
                p50 = statistics.median(s["p50_ms"] for s in runs)
                p99 = statistics.median(s["p99_ms"] for s in runs)
                figures["results"].append({"backend": backend, "code": code, "servers": servers,
                                           "writes_per_s": round(rate), "ratio_to_one": round(rate / one, 2),
                                           "p50_ms": round(p50, 2), "p99_ms": round(p99, 2),
                                           "runs": [round(s["writes_per_s"]) for s in runs]})
                rows.append((f"{backend} {code}, {servers} server{'s' if servers > 1 else ''}",
                             f"{rate:,.0f}/s ({rate / one:.2f}x), p50 {p50:.2f} ms, p99 {p99:.1f} ms",
                             ">= 2x at 4" if backend == "postgresql" and servers == 4 else ""))
    print_table(f"create_entities, K servers on one store, medians of {args.repeats}", rows)
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
