"""Benchmark n2n's project files (issue 29, point 4): n2n_add_entities with no project-file
hooks (as before), with the hooks but no project asking for files (the default n2n
server), and with --project-files (both files rewritten after each write), interleaved in
one run on durable stores.

    python bench/bench_project_files.py [--writes 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from chronograph.application import Memory
from chronograph.application.surfaces.n2n import N2N
from chronograph.application.surfaces.projectfiles import ProjectFiles
from report import print_table, write_json

VARIANTS = {"no hooks (before)": None, "hooks, no project asks": False, "--project-files": True}


def measure(base: Path, writes: int) -> dict[str, list[float]]:
    memories, projects = {}, {}
    for index, (variant, always) in enumerate(VARIANTS.items()):
        memory = Memory(base / f"store{index}")
        if always is not None:
            files = ProjectFiles(always=always)
            files.install(memory)
        project = base / f"project{index}"
        (project / ".mcp").mkdir(parents=True)
        memories[variant], projects[variant] = memory, project
    samples: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    try:
        for n in range(writes):
            for variant, memory in memories.items():
                arguments = {"projectPath": str(projects[variant]), "entities": [
                    {"name": f"Module{n}", "entityType": "MODULE", "observations": [f"Handles part {n}"]}]}
                began = time.perf_counter()
                memory.write(N2N["n2n_add_entities"], arguments, actor="bench")
                samples[variant].append(time.perf_counter() - began)
    finally:
        for memory in memories.values():
            memory.close()
    assert (projects["--project-files"] / ".mcp" / "memory.json").exists()
    assert not (projects["hooks, no project asks"] / ".mcp" / "memory.json").exists()
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--json", type=Path, default=Path("bench-project-files.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-project-files-") as base:
        samples = measure(Path(base), args.writes)
    p50 = {variant: statistics.median(values) * 1e3 for variant, values in samples.items()}
    before = p50["no hooks (before)"]
    rows = [(f"n2n_add_entities p50, {variant}", f"{ms:.2f} ms  {ms / before:.2f}x", "")
            for variant, ms in p50.items()]
    print_table(f"n2n writes: {args.writes} durable rounds, interleaved (the project grows to {args.writes} "
                "entities)", rows)
    write_json(args.json, {"writes": args.writes, "p50_ms": {k: round(v, 3) for k, v in p50.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
