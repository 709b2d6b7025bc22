"""Benchmark the projections: rebuild, time travel, lookups and search, in one run.

    python bench/bench_projections.py [--events 1000000] [--large 500000] [--json FILE]

Measures rebuild throughput into LMDB, the in-memory as-of fold, point lookups by
name, substring search at 50k entities (3 observations each) and at --large entities,
one entity as of a position in a big log, and the whole graph as of its middle.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from chronograph.eventstore import LmdbLog
from chronograph.projections import DictState, Views, entity_as_of, graph_as_of
from report import print_table, write_json
from workload import Workload


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def samples(count: int, work: Callable[[int], object]) -> list[float]:
    """Durations (s) of `count` calls of work(i)."""
    out = []
    for i in range(count):
        started = time.perf_counter()
        work(i)
        out.append(time.perf_counter() - started)
    return out


def fill_mixed(store: LmdbLog, events: int) -> Workload:
    workload = Workload(seed=3)
    batch = []
    for write in workload.mixed(events):
        batch.append(write)
        if len(batch) == 2000:
            store.append(batch, actor="bench")
            batch = []
    if batch:
        store.append(batch, actor="bench")
    return workload


def fill_entities(store: LmdbLog, count: int) -> Workload:
    workload = Workload(seed=5)
    for start in range(0, count, 2000):
        store.append(workload.entity_writes(start, min(2000, count - start)), actor="bench")
    return workload


def fold_rates(store: LmdbLog, events: int, rounds: int) -> list[float]:
    """Events/s of the in-memory fold alone, over events already decoded."""
    decoded = list(store.read_all())
    return [events / timed(lambda: DictState().fold(decoded)) for _ in range(rounds)]


def search_figures(root: Path, count: int, queries: int) -> dict[str, float]:
    with LmdbLog(root / f"search-{count}", map_size=1 << 33, sync=False) as store:
        workload = fill_entities(store, count)
        views = Views(store)
        with views.search.lock, views.snapshot() as snapshot:
            build = timed(lambda: views.search_index(snapshot, "default"))
        rare = [workload.rare_term(i * 1000) for i in range(count // 1000)]

        def search(i: int) -> None:
            with views.search.lock, views.snapshot() as snapshot:
                index = views.search_index(snapshot, "default")
                found = [snapshot.graph.entity_by_stream(s) for s in index.substring(rare[i % len(rare)])]
                assert len(found) == 1

        times = samples(queries, search)

        def lookup(i: int) -> None:
            with views.read() as graph:
                assert graph.entity("default", workload.name((i * 7919) % count)) is not None

        lookups = samples(2000, lookup)
    return {
        "index_build_s": build,
        "search_p50_ms": statistics.median(times) * 1e3,
        "search_p95_ms": sorted(times)[int(len(times) * 0.95)] * 1e3,
        "lookup_p50_us": statistics.median(lookups) * 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the big log")
    parser.add_argument("--large", type=int, default=500_000, help="entities in the large search run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the throughput runs")
    parser.add_argument("--json", type=Path, default=Path("bench-projections.json"))
    parser.add_argument("--dir", type=Path, default=None, help="where to put the stores")
    args = parser.parse_args(argv)

    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        with LmdbLog(root / "big", map_size=1 << 34) as store:
            print(f"writing a {args.events:,}-event log ...", file=sys.stderr)
            workload = fill_mixed(store, args.events)
            views = Views(store)
            rebuilds = [args.events / views.rebuild().seconds for _ in range(args.rounds)]

            folds = fold_rates(store, args.events, args.rounds)
            full = [args.events / timed(lambda: graph_as_of(store, args.events)) for _ in range(args.rounds)]
            position = args.events // 2 + 17  # not on a snapshot
            first = timed(lambda: graph_as_of(store, position, views.snapshots))  # may save a snapshot
            middle = [timed(lambda: graph_as_of(store, position, views.snapshots)) for _ in range(args.rounds)]
            cold = [timed(lambda: graph_as_of(store, position)) for _ in range(args.rounds)]

            def one_entity(i: int) -> None:
                name = workload.entities[(i * 104729) % len(workload.entities)][1]
                with views.read() as graph, store.read() as reader:
                    entity_as_of(reader, graph, "default", name, args.events // 2)

            entity = samples(500, one_entity)
        figures.update(
            rebuild_events_per_s=statistics.median(rebuilds),
            fold_only_events_per_s=statistics.median(folds),
            read_decode_fold_events_per_s=statistics.median(full),
            graph_as_of_middle_first_s=first,
            graph_as_of_middle_s=statistics.median(middle),
            graph_as_of_middle_without_snapshots_s=statistics.median(cold),
            entity_as_of_p50_ms=statistics.median(entity) * 1e3,
        )
        small = search_figures(root, 50_000, 500)
        large = search_figures(root, args.large, 200)

    rows = [
        ("rebuild into LMDB, events/s", f"{figures['rebuild_events_per_s']:,.0f}", ">= 300,000"),
        ("as-of fold in memory (decoded), events/s", f"{figures['fold_only_events_per_s']:,.0f}",
         ">= 1,000,000"),
        ("as-of fold incl. read + decode, events/s", f"{figures['read_decode_fold_events_per_s']:,.0f}", ""),
        ("point lookup by name p50 (50k), us", f"{small['lookup_p50_us']:.1f}", "<= 50"),
        ("substring search p50 at 50k, ms", f"{small['search_p50_ms']:.2f}", "<= 5"),
        (f"substring search p50 at {args.large // 1000}k, ms", f"{large['search_p50_ms']:.2f}", "(growth)"),
        ("search index build at 50k (first query), s", f"{small['index_build_s']:.2f}", ""),
        (f"search index build at {args.large // 1000}k, s", f"{large['index_build_s']:.2f}", ""),
        (f"entity as-of in a {args.events // 1000}k log p50, ms", f"{figures['entity_as_of_p50_ms']:.2f}",
         "<= 5"),
        ("whole graph as-of at the middle, first ask, s", f"{figures['graph_as_of_middle_first_s']:.2f}", "<= 1"),
        ("  asked again, s", f"{figures['graph_as_of_middle_s']:.2f}", "<= 1"),
        ("  the same without snapshots, s", f"{figures['graph_as_of_middle_without_snapshots_s']:.2f}", ""),
    ]
    print_table(f"projections ({args.events:,}-event log; medians)", rows)
    write_json(args.json, {
        **figures,
        "search_50k": small,
        f"search_{args.large}": large,
        "events": args.events,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
