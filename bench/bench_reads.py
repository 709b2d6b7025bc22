"""Read-path latency inside the process (and a write, and opening): this checkout against a baseline.

    python bench/bench_reads.py [--entities 10000] [--rounds 7] [--samples 300]
                                [--baseline /old/checkout/.venv/bin/python] [--json FILE]

Fills a store (entities with 3 observations, about 2 relations each) with each
checkout's own code, then measures, in rounds that alternate between the two so that
the load of a shared machine falls on both alike, the p50 of: open 2 nodes, search a
rare term, a summary page of 100, a read_graph page of 1,000 entities, and creating one
entity (durable), with no MCP around the calls; and the time to open the store. Prints
the median over rounds of each side's figures and their ratio. Without --baseline, only
this checkout is measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import print_table, write_json

HERE = Path(__file__).resolve()
MEASURES = ("open 2 nodes", "search rare term", "summary page of 100", "read_graph page of 1,000",
            "create 1 entity (durable)", "open the store")


def fill(store: Path, entities: int) -> None:
    """The store the rounds read: `entities` entities, 3 observations and ~2 relations each."""
    from chronograph.application import Memory

    with Memory(store, sync=False) as memory:
        for start in range(0, entities, 1000):
            memory.write("create_entities", {"entities": [
                {"name": f"entity {i}", "entityType": f"type {i % 7}",
                 "observations": [f"note {i} about word{i % 97}", f"rare{i}", "a longer observation " * 4]}
                for i in range(start, min(start + 1000, entities))]}, actor="bench")
        for start in range(0, entities, 1000):
            for kind, step in (("knows", 7), ("uses", 13)):
                memory.write("create_relations", {"relations": [
                    {"from": f"entity {i}", "to": f"entity {(i * step + 1) % entities}", "relationType": kind}
                    for i in range(start, min(start + 1000, entities))]}, actor="bench")


def measure(store: Path, entities: int, samples: int) -> dict[str, float]:
    """p50 ms of each measure, on the store (opened once, warmed by one call of each)."""
    from chronograph.application import Memory

    started = time.perf_counter()
    with Memory(store) as memory:
        opened = (time.perf_counter() - started) * 1e3
        calls = {
            "open 2 nodes": lambda i: memory.read("open_nodes", {
                "names": [f"entity {(i * 31) % entities}", f"entity {(i * 37 + 1) % entities}"]}),
            "search rare term": lambda i: memory.read("search_nodes", {"query": f"rare{(i * 17) % entities}"}),
            "summary page of 100": lambda i: memory.read("get_graph_summary", {"limit": 100, "offset": i % 50}),
            "read_graph page of 1,000": lambda i: memory.read("read_graph", {"limit": 1000, "offset": 0}),
            "create 1 entity (durable)": lambda i: memory.write("create_entities", {"entities": [
                {"name": f"new {time.time_ns()}", "entityType": "new", "observations": ["o"]}]}, actor="bench"),
        }
        figures = {"open the store": opened}
        for name, call in calls.items():
            call(0)
            times = []
            for i in range(samples if "1,000" not in name and "create" not in name else max(10, samples // 10)):
                started = time.perf_counter()
                call(i)
                times.append((time.perf_counter() - started) * 1e3)
            figures[name] = statistics.median(times)
    return figures


def worker(python: str, store: Path, entities: int, samples: int, *, fill_only: bool = False) -> dict[str, float]:
    """Run this script's worker with `python` (a checkout's interpreter) and return what it printed."""
    argv = [python, str(HERE), "--worker", str(store), "--entities", str(entities), "--samples", str(samples)]
    done = subprocess.run([*argv, *(["--fill"] if fill_only else [])], capture_output=True, text=True, check=True,
                          cwd=HERE.parent)
    return json.loads(done.stdout) if not fill_only else {}


def main(argv: list[str] | None = None) -> int:
    """Run the rounds; print the table; 0."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--baseline", metavar="PYTHON", help="the interpreter of the checkout to compare with")
    parser.add_argument("--json", type=Path, default=Path("bench-reads.json"))
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--fill", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        if args.fill:
            fill(args.worker, args.entities)
        else:
            print(json.dumps(measure(args.worker, args.entities, args.samples)))
        return 0
    sides = {"this checkout": sys.executable, **({"baseline": args.baseline} if args.baseline else {})}
    with tempfile.TemporaryDirectory(prefix="bench-reads-") as base:
        stores = {side: Path(base) / f"store-{i}" for i, side in enumerate(sides)}
        for side, python in sides.items():
            print(f"filling {args.entities:,} entities ({side}) ...", file=sys.stderr)
            worker(python, stores[side], args.entities, args.samples, fill_only=True)
        rounds: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        for number in range(args.rounds):
            print(f"round {number + 1} of {args.rounds} ...", file=sys.stderr)
            order = list(sides) if number % 2 == 0 else list(reversed(sides))
            for side in order:
                rounds[side].append(worker(sides[side], stores[side], args.entities, args.samples))
    medians = {side: {m: statistics.median(r[m] for r in found) for m in MEASURES} for side, found in rounds.items()}
    rows = []
    for name in MEASURES:
        ours = medians["this checkout"][name]
        if "baseline" in medians:
            before = medians["baseline"][name]
            rows.append((name + ("" if name == "open the store" else ", p50"), f"{ours:,.3f} ms",
                         f"baseline {before:,.3f} ms (ratio {ours / before:.2f})"))
        else:
            rows.append((name + ("" if name == "open the store" else ", p50"), f"{ours:,.3f} ms", ""))
    print_table(f"calls inside the process at {args.entities:,} entities (median of {args.rounds} rounds)", rows)
    write_json(args.json, {"entities": args.entities, "rounds": rounds, "medians": medians})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
