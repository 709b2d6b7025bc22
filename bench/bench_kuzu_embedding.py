"""Benchmark Kuzu's writes that embed in the call (issue 29, point 2): create_entity and
add_observations with the entity embedded before the answer, next to the same writes left
to the background projector (as before) and to a store without embeddings, interleaved in
one run on durable stores.

    python bench/bench_kuzu_embedding.py [--writes 200] [--json FILE]

Each variant has its own store and its own loaded model; one round writes through every
variant in turn, so the machine's noise falls on all of them alike. The projectors do not
run: in one process they would take the CPU from the other variants' writes. So "before"
leaves out the embedding its projector does later (the same work, off the write path),
and the ratio is what embedding in the call adds to a write's latency.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from chronograph.application import Memory
from chronograph.application.surfaces.kuzu import KUZU
from report import print_table, write_json

VARIANTS = ("embeddings off", "projector only (before)", "embedded in the call (after)")


def open_variants(base: Path) -> dict[str, Memory]:
    memories = {}
    for index, variant in enumerate(VARIANTS):
        memory = Memory(base / str(index), embeddings="off" if index == 0 else "local")
        if memory.semantic is not None:
            if index == 1:
                memory.semantic.embed_now = lambda records: False  # type: ignore[method-assign]
            memory.read("semantic_search", {"query": "warm up"})  # loads the model
        memories[variant] = memory
    return memories


def measure(base: Path, writes: int) -> dict[str, dict[str, list[float]]]:
    memories = open_variants(base)
    samples: dict[str, dict[str, list[float]]] = {v: {"create_entity": [], "add_observations": []} for v in VARIANTS}
    answers: dict[str, set[Any]] = {v: set() for v in VARIANTS}
    try:
        for n in range(writes):
            for variant, memory in memories.items():
                for tool, arguments, field in (
                    ("create_entity", {"database": "memory", "name": f"Person {n}", "entity_type": "person",
                                       "observations": [f"Works on project {n} in Python", "Lives in Lisbon"]},
                     "embedded"),
                    ("add_observations", {"database": "memory", "entity_name": f"Person {n}",
                                          "observations": [f"Completed certification {n}"]}, "reembedded"),
                ):
                    began = time.perf_counter()
                    written = memory.write(KUZU[tool], arguments, actor="bench")
                    samples[variant][tool].append(time.perf_counter() - began)
                    answers[variant].add(written.output.reply[field])  # type: ignore[attr-defined]
    finally:
        for memory in memories.values():
            memory.close()
    expected = {VARIANTS[0]: {False}, VARIANTS[1]: {False}, VARIANTS[2]: {True}}
    assert answers == expected, answers
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--json", type=Path, default=Path("bench-kuzu-embedding.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-kuzu-embedding-") as base:
        samples = measure(Path(base), args.writes)
    p50 = {v: {tool: statistics.median(s) * 1e3 for tool, s in tools.items()} for v, tools in samples.items()}
    before = p50[VARIANTS[1]]
    rows = [(f"{tool} p50, {variant}", f"{ms:.2f} ms  {ms / before[tool]:.2f}x", "")
            for variant, tools in p50.items() for tool, ms in tools.items()]
    print_table(f"Kuzu writes: {args.writes} durable rounds, interleaved (ratios to the projector alone)", rows)
    write_json(args.json, {"writes": args.writes,
                           "p50_ms": {v: {t: round(ms, 3) for t, ms in tools.items()} for v, tools in p50.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
