"""Run the long reliability harnesses and print one table.

    python bench/reliability_report.py [--kills 100] [--servers 8] [--writes 1000] [--races 50]
                                       [--fuzz 10000] [--json FILE]

1. crash: --kills SIGKILLs of a stdio server under write load (bench/crash_harness.py);
2. concurrency: --servers processes x --writes writes with --races races on shared
   entities (bench/concurrency_harness.py);
3. fuzz: --fuzz hostile tool calls (the slow test in tests/server/test_fuzz.py).
Exit code 0 only if every harness held.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


import concurrency_harness
import crash_harness
from report import print_table, write_json
from chronograph.tools.parsing import Parser

ROOT = Path(__file__).resolve().parent.parent


def fuzz(examples: int) -> dict[str, int]:
    """Run the fuzz test with `examples` calls; return its outcome counts (and failures)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-m", "slow", "-p", "no:cacheprovider",
         "tests/server/test_fuzz.py::test_ten_thousand_hostile_calls_get_clear_errors"],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "CHRONOGRAPH_FUZZ_EXAMPLES": str(examples)},
    )
    found = re.search(r"fuzz outcomes: \{(.*?)\}", done.stdout)
    counts = {k.strip(" '"): int(v) for k, v in (item.split(":") for item in found.group(1).split(","))} \
        if found else {}
    counts["failures"] = 0 if done.returncode == 0 else 1
    if done.returncode != 0:
        print(done.stdout[-3000:], file=sys.stderr)
    return counts


def main(argv: list[str] | None = None) -> int:
    """Run every long harness; print the table; 0 only if all held."""
    parser = Parser(prog="reliability_report", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--races", type=int, default=50)
    parser.add_argument("--fuzz", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", type=Path, default=Path("reliability.json"))
    args = parser.parse_args(argv)

    print(f"crash test: {args.kills} kills ...", file=sys.stderr)
    started = time.monotonic()
    crash = crash_harness.run(argparse.Namespace(kills=args.kills, seed=args.seed, store=None, verbose=False))
    crash_seconds = time.monotonic() - started

    print(f"concurrency: {args.servers} servers x {args.writes} writes ...", file=sys.stderr)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        races = concurrency_harness.run(args.servers, args.writes, args.races, Path(tmp) / "store")
    race_seconds = time.monotonic() - started

    print(f"fuzz: {args.fuzz} calls ...", file=sys.stderr)
    fuzzed = fuzz(args.fuzz)
    cases = sum(v for k, v in fuzzed.items() if k != "failures")

    errors = (crash.lost + crash.partial + crash.mismatches + crash.gaps + crash.duplicates
              + races.lost + (races.races - races.races_with_one_winner) + races.bad_conflicts
              + races.mismatches + fuzzed["failures"])
    rows = [
        ("load held: concurrent writes acknowledged",
         f"{races.acknowledged:,} of {races.writes:,} ({races.acknowledged / race_seconds:,.0f}/s, "
         f"{args.servers} processes)", "all"),
        ("load held: writes acknowledged between kills",
         f"{crash.acknowledged_calls:,} calls, {crash.acknowledged_entities:,} entities", ""),
        ("kills survived (SIGKILL mid-write)", f"{crash.kills}", f">= {args.kills}"),
        ("acknowledged writes lost", f"{crash.lost + races.lost}", "0"),
        ("batches partly visible after a kill", f"{crash.partial}", "0"),
        ("in-flight writes retried by requestId", f"{crash.retries}", ""),
        ("races with exactly one winner", f"{races.races_with_one_winner} of {races.races}", "all"),
        ("losers told the current version", f"{races.conflicts - races.bad_conflicts} of {races.conflicts}", "all"),
        ("views differing from a replay of the log", f"{crash.mismatches + races.mismatches}", "0"),
        ("fuzz cases (hostile tool calls)",
         f"{cases:,} ({fuzzed.get('accepted', 0):,} accepted, {fuzzed.get('invalid', 0):,} invalid, "
         f"{fuzzed.get('refused', 0):,} refused)", f">= {args.fuzz:,}"),
        ("errors (any of the above going wrong)", f"{errors}", "0"),
    ]
    print_table("reliability", rows)
    print(f"\n(crash test {crash_seconds:.0f} s, concurrency {race_seconds:.0f} s)")
    write_json(args.json, {
        "kills": crash.kills, "crash_acknowledged_calls": crash.acknowledged_calls, "lost": crash.lost + races.lost,
        "partial": crash.partial, "retries": crash.retries, "races": races.races,
        "races_with_one_winner": races.races_with_one_winner, "conflicts": races.conflicts,
        "bad_conflicts": races.bad_conflicts, "mismatches": crash.mismatches + races.mismatches,
        "concurrent_writes": races.acknowledged, "fuzz": fuzzed, "errors": errors,
    })
    return 0 if errors == 0 and cases >= args.fuzz else 1


if __name__ == "__main__":
    raise SystemExit(main())
