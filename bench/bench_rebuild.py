"""Rebuild throughput and memory on a big log, side by side with another implementation.

    python bench/bench_rebuild.py [--events 1000000 | --graph ENTITIES] [--baseline CMD] [--rounds 2]

Writes a log of `--events` events of the benchmarks' realistic mix (creates, observations,
relations, updates, deletes), or with `--graph`, imports the benchmarks' graph of that many
entities (3 observations and 2 relations each, the official server's JSONL), copies it for
each implementation, and runs `replay --rebuild` (embeddings off) `--rounds` times in
processes of their own, the sides alternating (the first open of a copy builds its views too,
unreported). Prints the views' events per second as each rebuild reports it, the wall time
with the word index, peak RSS and the file's size.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_projections import fill_mixed
from bench_store_size import parts, run, write_graph
from chronograph.eventstore import LmdbLog
from formats import shared
from report import write_json


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--graph", type=int, default=None, metavar="ENTITIES",
                        help="import the benchmarks' graph of this many entities instead of a mixed log")
    parser.add_argument("--baseline", default=None, help='e.g. "/work/before/.venv/bin/python -m chronograph"')
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=Path("bench-rebuild.json"))
    args = parser.parse_args(argv)
    sides = [("ours", [sys.executable, "-m", "chronograph"])]
    if args.baseline:
        sides.append(("baseline", shlex.split(args.baseline)))
    env = {**os.environ, "CHRONOGRAPH_EMBEDDINGS": "off"}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        source = Path(tmp) / "log"
        if args.baseline:  # one log for both: in a format the code before format 3 opens too
            shared(source, map_size=1 << 34, sync=False)
        if args.graph:
            graph = Path(tmp) / "graph.jsonl"
            write_graph(graph, args.graph)
            print(f"importing a graph of {args.graph:,} entities ...", file=sys.stderr)
            run([sys.executable, "-m", "chronograph", "import", "--store", str(source), str(graph)], env)
            graph.unlink()
        else:
            print(f"writing a {args.events:,}-event log ...", file=sys.stderr)
            with LmdbLog(source, map_size=1 << 34, sync=False) as store:
                fill_mixed(store, args.events)
        stores = {name: Path(tmp) / name for name, _ in sides}
        for store in stores.values():
            shutil.copytree(source, store)
        shutil.rmtree(source)
        results: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in sides}
        for _ in range(args.rounds):
            for name, cli in sides:  # alternating, so both meet the machine's moods alike
                store = stores[name]
                print(f"  {name}: rebuilding ...", file=sys.stderr)
                wall, rss, text = run([*cli, "replay", "--rebuild", "--store", str(store)], env)
                found = re.search(r"([\d,]+) events, [\d,]+ keys\s+in ([\d.]+) s", text)
                events, seconds = (int(found[1].replace(",", "")), float(found[2])) if found else (0, 0.0)
                timing = re.search(r"^seconds: (.*)$", text, re.MULTILINE)
                results[name].append({"wall_s": wall, "rss": rss, "events": events, "views_s": seconds,
                                      "phases": timing[1] if timing else "", "file": parts(store)["file"]})
    what = f"the benchmarks' graph of {args.graph:,} entities" if args.graph else f"a {args.events:,}-event mixed log"
    print(f"\nrebuild of {what} (embeddings off), per round")
    print("side      round  views ev/s  views s  wall s  peak RSS MB  file MB  phases (s)")
    for name, rounds in results.items():
        for i, r in enumerate(rounds):
            rate = r["events"] / r["views_s"] if r["views_s"] else 0
            print(f"{name:9} {i + 1:5}  {rate:10,.0f}  {r['views_s']:7.2f}  {r['wall_s']:6.1f}"
                  f"  {r['rss'] / 2**20:11,.0f}  {r['file'] / 2**20:7,.0f}  {r['phases']}")
    if len(results) == 2:
        ours, base = (statistics.median(r["views_s"] for r in results[k]) for k in ("ours", "baseline"))
        print(f"\nviews rebuild, median: ours {ours:.2f} s, baseline {base:.2f} s: {base / ours:.2f}x faster")
    write_json(args.json, {"events": args.events, "graph": args.graph, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
