"""Benchmark `chronograph import` of an official memory file, before and after, side by side.

    python bench/bench_import.py --sizes 100000 300000 [--baseline "/work/before/.venv/bin/python -m chronograph"]

Writes the official server's JSONL of a graph of the benchmarks' shape (each entity three
observations, two relations per entity, relations after the entities as the official server
writes them, so most point forward), then runs `chronograph import` on it in a process of its
own for each command given: wall time, events per second (three events per entity: the
creation and two relations), CPU seconds (user + sys: steadier than wall time on a shared
machine), peak RSS of the import process, the store's bytes, as a whole
and per named database (bytes per entity), against the file's size, and the CPU a full scan
of the log costs each version (batches of 1,024, as the folds read it: the read cost of the
log's codec), and a cold process's first search after the import (which loads the search image
the import kept: its time and that process's peak RSS).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lmdb
from report import print_table, write_json
from workload import TYPES, vocabulary

ROOT = Path(__file__).resolve().parents[1]
AFTER = f"{sys.executable} -m chronograph"
KINDS = ["knows", "uses", "owns", "depends_on"]


def write_graph(path: Path, entities: int, seed: int = 1) -> int:
    """The official JSONL of `entities` entities and twice as many relations; its size in bytes."""
    rng = random.Random(seed)
    words = vocabulary(5000)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    with path.open("w", encoding="utf-8") as out:
        for i in range(entities):
            texts = [" ".join(rng.choices(words, weights, k=rng.randint(4, 8))) for _ in range(3)]
            out.write(json.dumps({"type": "entity", "name": f"Entity {i:07d}", "entityType": rng.choice(TYPES),
                                  "observations": texts}, separators=(",", ":")) + "\n")
        for i in range(entities):
            for _ in range(2):
                j = rng.randrange(entities - 1)
                j += j >= i
                out.write(json.dumps({"type": "relation", "from": f"Entity {i:07d}", "to": f"Entity {j:07d}",
                                      "relationType": rng.choice(KINDS)}, separators=(",", ":")) + "\n")
    return path.stat().st_size


def parts(store: Path) -> dict[str, int]:
    """Bytes of each named database of the store's environment (pages in use), and the file's."""
    env = lmdb.open(str(store), readonly=True, lock=False, max_dbs=64, subdir=True)
    try:
        out: dict[str, int] = {}
        with env.begin() as txn:
            names = [bytes(key) for key, _ in txn.cursor()]
        for name in names:
            try:
                db = env.open_db(name, create=False)
            except lmdb.Error:
                continue
            with env.begin() as txn:
                stat = txn.stat(db)
            out[name.decode(errors="replace")] = (stat["branch_pages"] + stat["leaf_pages"]
                                                  + stat["overflow_pages"]) * stat["psize"]
        info = env.info()
        out["(file)"] = (store / "data.mdb").stat().st_size
        out["(pages used)"] = (info["last_pgno"] + 1) * env.stat()["psize"]
    finally:
        env.close()
    return out


SCAN = """
import sys, time
from chronograph.eventstore import LmdbLog
with LmdbLog(sys.argv[1], readonly=True, create=False) as log, log.read() as reader:
    began, count = time.process_time(), 0
    for batch in reader.batches(1, None, 1024, slim=True):
        count += len(batch)
    print(count, time.process_time() - began)
"""


def scan(command: str, store: Path) -> float:
    """CPU microseconds an event to read the whole log back as the folds do, by that version."""
    python = shlex.split(command)[0]
    done = subprocess.run([python, "-c", SCAN, str(store)], capture_output=True, text=True, check=True, cwd="/")
    count, seconds = done.stdout.split()
    return float(seconds) / int(count) * 1e6


FIRST = """
import resource, sys, time
began = time.perf_counter()
from chronograph.application import Memory
with Memory(sys.argv[1]) as memory:
    opened = time.perf_counter()
    answer = memory.read("search_nodes", {"query": sys.argv[2]})
    done = time.perf_counter()
