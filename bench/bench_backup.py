"""Benchmark backup and restore of a big store, as an operator runs them.

    python bench/bench_backup.py [--events 1000000] [--json FILE]

Fills a store with a mixed workload (bench_history's), builds its views, then times
`chronograph backup` (while the store is open for writing in this process, as a server
would hold it), `chronograph restore` (which checks the seal and every event's checksum)
and `replay --verify` on the restored store; medians of --rounds runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_history import fill
from chronograph.application import Memory
from report import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def timed(*command: str) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr}{done.stdout}")
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=Path("bench-backup.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-backup-") as base:
        root = Path(base)
        store = root / "store"
        fill(store, args.events)
        backups, restores, verifies = [], [], []
        with Memory(store, sync=False) as memory:  # builds the views; held open like a server
            size = memory.store_bytes()
            for n in range(args.rounds):
                file = root / f"b{n}.chronograph"
                backups.append(timed(sys.executable, "-m", "chronograph", "backup", "--store", str(store),
                                     "-o", str(file)))
                restores.append(timed(sys.executable, "-m", "chronograph", "restore", str(file), "--store",
                                      str(root / f"r{n}")))
                verifies.append(timed(sys.executable, "tools/replay.py", "--store", str(root / f"r{n}"), "--verify"))
                backup_bytes = file.stat().st_size
                file.unlink()
    figures = {"events": args.events, "store_mib": round(size / 2**20, 1), "backup_mib": round(backup_bytes / 2**20, 1),
               "backup_s": round(statistics.median(backups), 2), "restore_s": round(statistics.median(restores), 2),
               "replay_verify_s": round(statistics.median(verifies), 2)}
    print_table(f"backup and restore, {args.events:,} events", [
        ("store on disk", f"{figures['store_mib']} MiB", ""),
        ("backup file", f"{figures['backup_mib']} MiB", ""),
        ("chronograph backup (median)", f"{figures['backup_s']} s", "<= 10 s"),
        ("chronograph restore, checksums checked (median)", f"{figures['restore_s']} s", ""),
        ("replay --verify of the restored store (median)", f"{figures['replay_verify_s']} s", ""),
    ])
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
