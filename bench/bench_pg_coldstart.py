"""A PostgreSQL cache's cold start, split into reading the log and folding it; before and after.

    flock /work/scratch/heavy.lock python bench/bench_pg_coldstart.py \
        --baseline /work/before/.venv/bin/python [--events 1000000] [--repeats 2]

One log of --events events (bench_history's mixed workload) is copied into a fresh schema
once. Then, for each code (this checkout, and the baseline checkout's Python if given),
taking turns for --repeats rounds:
  * scan: the log read whole as a rebuild reads it (batches of 4,096, checksums checked,
    envelopes decoded), nothing folded: what reading costs alone;
  * cold start: a server's `Memory` opened on the database with an empty cache (it builds
    its views from the whole log), with the time the fold spent waiting for the reader's
    next batch counted apart: reading that the fold did not hide.
Every cold start above runs with no seed in the log. Then, for this checkout only (a baseline
before seeds has none to keep or start from):
  * keep: a server whose cache is current keeps a seed of its views (`keep_seed_now`), the
    time it takes (spent by a server in the background, once per 100,000 events);
  * seeded cold start: a server's `Memory` opened with an empty cache on the log holding
    that seed (it loads the seed and folds what came after it: here nothing).
Medians are printed and written to JSON.
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
import uuid
from pathlib import Path
from typing import Any

from report import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "CHRONOGRAPH_EMBEDDINGS": "off"}

MEASURE = """
import json, sys, time
from chronograph.eventstore.postgres import reader
from chronograph.eventstore.postgres.log import PgLog
from chronograph.application import Memory
url, cache, mode = sys.argv[1], sys.argv[2], sys.argv[3]
waited, events = [0.0], [0]
batches = reader.PgReader.batches

def timed(self, *args, **kwargs):
    scan = batches(self, *args, **kwargs)
    while True:
        began = time.perf_counter()
        batch = next(scan, None)
        waited[0] += time.perf_counter() - began
        if batch is None:
            return
        events[0] += len(batch)
        yield batch

reader.PgReader.batches = timed
began = time.perf_counter()
if mode == "scan":
    with PgLog(url) as log, log.read() as snapshot:
        for _ in snapshot.batches(1, snapshot.head(), batch_size=4096, slim=True):
            pass
elif mode == "keep":
    with Memory(url, cache=cache) as memory:
        began = time.perf_counter()
        assert memory.keep_seed_now(spacing=0), "no seed kept"
else:
    with Memory(url, cache=cache) as memory:
        pass
print(json.dumps({"seconds": time.perf_counter() - began, "reading": waited[0], "events": events[0]}))
"""


def build(url: str, events: int, root: Path) -> None:
    """A log of `events` events at `url` (made in LMDB, copied over)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_history import fill
    from chronograph.eventstore import LmdbLog
    from chronograph.eventstore.copying import copy_log
    from chronograph.eventstore.postgres.log import PgLog

    fill(root / "source", events)
    with LmdbLog(root / "source") as source, PgLog(url) as target:
        copy_log(source, target)
    shutil.rmtree(root / "source")


def drop_seeds(url: str) -> None:
    """No seed in the log: a cold start folds it whole."""
    import psycopg

    base, schema = url.split("?schema=")
    with psycopg.connect(base, autocommit=True) as connection:
        if connection.execute("SELECT to_regclass(%s)", (f"{schema}.seeds",)).fetchone()[0]:
            connection.execute(f'DELETE FROM "{schema}".seeds')


def measure(python: str, url: str, mode: str, root: Path, cache: Path | None = None) -> dict[str, float]:
    if mode == "cold":
        drop_seeds(url)
    kept = cache is not None  # the caller's, for a later measure: left in place
    cache = cache or Path(tempfile.mkdtemp(prefix="cache-", dir=root))
    out = subprocess.run([*python.split(), "-c", MEASURE, url, str(cache), mode], check=True, env=ENV,
                         capture_output=True, text=True, cwd=root).stdout
    if not kept:
        shutil.rmtree(cache, ignore_errors=True)
    return json.loads(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--baseline", help="the Python of a baseline checkout, e.g. /work/before/.venv/bin/python")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, default=Path("bench-pg-coldstart.json"))
    args = parser.parse_args(argv)
    codes = {"after": sys.executable, **({"before": args.baseline} if args.baseline else {})}
    schema = f"bench_cold_{uuid.uuid4().hex[:8]}"
    url = f"{args.url}?schema={schema}"
    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-pg-cold-") as base:
        root = Path(base)
        build(url, args.events, root)
        try:
            for repeat in range(args.repeats):
                for code, python in (codes.items() if repeat % 2 == 0 else reversed(codes.items())):
                    for mode in ("scan", "cold"):
                        figure = measure(python, url, mode, root)
                        samples.setdefault((code, mode), []).append(figure)
                        print(f"round {repeat + 1}: {code} {mode}: {figure}", file=sys.stderr, flush=True)
            warm = Path(tempfile.mkdtemp(prefix="cache-", dir=root))
            measure(sys.executable, url, "cold", root, warm)  # a cache built once, kept
            kept = measure(sys.executable, url, "keep", root, warm)
            shutil.rmtree(warm, ignore_errors=True)
            print(f"after keep: {kept}", file=sys.stderr, flush=True)
            seeded = [measure(sys.executable, url, "seeded", root) for _ in range(args.repeats)]
            print(f"after seeded: {seeded}", file=sys.stderr, flush=True)
        finally:
            import psycopg

            with psycopg.connect(args.url, autocommit=True) as connection:
                connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    figures: dict[str, Any] = {"events": args.events, "repeats": args.repeats}
    rows = []
    for code in codes:
        scan = statistics.median(s["seconds"] for s in samples[(code, "scan")])
        cold = statistics.median(s["seconds"] for s in samples[(code, "cold")])
        waited = statistics.median(s["reading"] for s in samples[(code, "cold")])
        figures[code] = {"scan_s": round(scan, 2), "cold_start_s": round(cold, 2),
                         "cold_start_waiting_for_reads_s": round(waited, 2),
                         "cold_start_other_s": round(cold - waited, 2),
                         "scan_events_per_s": round(args.events / scan)}
        rows += [
            (f"{code}: reading the log alone (scan)", f"{scan:.2f} s ({args.events / scan:,.0f} events/s)", ""),
            (f"{code}: cold start, empty cache", f"{cold:.2f} s", "<= 10 s at 1M"),
            (f"{code}:   of it, waiting for the log's reads", f"{waited:.2f} s", ""),
            (f"{code}:   of it, folding and writing the views", f"{cold - waited:.2f} s", ""),
        ]
    keep_s = kept["seconds"]
    seeded_s = statistics.median(s["seconds"] for s in seeded)
    figures["after"].update(keep_seed_s=round(keep_s, 2), seeded_cold_start_s=round(seeded_s, 2))
    rows += [("after: keeping a seed (a server, in the background)", f"{keep_s:.2f} s", ""),
             ("after: cold start, empty cache, from the seed", f"{seeded_s:.2f} s", "<= 10 s at 1M"),
             ("after: cold start from the seed / folding the log",
              f"{seeded_s / figures['after']['cold_start_s']:.2f}x", "")]
    if "before" in codes:
        rows.append(("scan, before / after", f"{figures['before']['scan_s'] / figures['after']['scan_s']:.2f}x", ""))
        rows.append(("cold start, before / after",
                     f"{figures['before']['cold_start_s'] / figures['after']['cold_start_s']:.2f}x", ""))
    print_table(f"PostgreSQL cache cold start at {args.events:,} events, medians of {args.repeats}", rows)
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
