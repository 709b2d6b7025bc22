"""Where a store's bytes go, and what a rebuild costs: before and after, side by side.

    python bench/bench_store_size.py [--entities 100000 300000] [--baseline CMD] [--rebuilds 2]

For each size, writes the graph of the benchmarks (3 observations and 2 relations per
entity) as the official server's JSONL, imports it with each implementation (this
checkout's, and `--baseline`'s), measures the bytes of every part of the store (log
payloads, stream index, views, word index images, snapshots, vectors...), then runs
`replay --rebuild` (embeddings off) `--rebuilds` times, each in a process of its own,
and measures its wall time, events per second, peak RSS and the store after it.

Parts are read with LMDB's own statistics (pages of each named database), so the same
code measures any version's store.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lmdb
from report import write_json

PARTS = (
    ("log payloads", re.compile(r"log")),
    ("stream index + heads", re.compile(r"streams|heads")),
    ("log checksums, ids, meta", re.compile(r"sums|idempotency|meta|erasures.*")),
    ("views", re.compile(r"views(\..*)?")),
    ("word index images", re.compile(r"search\..*")),
    ("snapshots", re.compile(r"snapshots(\..*)?")),
    ("vectors", re.compile(r"vectors\..*")),
)


def write_graph(path: Path, entities: int, seed: int = 11) -> int:
    """The official server's JSONL of `entities` entities; return its size in bytes."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)]
    with path.open("w", encoding="utf-8") as out:
        for i in range(entities):
            observations = [" ".join(rng.choices(words, k=rng.randint(4, 8))) for _ in range(3)]
            out.write(json.dumps({"type": "entity", "name": f"Entity {i:07d}", "entityType": f"type{i % 20}",
                                  "observations": observations}) + "\n")
        for i in range(entities):
            for _ in range(2):
                j = rng.randrange(entities)
                out.write(json.dumps({"type": "relation", "from": f"Entity {i:07d}", "to": f"Entity {j:07d}",
                                      "relationType": rng.choice(["knows", "uses", "owns", "depends_on"])}) + "\n")
    return path.stat().st_size


def parts(store: Path) -> dict[str, int]:
    """Bytes per part of the store at `store` (pages of its named databases), plus the file and free space."""
    env = lmdb.open(str(store), readonly=True, lock=False, max_dbs=512, subdir=True)
    try:
        psize = env.stat()["psize"]
        found: dict[str, int] = {name: 0 for name, _ in PARTS}
        found["other"] = 0
        used = 0
        with env.begin() as txn:
            names = [bytes(key).decode() for key in txn.cursor().iternext(values=False)]
            for name in names:
                try:
                    db = env.open_db(name.encode(), txn=txn, create=False)
                except lmdb.Error:
                    continue
                stat = txn.stat(db)
                pages = stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]
                used += pages
                kind = next((part for part, pattern in PARTS if pattern.fullmatch(name)), "other")
                found[kind] += pages * psize
        info = env.info()
        found["file"] = (store / "data.mdb").stat().st_size
        found["pages in use"] = used * psize
        found["high-water mark"] = (info["last_pgno"] + 1) * psize
        return found
    finally:
        env.close()


def run(command: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run `command`; return (wall seconds, peak RSS bytes, stdout)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode()
    if status != 0 and os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{shlex.join(command)} failed ({status}): {text}")
    return wall, usage.ru_maxrss * 1024, text


def measure(name: str, cli: list[str], graph: Path, store: Path, rebuilds: int) -> dict[str, Any]:
    env = {**os.environ, "CHRONOGRAPH_EMBEDDINGS": "off"}
    print(f"  {name}: importing ...", file=sys.stderr)
    wall, rss, _ = run([*cli, "import", "--store", str(store), str(graph)], env)
    figures: dict[str, Any] = {"import_s": wall, "import_rss": rss, "after_import": parts(store), "rebuilds": []}
    for _ in range(rebuilds):
        print(f"  {name}: rebuilding ...", file=sys.stderr)
        wall, rss, text = run([*cli, "replay", "--rebuild", "--store", str(store)], env)
        found = re.search(r"([\d,]+) events, [\d,]+ keys\s+in ([\d.]+) s", text)
        events, seconds = (int(found[1].replace(",", "")), float(found[2])) if found else (0, 0.0)
        figures["rebuilds"].append({"wall_s": wall, "rss": rss, "events": events, "views_s": seconds,
                                    "parts": parts(store)})
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and print its tables; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, nargs="+", default=[100_000, 300_000])
    parser.add_argument("--baseline", default=None, help='another implementation, e.g. "/work/before/.venv/bin/python '
                        '-m chronograph"')
    parser.add_argument("--rebuilds", type=int, default=2, help="rebuilds in a row after the import")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the stores")
    parser.add_argument("--json", type=Path, default=Path("bench-store-size.json"))
    args = parser.parse_args(argv)
    ours = [sys.executable, "-m", "chronograph"]
    sides = [("ours", ours)] + ([("baseline", shlex.split(args.baseline))] if args.baseline else [])
    results: dict[str, Any] = {}
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)  # a folder named for the run need not exist yet
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for count in args.entities:
            graph = Path(tmp) / f"graph-{count}.jsonl"
            jsonl = write_graph(graph, count)
            results[str(count)] = {"jsonl_bytes": jsonl}
            for name, cli in sides:
                store = Path(tmp) / f"{name}-{count}"
                results[str(count)][name] = measure(name, cli, graph, store, args.rebuilds)
                subprocess.run(["rm", "-rf", str(store)], check=True)
            graph.unlink()
            report(count, jsonl, results[str(count)], [name for name, _ in sides])
    write_json(args.json, {"results": results})
    return 0


def report(count: int, jsonl: int, result: dict[str, Any], sides: list[str]) -> None:
    """Print bytes per entity per part after the import and after each rebuild, side by side."""
    print(f"\n{count:,} entities (JSONL {jsonl / count:.0f} B/entity): bytes per entity")
    columns = [(side, "import", result[side]["after_import"]) for side in sides]
    for side in sides:
        columns += [(side, f"rebuild {i + 1}", r["parts"]) for i, r in enumerate(result[side]["rebuilds"])]
    rows = [*(name for name, _ in PARTS), "other", "pages in use", "high-water mark", "file"]
    print("part".ljust(26) + "".join(f"{side[:8]} {when}".rjust(20) for side, when, _ in columns))
    for row in rows:
        print(row.ljust(26) + "".join(f"{found[row] / count:,.0f}".rjust(20) for _, _, found in columns))
    print("file / JSONL".ljust(26) + "".join(f"{found['file'] / jsonl:.2f}x".rjust(20) for _, _, found in columns))
    print("\nrebuild (embeddings off)".ljust(26) + "".join(f"{side[:8]} #{i + 1}".rjust(20) for side in sides
                                                            for i in range(len(result[side]["rebuilds"]))))
    for label, key, scale, fmt in (("wall, s", "wall_s", 1, "{:.1f}"), ("views, s", "views_s", 1, "{:.2f}"),
                                   ("events", "events", 1, "{:,.0f}"), ("peak RSS, MB", "rss", 1 / 2**20, "{:,.0f}")):
        print(label.ljust(26) + "".join(fmt.format(r[key] * scale).rjust(20) for side in sides
                                        for r in result[side]["rebuilds"]))
    print("views events/s".ljust(26) + "".join(f"{r['events'] / r['views_s'] if r['views_s'] else 0:,.0f}".rjust(20)
                                               for side in sides for r in result[side]["rebuilds"]))


if __name__ == "__main__":
    raise SystemExit(main())
