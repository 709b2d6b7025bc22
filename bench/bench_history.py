"""Benchmark history, time travel and audit on a big log, through the tools' own code.

    python bench/bench_history.py [--events 1000000] [--json FILE]

Measures, on one store: read_graph as of the middle of the log, entity history, one
entity as of a past moment (get_entity_history with asOf: its streams only), and an
audit page of 100 events filtered by actor. Then, on a second store, one entity with a
long history (--long VERSIONSxOBSERVATIONS, each version adding that many observations):
the first and the newest page of one version, and a revert to version 1, each with the
peak memory it allocated (tracemalloc).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chronograph.application import Memory
from chronograph.eventstore import LmdbLog
from report import print_table, write_json
from workload import Workload

ACTORS = ["claude-desktop", "cursor", "import", "ci-bot", "rare-actor"]


def fill(path: Path, events: int) -> Workload:
    workload = Workload(seed=3)
    with LmdbLog(path, map_size=1 << 34) as store:
        batch: list[Any] = []
        count = 0
        for write in workload.mixed(events):
            batch.append(write)
            if len(batch) == 1000:
                actor = ACTORS[(count // 1000) % 4] if count % 97_000 else "rare-actor"
                store.append(batch, actor=actor)
                count += len(batch)
                batch = []
        if batch:
            store.append(batch, actor="claude-desktop")
    return workload


def samples(count: int, work: Callable[[int], object]) -> list[float]:
    out = []
    for i in range(count):
        started = time.perf_counter()
        work(i)
        out.append((time.perf_counter() - started) * 1e3)
    return out


def long_history(path: Path, versions: int, observations: int) -> dict[str, float]:
    """Seconds and peak MB of history pages and a revert on an entity with a long history."""
    with Memory(path, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Long", "entityType": "t", "observations": []}]},
                     actor="bench")
        for v in range(versions - 1):
            memory.write("add_observations", {"observations": [
                {"entityName": "Long", "contents": [f"v{v} observation {o} " + "x" * 40 for o in range(observations)]}
            ]}, actor="bench")
        figures: dict[str, float] = {}
        calls: dict[str, Callable[[], object]] = {
            "first": lambda: memory.read("get_entity_history", {"name": "Long", "limit": 1}),
            "newest": lambda: memory.read("get_entity_history", {"name": "Long", "limit": 1, "order": "newest"}),
            "revert": lambda: memory.write("revert_entity", {"name": "Long", "toVersion": 1}, actor="bench"),
        }
        for name, call in calls.items():
            tracemalloc.start()
            started = time.perf_counter()
            call()
            figures[f"{name}_s"] = time.perf_counter() - started
            figures[f"{name}_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=Path("bench-history.json"))
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--long", default="1000x1000", help="VERSIONSxOBSERVATIONS of the long history")
    args = parser.parse_args(argv)
    versions, observations = (int(n) for n in args.long.split("x"))

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "store"
        print(f"writing a {args.events:,}-event log ...", file=sys.stderr)
        workload = fill(path, args.events)
        with Memory(path) as memory:
            middle = args.events // 2 + 17  # not on a round number
            memory.timeline._past.clear()  # noqa: SLF001 (measure folds, not the cache)

            def as_of_graph(i: int) -> None:
                memory.timeline._past.clear()  # noqa: SLF001
                memory.read("read_graph", {"asOf": middle})

            graph = samples(args.rounds, as_of_graph)
            names = [name for _, name in workload.entities]
            history = samples(500, lambda i: memory.read(
                "get_entity_history", {"name": names[(i * 7919) % len(names)]}))
            entity = samples(500, lambda i: memory.read(
                "get_entity_history", {"name": names[(i * 104729) % len(names)], "asOf": middle}))
            audit = samples(200, lambda i: memory.read(
                "get_audit_log", {"actor": ACTORS[i % 4], "limit": 100}))
            rare = samples(20, lambda i: memory.read("get_audit_log", {"actor": "rare-actor", "limit": 100}))
        print(f"writing an entity with {versions:,} versions of {observations:,} observations ...", file=sys.stderr)
        long = long_history(Path(tmp) / "long", versions, observations)

    figures = {
        "graph_as_of_middle_s": statistics.median(graph) / 1e3,
        "entity_history_p50_ms": statistics.median(history),
        "entity_as_of_p50_ms": statistics.median(entity),
        "audit_page_by_actor_p50_ms": statistics.median(audit),
        "audit_page_rare_actor_p50_ms": statistics.median(rare),
        "events": args.events,
        "long_history": {"versions": versions, "observations": observations, **long},
    }
    print_table(f"history and time travel ({args.events:,}-event log; medians)", [
        ("read_graph as of the middle of the log, s", f"{figures['graph_as_of_middle_s']:.2f}", "<= 1"),
        ("get_entity_history p50, ms", f"{figures['entity_history_p50_ms']:.2f}", "<= 5"),
        ("one entity as of the middle p50, ms", f"{figures['entity_as_of_p50_ms']:.2f}", "<= 5"),
        ("audit page of 100 by a common actor p50, ms", f"{figures['audit_page_by_actor_p50_ms']:.2f}", "<= 10"),
        ("audit page of 100 by a rare actor p50, ms", f"{figures['audit_page_rare_actor_p50_ms']:.2f}", ""),
        (f"history page 1 of {versions:,}x{observations:,}, s / peak MB",
         f"{long['first_s']:.3f} / {long['first_peak_mb']:.1f}", ""),
        ("newest version of it, s / peak MB", f"{long['newest_s']:.3f} / {long['newest_peak_mb']:.1f}", ""),
        ("revert it to version 1, s / peak MB", f"{long['revert_s']:.3f} / {long['revert_peak_mb']:.1f}", ""),
    ])
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
