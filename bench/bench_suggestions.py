"""How good and how fast `suggest_cleanup` is: precision and recall on a labelled set, time at 10k.

    python bench/bench_suggestions.py [--size 10000] [--runs 5] [--json FILE]

The labelled set (`suggestion_set.py`): real people's names and their variants, hard
negatives (shared surnames and first names, one name for two kinds of thing, names one
word apart), stale facts and repeated observations with their answers. Precision and recall
per kind at several thresholds; then the same set inside a workspace of `--size` entities
(the benchmark workload), the median time of the whole suggestion over `--runs` runs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from chronograph.application import Memory, profile  # noqa: E402
from chronograph.application.core.suggestions import SuggestionsOut, suggest  # noqa: E402
from report import print_table, write_json  # noqa: E402
from suggestion_set import Labelled, labelled_set  # noqa: E402

THRESHOLDS = (0.6, 0.7, 0.8, 0.9)


def fill(memory: Memory, labelled: Labelled, size: int = 0) -> None:
    """Write the labelled entities (and `size` - their number of workload entities first)."""
    tools = {tool.name: tool for tool in profile("chronograph").tools}
    if size > len(labelled.entities):
        from workload import Workload  # noqa: PLC0415

        workload = Workload(seed=3)
        batch = []
        for i in range(size - len(labelled.entities)):
            _, event = workload.entity(i)
            batch.append({"name": event.name, "entityType": event.entity_type,
                          "observations": list(event.observations)})
            if len(batch) == 1000:
                memory.write(tools["create_entities"], {"entities": batch}, actor="bench")
                batch = []
        if batch:
            memory.write(tools["create_entities"], {"entities": batch}, actor="bench")
    entities = [{"name": n, "entityType": t, "observations": o} for n, t, o in labelled.entities]
    for start in range(0, len(entities), 500):
        memory.write(tools["create_entities"], {"entities": entities[start:start + 500]}, actor="bench")


def scores(found: SuggestionsOut, labelled: Labelled) -> dict[str, dict[str, float]]:
    """Precision and recall of each kind of suggestion against the labels."""
    merges = {frozenset(m.entities) for m in found.merges}
    stale = {(s.entity, s.older) for s in found.possibly_stale}
    duplicates = {(d.entity, frozenset(d.observations)) for d in found.duplicate_observations}
    out = {}
    for kind, got, truth in (("merges", merges, labelled.same), ("possiblyStale", stale, labelled.stale),
                             ("duplicateObservations", duplicates, labelled.duplicate)):
        hits = len(got & truth)
        out[kind] = {"suggested": len(got), "right": hits, "precision": hits / len(got) if got else 1.0,
                     "recall": hits / len(truth) if truth else 1.0}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=Path("bench_suggestions.json"))
    args = parser.parse_args(argv)
    labelled = labelled_set()
    figures: dict[str, object] = {"labelled": {"entities": len(labelled.entities), "same": len(labelled.same),
                                               "stale": len(labelled.stale), "duplicate": len(labelled.duplicate)}}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        memory = Memory(folder)
        fill(memory, labelled)
        quality = {}
        for threshold in THRESHOLDS:
            with memory.timeline.at("bench") as moment:
                found = suggest(moment.graph, "default", threshold, limit=1000)
            quality[threshold] = scores(found, labelled)
            for kind, figure in quality[threshold].items():
                rows.append((f"threshold {threshold} {kind}",
                             f"P {figure['precision']:.2f} R {figure['recall']:.2f}",
                             f"{figure['right']}/{figure['suggested']} right" +
                             ("; target P >= 0.9" if threshold == 0.8 else "")))
        figures["quality"] = {str(k): v for k, v in quality.items()}
        memory.close()
    with tempfile.TemporaryDirectory() as folder:
        memory = Memory(folder)
        fill(memory, labelled, args.size)
        tools = {tool.name: tool for tool in profile("chronograph").tools}
        head = memory.log.head()
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            memory.read(tools["suggest_cleanup"], {})
            times.append((time.perf_counter() - start) * 1000)
        assert memory.log.head() == head, "suggest_cleanup wrote to the log"
        memory.close()
    figures["at_size"] = {"entities": args.size, "runs_ms": times, "p50_ms": statistics.median(times)}
    rows.append((f"suggest_cleanup at {args.size:,} entities", f"{statistics.median(times):,.0f} ms",
                 "p50; target <= 1,000 ms; log head unchanged"))
    print_table("suggest_cleanup", rows)
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