print(opened - began, done - opened, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def first_search(command: str, store: Path, query: str = "0000042") -> dict[str, float]:
    """A cold process's first search after the import (it loads the image the import kept):
    seconds to open the store, seconds of the search, and the process's peak RSS (MiB)."""
    python = shlex.split(command)[0]
    done = subprocess.run([python, "-c", FIRST, str(store), query], capture_output=True, text=True, check=True,
                          cwd="/")
    opened, searched, rss = done.stdout.split()
    return {"open_s": float(opened), "search_s": float(searched), "rss_mib": int(rss) / 1024}


def run_import(command: str, file: Path, store: Path) -> dict[str, Any]:
    """One import in a process of its own: wall seconds, peak RSS (MiB) and the store's parts."""
    began = time.perf_counter()
    child = subprocess.Popen([*shlex.split(command), "import", str(file), "--store", str(store)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    out, err = child.stdout.read().decode(), child.stderr.read().decode()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command} import failed: {err}{out}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
            "parts": parts(store), "scan_us": scan(command, store), "first": first_search(command, store)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000])
    parser.add_argument("--baseline", help="the command of the code before, e.g. '/work/before/.venv/bin/python -m "
                                           "chronograph'")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path, default=Path("bench-import.json"))
    parser.add_argument("--dir", type=Path, default=None, help="where the files and stores go (default: a temp dir)")
    args = parser.parse_args(argv)
    commands = {"after": AFTER, **({"before": args.baseline} if args.baseline else {})}
    figures: dict[str, Any] = {"sizes": {}}
    with tempfile.TemporaryDirectory(prefix="bench-import-", dir=args.dir) as base:
        root = Path(base)
        for size in args.sizes:
            file = root / f"graph-{size}.jsonl"
            file_bytes = write_graph(file, size)
            events = 3 * size
            at: dict[str, Any] = {"file_bytes": file_bytes, "events": events}
            for label, command in commands.items():
                runs = []
                for n in range(args.rounds):
                    store = root / f"{label}-{size}-{n}"
                    runs.append(run_import(command, file, store))
                    subprocess.run(["rm", "-rf", str(store)], check=True)
                wall = statistics.median(r["wall_s"] for r in runs)
                cpu = statistics.median(r["cpu_s"] for r in runs)
                rss = max(r["rss_mib"] for r in runs)
                store_parts = runs[-1]["parts"]
                at[label] = {"wall_s": round(wall, 1), "events_per_s": round(events / wall), "cpu_s": round(cpu, 1),
                             "events_per_cpu_s": round(events / cpu),
                             "log_scan_us_per_event": round(statistics.median(r["scan_us"] for r in runs), 2),
                             "peak_rss_mib": round(rss), "store_bytes": store_parts["(file)"],
                             "first_search_s": round(statistics.median(r["first"]["search_s"] for r in runs), 3),
                             "first_search_rss_mib": round(max(r["first"]["rss_mib"] for r in runs)),
                             "parts_bytes_per_entity": {k: round(v / size, 1) for k, v in store_parts.items()}}
            figures["sizes"][size] = at
            file.unlink()
            rows = [("file (official JSONL)", f"{file_bytes / size:.0f} B/entity", "")]
            for label in commands:
                mine = at[label]
                rows += [(f"{label}: wall", f"{mine['wall_s']} s", ""),
                         (f"{label}: events/s", f"{mine['events_per_s']:,}", ">= 30k at 1M"),
                         (f"{label}: CPU (user+sys)", f"{mine['cpu_s']} s", ""),
                         (f"{label}: events per CPU second", f"{mine['events_per_cpu_s']:,}", ""),
                         (f"{label}: peak RSS", f"{mine['peak_rss_mib']:,} MiB", "<= 500 MiB"),
                         (f"{label}: store / JSONL", f"{mine['store_bytes'] / file_bytes:.2f}x", "<= 4x"),
                         (f"{label}: log scan, CPU per event", f"{mine['log_scan_us_per_event']} us", ""),
                         (f"{label}: cold first search (loads the image)", f"{mine['first_search_s']} s", ""),
                         (f"{label}: its process's peak RSS", f"{mine['first_search_rss_mib']:,} MiB", "")]
            if "before" in at:
                rows.append(("after / before: events/s",
                             f"{at['after']['events_per_s'] / at['before']['events_per_s']:.2f}x", ""))
            print_table(f"import of {size:,} entities ({events:,} events)", rows)
            names = sorted({k for label in commands for k in at[label]["parts_bytes_per_entity"]})
            print_table(f"bytes per entity by part, {size:,} entities (" + " / ".join(commands) + ")", [
                (name, " / ".join(f"{at[label]['parts_bytes_per_entity'].get(name, 0):,.0f}" for label in commands),
                 "") for name in names])
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
