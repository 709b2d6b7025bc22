"""Benchmark forgetting an entity in a big store while another process keeps using it.

    python bench/bench_forget.py [--events 1000000] [--rounds 3] [--json FILE]

Fills a store with bench_history's mixed workload, opens it as a server would (views,
search images, snapshots of the past), starts a second process that reads and writes
every 20 ms (as a server's clients would), then forgets --rounds entities from the start
of the log (the raw scan covers all of it). Reports the median time of a whole forget (the
erasure's transaction and the scrub), how long the other process's writes and reads took
meanwhile, and checks that no file of the store still holds a forgotten name.
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
from pathlib import Path
from typing import Any

from bench_history import fill
from chronograph.application import Memory
from chronograph.eventstore import Scrubbed
from report import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]

NEIGHBOUR = """
import json, os, sys, time
from chronograph.application import Memory
store, out = sys.argv[1], sys.argv[2]
samples = []
with Memory(store) as memory:
    memory.write("create_entities", {"entities": [{"name": "Bench writer", "entityType": "t", "observations": []}]},
                 actor="neighbour")
    print("ready", flush=True)
    i = 0
    while True:
        began = time.time()
        memory.read("open_nodes", {"names": ["Entity 0000500"]})
        samples.append(("read", began, time.time() - began))
        began = time.time()
        memory.write("add_observations", {"observations": [{"entityName": "Bench writer", "contents": [f"n {i}"]}]},
                     actor="neighbour")
        samples.append(("write", began, time.time() - began))
        i += 1
        if os.path.exists(out + ".stop"):
            break
        time.sleep(0.02)
with open(out, "w") as file:
    json.dump(samples, file)
"""


def forget_rounds(rounds: int, memory: Memory, workload: Any, names: list[str], windows: list[tuple[float, float]],
                  totals: list[float], scrubs: list[float], timed: list[float], zeroed: list[str]) -> None:
    """Forget `rounds` entities from the start of the log, timing each."""
    for n in range(rounds):
        name = next(name for _, name in workload.entities[10 * n + 3:]
                    if memory.read("open_nodes", {"names": [name]}).relations)
        names.append(name)
        started = time.time()
        out = memory.write("forget_entity", {"name": name, "reason": "bench"}, actor="bench").output
        windows.append((started, time.time()))
        totals.append(windows[-1][1] - started)
        scrubs.append(timed[-1])
        zeroed.append(out.message)
        print(f"forgot {name!r}: {out.events} events, {out.relations} relations, {totals[-1]:.2f} s "
              f"({out.message})", file=sys.stderr)
        time.sleep(2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=Path("bench-forget.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-forget-") as base:
        root = Path(base)
        store = root / "store"
        began = time.perf_counter()
        workload = fill(store, args.events)
        print(f"filled {args.events:,} events in {time.perf_counter() - began:.0f} s", file=sys.stderr)
        totals, scrubs, windows, zeroed = [], [], [], []
        with Memory(store) as memory:
            memory.prepare_search()
            memory.read("read_graph", {"asOf": memory.log.head() // 2, "limit": 1})  # snapshots of the past
            size = memory.store_bytes()
            samples_file = root / "samples.json"
            neighbour = subprocess.Popen(
                [sys.executable, "-c", NEIGHBOUR, str(store), str(samples_file)], stdout=subprocess.PIPE, text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert neighbour.stdout is not None and neighbour.stdout.readline().strip() == "ready"
            time.sleep(2)  # the neighbour's pace before any forget
            scrub = memory.log.scrub
            timed: list[float] = []

            def timed_scrub(*a: Any, **k: Any) -> Scrubbed:
                started = time.perf_counter()
                done = scrub(*a, **k)
                timed.append(time.perf_counter() - started)
                return done

            memory.log.scrub = timed_scrub  # type: ignore[method-assign]
            names: list[str] = []
            try:
                forget_rounds(args.rounds, memory, workload, names, windows, totals, scrubs, timed, zeroed)
            finally:  # the neighbour stops, whatever happened here
                (Path(str(samples_file) + ".stop")).write_text("stop")
                neighbour.wait(timeout=120)
        samples = json.loads(samples_file.read_text())
        data = (store / "data.mdb").read_bytes()
        residue = [name for name in names if name.encode() in data]

    def during(kind: str) -> list[float]:
        return [d * 1e3 for k, t, d in samples if k == kind and any(a - d <= t <= b for a, b in windows)]

    def before(kind: str) -> list[float]:
        return [d * 1e3 for k, t, d in samples if k == kind and t < windows[0][0]]

    figures = {
        "events": args.events, "store_mib": round(size / 2**20, 1),
        "forget_s_median": round(statistics.median(totals), 2),
        "scrub_s_median": round(statistics.median(scrubs), 2),
        "erase_txn_s_median": round(statistics.median(t - s for t, s in zip(totals, scrubs, strict=True)), 2),
        "neighbour_write_ms_p50_before": round(statistics.median(before("write")), 2),
        "neighbour_write_ms_max_during": round(max(during("write"), default=0.0), 1),
        "neighbour_read_ms_p50_before": round(statistics.median(before("read")), 3),
        "neighbour_read_ms_p50_during": round(statistics.median(during("read") or [0.0]), 3),
        "neighbour_read_ms_max_during": round(max(during("read"), default=0.0), 1),
        "names_left_in_the_file": residue,
        "messages": zeroed,
    }
    print_table(f"Forgetting one entity in a {args.events:,}-event store ({figures['store_mib']} MiB), "
                f"medians of {args.rounds}", [
        ("forget, whole (erase + scrub)", f"{figures['forget_s_median']} s", "<= 5 s"),
        ("  the erasure's transaction", f"{figures['erase_txn_s_median']} s", ""),
        ("  the scrub", f"{figures['scrub_s_median']} s", ""),
        ("neighbour's write p50 before", f"{figures['neighbour_write_ms_p50_before']} ms", ""),
        ("neighbour's longest write during", f"{figures['neighbour_write_ms_max_during']} ms", "(writes wait)"),
        ("neighbour's read p50 before / during", f"{figures['neighbour_read_ms_p50_before']} / "
                                                 f"{figures['neighbour_read_ms_p50_during']} ms", "(reads go on)"),
        ("forgotten names left in the file", str(len(residue)), "0"),
    ])
    write_json(args.json, figures)
    return 0 if not residue else 1


if __name__ == "__main__":
    raise SystemExit(main())
