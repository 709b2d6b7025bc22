"""How fast `chronograph context` answers from a cold process, and what its block costs in tokens.

    python bench/bench_context.py [--size 50000] [--runs 9] [--json FILE]

A store of `--size` entities (the benchmark workload, one project context, a few changes by
another client) is built once; then `chronograph context` is spawned `--runs` times for each
hook event, as Claude Code runs it (the hook's JSON on stdin), and timed from spawn to exit.
The block is counted with a real tokenizer (the bundled model's WordPiece, which splits
more finely than LLM tokenizers do) against the budget. Medians, printed and written as JSON.
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

sys.path.insert(0, str(Path(__file__).parent))

from chronograph.application import Memory  # noqa: E402
from report import print_table, write_json  # noqa: E402
from workload import Workload  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def build(store: Path, size: int) -> None:
    workload = Workload(seed=5)
    with Memory(store, sync=False) as memory:
        for start in range(0, size, 1000):
            batch = []
            for i in range(start, min(size, start + 1000)):
                _, event = workload.entity(i)
                batch.append({"name": event.name, "entityType": event.entity_type,
                              "observations": list(event.observations)})
            memory.write("create_entities", {"entities": batch}, actor="claude-code")
        memory.write("update_context", {"activeTask": "tune the billing retries", "nextSteps": ["add a test"]},
                     actor="claude-code")
        for i in range(0, 50, 5):
            memory.write("add_observations", {"observations": [
                {"entityName": workload.name(i), "contents": [f"checked by alice, round {i}"]}]}, actor="alice")


def spawn(store: Path, hook: dict[str, str], budget: int | None) -> tuple[float, str, str]:
    args = [sys.executable, "-m", "chronograph", "context", "--store", str(store), "--client", "claude-code"]
    if budget:
        args += ["--budget", str(budget)]
    start = time.perf_counter()
    done = subprocess.run(args, input=json.dumps(hook), capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    return (time.perf_counter() - start) * 1000, done.stdout, done.stderr


def tokens(text: str) -> int:
    from chronograph.projections.search.minilm import _tokenizer_path  # noqa: PLC0415
    from tokenizers import Tokenizer  # noqa: PLC0415

    tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--json", type=Path, default=Path("bench_context.json"))
    args = parser.parse_args(argv)
    figures: dict[str, object] = {"size": args.size}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        build(store, args.size)
        name = Workload(seed=5).name(10)
        cases = {
            "SessionStart (budget 1,500)": ({"hook_event_name": "SessionStart", "cwd": folder}, None, 1500),
            "UserPromptSubmit naming an entity": (
                {"hook_event_name": "UserPromptSubmit", "cwd": folder, "prompt": f"What do we know about {name}?"},
                None, 400),
            "UserPromptSubmit naming nothing": (
                {"hook_event_name": "UserPromptSubmit", "cwd": folder, "prompt": "tell me a joke about cats"},
                None, 400),
        }
        spawn(store, cases["SessionStart (budget 1,500)"][0], None)  # the page cache warm, as after any session
        for label, (hook, budget, limit) in cases.items():
            times, out = [], ""
            for _ in range(args.runs):
                took, out, err = spawn(store, hook, budget)
                assert not err, err
                times.append(took)
            counted = tokens(out) if out else 0
            figures[label] = {"runs_ms": times, "p50_ms": statistics.median(times), "tokens": counted,
                              "budget": limit, "bytes": len(out.encode())}
            rows.append((label, f"{statistics.median(times):,.0f} ms", f"p50 (target <= 300 ms); {counted} tokens "
                         f"of {limit} ({len(out.encode()):,} bytes)"))
        python = [0.0] * args.runs
        for index in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            python[index] = (time.perf_counter() - start) * 1000
        figures["python_startup_p50_ms"] = statistics.median(python)
        rows.append(("python -c pass (the floor)", f"{statistics.median(python):,.0f} ms", "p50"))
    print_table(f"chronograph context at {args.size:,} entities, from a cold process", rows)
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
