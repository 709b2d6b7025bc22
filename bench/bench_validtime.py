"""Benchmark valid-time reads: what `validAt` costs beside today's reads, and `validAt` with
`asOf` on a big log.

    python bench/bench_validtime.py [--entities 50000] [--events 1000000] [--json FILE]

1. A store of --entities entities (a tenth of them with dated observations and relations),
   read side by side with and without validAt: read_graph and open_nodes, p50 and ratio.
2. A --events log (bench_history's workload): read_graph and one entity (open_nodes) as of
   the middle of the log at a validAt, the first call (folding the past graph) and the
   next (from the kept past graph).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_history import fill
from chronograph.application import Memory
from report import print_table, write_json

VALID_AT = "2020-06-01T00:00:00Z"


def p50(work: Callable[[], Any], count: int) -> float:
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        work()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1e3


def side_by_side(path: Path, entities: int, rounds: int) -> dict[str, float]:
    with Memory(path, sync=False) as memory:
        for start in range(0, entities, 1000):
            memory.write("create_entities", {"entities": [
                {"name": f"e{i}", "entityType": "t", "observations": [f"fact {i}", f"more {i}"]}
                for i in range(start, min(start + 1000, entities))]}, actor="bench")
            dated = [{"entityName": f"e{i}", "contents": [f"was true {i}"], "validFrom": "2019-01-01",
                      "validUntil": "2021-01-01"} for i in range(start, min(start + 1000, entities), 10)]
            memory.write("add_observations", {"observations": dated}, actor="bench")
            memory.write("create_relations", {"relations": [
                {"from": f"e{i}", "to": f"e{i + 1}", "relationType": "next",
                 **({"validFrom": "2019-01-01", "validUntil": "2021-01-01"} if i % 10 == 0 else {})}
                for i in range(start, min(start + 1000, entities) - 1)]}, actor="bench")
        figures: dict[str, float] = {}
        for label, arguments in (("now", {}), ("validAt", {"validAt": VALID_AT})):
            figures[f"read_graph_{label}_ms"] = p50(lambda a=arguments: memory.read("read_graph", a), rounds)
            figures[f"open_nodes_{label}_ms"] = p50(
                lambda a=arguments: memory.read("open_nodes", {"names": ["e500", "e501"], **a}), rounds * 50)
    figures["read_graph_ratio"] = figures["read_graph_validAt_ms"] / figures["read_graph_now_ms"]
    figures["open_nodes_ratio"] = figures["open_nodes_validAt_ms"] / figures["open_nodes_now_ms"]
    return {k: round(v, 3) for k, v in figures.items()}


def big_log(path: Path, events: int) -> dict[str, float]:
    fill(path, events)
    with Memory(path, sync=False) as memory:
        middle = memory.log.head() // 2
        name = memory.read("read_graph", {"asOf": middle, "limit": 1}).entities[0].name
        asked = {"asOf": middle, "validAt": VALID_AT}
        began = time.perf_counter()
        memory.read("read_graph", asked)
        first = time.perf_counter() - began
        entity = p50(lambda: memory.read("open_nodes", {"names": [name], **asked}), 200)
        again = p50(lambda: memory.read("read_graph", asked), 3)
    return {"read_graph_first_s": round(first, 3), "read_graph_kept_s": round(again / 1e3, 3),
            "open_nodes_ms": round(entity, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=50_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", type=Path, default=Path("bench-validtime.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-validtime-") as base:
        near = side_by_side(Path(base) / "graph", args.entities, args.rounds)
        far = big_log(Path(base) / "log", args.events)
    print_table(f"valid time: {args.entities:,} entities side by side; {args.events:,}-event log", [
        ("read_graph p50, now / validAt", f"{near['read_graph_now_ms']:.1f} / {near['read_graph_validAt_ms']:.1f} ms",
         ""),
        ("  ratio", f"{near['read_graph_ratio']:.2f}x", "<= 1.2x"),
        ("open_nodes (2) p50, now / validAt",
         f"{near['open_nodes_now_ms']:.3f} / {near['open_nodes_validAt_ms']:.3f} ms", ""),
        ("  ratio", f"{near['open_nodes_ratio']:.2f}x", "<= 1.2x"),
        ("read_graph asOf middle + validAt, first", f"{far['read_graph_first_s']:.2f} s", "<= 1 s"),
        ("read_graph asOf middle + validAt, past graph kept", f"{far['read_graph_kept_s']:.2f} s", "<= 1 s"),
        ("one entity asOf middle + validAt p50", f"{far['open_nodes_ms']:.3f} ms", "<= 5 ms"),
    ])
    write_json(args.json, {"entities": args.entities, "events": args.events, "side_by_side": near, "big_log": far})
    return 0


if __name__ == "__main__":
    sys.exit(main())
