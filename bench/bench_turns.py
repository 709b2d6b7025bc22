"""What the GIL leaves beside a long read: a thread that sleeps 1 ms in a loop, beside one
that loops a long call on a store, in one process (no HTTP).

    python bench/bench_turns.py --store DIR [--long export|search|read_graph] [--seconds 8]
                                [--baseline PYTHON]

The sleeper's oversleep is how long a short call would wait for the interpreter at one of
its hops. Prints p50 / p99 / max of the wake-ups alone and beside the long call, for this
checkout and (with --baseline, the python of another checkout) the code before, each in a
process of its own on a copy of the store, side by side; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from report import print_table, write_json

LONG = {
    "export": ("export_graph", {"format": "jsonl"}),
    "search": ("search_nodes", {"query": "ka", "limit": 1000}),
    "read_graph": ("read_graph", {"limit": 4000}),
}


def quantile(samples: list[float], q: float) -> float:
    return sorted(samples)[max(0, int(len(samples) * q) - 1)]


def measure(store: Path, long: str, seconds: float) -> dict[str, Any]:
    """In this process: the sleeper alone for 2 s, then beside the long call for `seconds`."""
    sys.setswitchinterval(0.001)  # as a server over HTTP sets it
    from chronograph.application import Memory  # noqa: PLC0415
    from chronograph.projections import paused_gc  # noqa: PLC0415
    from chronograph.server.results import reply  # noqa: PLC0415

    tool, arguments = LONG[long]
    memory = Memory(store)
    stop = threading.Event()
    gaps: list[float] = []
    took: list[float] = []

    def sleeper() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            time.sleep(0.001)
            gaps.append((time.perf_counter() - started) * 1e3)

    def looping() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                with paused_gc():
                    reply(memory.read(tool, arguments), tool=tool, limit=9 << 20)
            except Exception:  # noqa: BLE001 (a refusal for size is a long call too)
                pass
            took.append(time.perf_counter() - started)

    probe = threading.Thread(target=sleeper)
    probe.start()
    time.sleep(2)
    alone = list(gaps)
    gaps.clear()
    worker = threading.Thread(target=looping)
    worker.start()
    time.sleep(seconds)
    stop.set()
    worker.join()
    probe.join()
    memory.close()
    return {"alone_p50_ms": quantile(alone, 0.5), "alone_p99_ms": quantile(alone, 0.99), "alone_max_ms": max(alone),
            "beside_p50_ms": quantile(gaps, 0.5), "beside_p99_ms": quantile(gaps, 0.99), "beside_max_ms": max(gaps),
            "long_calls": len(took), "long_median_s": statistics.median(took) if took else None}


def main(argv: list[str] | None = None) -> int:
    """Measure each checkout in a process of its own; print the table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True, help="a built store (copied for each run)")
    parser.add_argument("--long", choices=sorted(LONG), default="export")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--baseline", metavar="PYTHON", help="the python of another checkout")
    parser.add_argument("--json", type=Path, default=Path("bench-turns.json"))
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        print(json.dumps(measure(args.store, args.long, args.seconds)))
        return 0
    runs = [("this checkout", sys.executable)] + ([("baseline", args.baseline)] if args.baseline else [])
    results: dict[str, Any] = {"long": args.long, "seconds": args.seconds}
    for label, python in runs:
        with tempfile.TemporaryDirectory(prefix="bench-turns-") as base:
            copy = Path(base) / "store"
            shutil.copytree(args.store, copy)
            done = subprocess.run([python, __file__, "--inner", "--store", str(copy), "--long", args.long,
                                   "--seconds", str(args.seconds)], check=True, capture_output=True, text=True)
            results[label] = json.loads(done.stdout.strip().splitlines()[-1])
    rows = []
    for label, _ in runs:
        seen = results[label]
        for phase in ("alone", f"beside {args.long}"):
            key = phase.split()[0]
            rows.append((f"{label}: 1 ms sleeps, {phase}", f"p50 {seen[f'{key}_p50_ms']:.2f} / p99 "
                         f"{seen[f'{key}_p99_ms']:.2f} / max {seen[f'{key}_max_ms']:.1f} ms", ""))
        rows.append((f"{label}: the long call",
                     f"{seen['long_calls']} calls, median {seen['long_median_s'] or 0:.2f} s", ""))
    print_table(f"what the GIL leaves beside a long {args.long} (in process)", rows)
    write_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
