"""Search as clients see it: the first search of a fresh stdio server, warm searches per mode,
memory, and what semantic search costs a write. Side by side with the official server.

    python bench/bench_search.py [--sizes 50000,500000] [--spawns 5] [--samples 60]
                                 [--warm-size 50000] [--no-peer] [--json FILE]

1. First search: at each size, a store of N entities (three observations each, the
   shared synthetic workload) and the same graph as the official server's memory.jsonl.
   Each spawn starts a server over stdio (as Claude Desktop does per session), waits for
   `initialize` and one `search_nodes` for a rare word; the clock runs from the spawn
   to the answer. The very first spawn on a store indexes it (and keeps the index);
   the later ones load it. Ours and the official server's spawns alternate.
2. Warm: one server with the bundled model on the --warm-size store, embedded first;
   p50 of `search_nodes` per mode, each sample a different query (so no cache answers),
   and the server's resident memory after them.
3. Writes: create-1-entity p50 of a server embedding in the background against one with
   --embeddings off, in alternating blocks, on stores of the same size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from bench_server import OFFICIAL_PACKAGE, checked
from chronograph.application import Memory
from chronograph.application.engine.semantic import Semantic
from chronograph.eventstore import LmdbLog
from chronograph.projections.search.minilm import LocalMiniLM

try:  # the term weigher of this version (see projections/search/splade.py)
    from chronograph.projections.search.splade import open_weigher
except ImportError:  # an older version, run side by side: embeddings alone
    open_weigher = None  # type: ignore[assignment]
from mcp import Client, StdioServerParameters
from report import print_table, write_json
from stdio_transport import linear_stdio_client
from workload import Workload

ROOT = Path(__file__).resolve().parent.parent


def build(root: Path, size: int) -> Workload:
    """A store of `size` entities at root/store (views folded) and the same graph as root/memory.jsonl."""
    workload = Workload(seed=5)
    print(f"building {size:,} entities ...", file=sys.stderr)
    with LmdbLog(root / "store", sync=False) as log, (root / "memory.jsonl").open("w") as jsonl:
        for start in range(0, size, 5000):
            writes = workload.entity_writes(start, min(5000, size - start))
            log.append(writes, actor="bench")
            for write in writes:
                event = write.events[0]
                jsonl.write(json.dumps({"type": "entity", "name": event.name, "entityType": event.entity_type,
                                        "observations": list(event.observations)}) + "\n")
    with Memory(root / "store", sync=False):  # fold the views now, not in the first spawn
        pass
    return workload


def ours(store: Path, *flags: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "chronograph", "--store", str(store), *flags], cwd=str(ROOT))


def official(root: Path) -> StdioServerParameters:
    script = root.parent / "official" / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
    return StdioServerParameters(command="node", args=[str(script)],
                                 env={"MEMORY_FILE_PATH": str(root / "memory.jsonl")})


async def first_search(params: StdioServerParameters, query: str) -> tuple[float, float, int]:
    """(ms from spawn to initialized, ms from spawn to the first search's answer, entities found)."""
    started = time.perf_counter()
    async with Client(linear_stdio_client(params), read_timeout_seconds=600) as client:
        initialized = time.perf_counter()
        result = await checked(client, "search_nodes", {"query": query})
        answered = time.perf_counter()
    found = len(result.structured_content["entities"])
    return (initialized - started) * 1e3, (answered - started) * 1e3, found


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def warm(store: Path, workload: Workload, samples: int) -> tuple[dict[str, float], float]:
    """p50 ms per mode over `samples` distinct queries, and the server's RSS (MiB) after them."""
    words, rng = workload.words, workload.rng
    count = len(workload.entities)
    queries: dict[str, Callable[[int], dict[str, Any]]] = {
        "substring, rare word": lambda i: {"query": workload.rare_term(1000 * (i % max(1, count // 1000)))},
        "substring, common word (page of 20)": lambda i: {"query": rng.choice(words[:200]), "limit": 20},
        "ranked, two words": lambda i: {"query": f"{rng.choice(words)} {rng.choice(words)}", "mode": "ranked"},
        "fuzzy, one typo": lambda i: {"query": _typo(rng.choice(words[200:2000])), "mode": "fuzzy"},
        "semantic, a sentence": lambda i: {"query": f"{rng.choice(words)} {rng.choice(words)} notes {i}",
                                           "mode": "semantic"},
        "hybrid, a sentence": lambda i: {"query": f"{rng.choice(words)} {rng.choice(words)} facts {i}",
                                         "mode": "hybrid"},
    }
    pids: list[int] = []

    def spawned(process: Process) -> None:
        pids.append(process.pid)

    figures: dict[str, float] = {}
    async with Client(linear_stdio_client(ours(store, "--embeddings", "local"), spawned),
                      read_timeout_seconds=600) as client:
        await checked(client, "search_nodes", {"query": "warm up", "mode": "hybrid"})
        for name, make in queries.items():
            durations = []
            for i in range(samples):
                arguments = make(i)
                started = time.perf_counter()
                await checked(client, "search_nodes", arguments)
                durations.append((time.perf_counter() - started) * 1e3)
            figures[name] = statistics.median(durations)
        rss = rss_mib(pids[0])
    return figures, rss


def _typo(word: str) -> str:
    return word[0] + word[2] + word[1] + word[3:] if len(word) > 4 else word + "x"


async def writes(stores: dict[str, Path], rounds: int, per_block: int) -> dict[str, float]:
    """create-1-entity p50 per server, alternating blocks of `per_block` calls."""
    flags = {"semantic": ("--embeddings", "local"), "off": ("--embeddings", "off")}
    durations: dict[str, list[float]] = {name: [] for name in stores}
    async with Client(linear_stdio_client(ours(stores["semantic"], *flags["semantic"]))) as with_model, \
            Client(linear_stdio_client(ours(stores["off"], *flags["off"]))) as without:
        clients = {"semantic": with_model, "off": without}
        await checked(with_model, "search_nodes", {"query": "load the model", "mode": "semantic"})
        serial = 0
        for _ in range(rounds):
            for name, client in clients.items():
                for _ in range(per_block):
                    serial += 1
                    entity = {"name": f"bench-{serial}", "entityType": "note",
                              "observations": [f"written while measuring, number {serial}"]}
                    started = time.perf_counter()
                    await checked(client, "create_entities", {"entities": [entity]})
                    durations[name].append((time.perf_counter() - started) * 1e3)
                await anyio.sleep(0.5)
    return {name: statistics.median(values) for name, values in durations.items()}


def embed_all(store: Path) -> float:
    """Embed every entity of `store` with the bundled model on every core (and its term weights,
    where this version has them); return seconds."""
    with Memory(store, sync=False) as memory:
        weigher = open_weigher() if open_weigher is not None else None  # as a server would, where this version has one
        semantic = Semantic(memory.views, LocalMiniLM(threads=0), memory.lock, *([weigher] if weigher else []))
        started = time.perf_counter()
        last = [0.0]

        def progress(done: int, head: int) -> None:
            if time.perf_counter() - last[0] > 10:
                last[0] = time.perf_counter()
                print(f"  embedded through {done:,} of {head:,}", file=sys.stderr)

        semantic.catch_up(progress)
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its tables; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50000,500000", help="graph sizes for the first-search figures")
    parser.add_argument("--spawns", type=int, default=5, help="spawns per server and size")
    parser.add_argument("--samples", type=int, default=60, help="warm searches per mode")
    parser.add_argument("--warm-size", type=int, default=50000, help="graph size for the warm and memory figures")
    parser.add_argument("--write-size", type=int, default=10000, help="graph size for the write figures")
    parser.add_argument("--no-peer", action="store_true", help="do not run the official server")
    parser.add_argument("--parts", default="first,warm,writes", help="which parts to run (comma-separated)")
    parser.add_argument("--json", type=Path, default=Path("bench-search.json"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    figures: dict[str, Any] = {"first_search": {}, "warm_p50_ms": {}, "write_p50_ms": {}}
    rows: list[tuple[str, str, str]] = []

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        if not args.no_peer:
            subprocess.run(["npm", "install", "--silent", "--prefix", str(base / "official"), OFFICIAL_PACKAGE],
                           check=True, stdout=subprocess.DEVNULL)
        parts = set(args.parts.split(","))
        for size in sizes if "first" in parts else []:
            root = base / f"n{size}"
            root.mkdir()
            workload = build(root, size)
            query = workload.rare_term(1000)
            first = anyio.run(first_search, ours(root / "store", "--embeddings", "off"), query)
            ours_runs, peer_runs = [], []
            for _ in range(args.spawns):
                ours_runs.append(anyio.run(first_search, ours(root / "store", "--embeddings", "off"), query))
                if not args.no_peer:
                    peer_runs.append(anyio.run(first_search, official(root), query))
            assert all(run[2] == 1 for run in [first, *ours_runs, *peer_runs]), "each search finds its one entity"
            entry = {
                "first_spawn_ever_ms": first[1],
                "ours_initialize_ms": statistics.median(r[0] for r in ours_runs),
                "ours_first_search_ms": statistics.median(r[1] for r in ours_runs),
            }
            if peer_runs:
                entry["official_initialize_ms"] = statistics.median(r[0] for r in peer_runs)
                entry["official_first_search_ms"] = statistics.median(r[1] for r in peer_runs)
            figures["first_search"][size] = entry
            peer = (f"official {entry['official_first_search_ms']:,.0f} ms "
                    f"(ours/official {entry['ours_first_search_ms'] / entry['official_first_search_ms']:.2f})"
                    if peer_runs else "")
            rows.append((f"N={size:,} spawn -> first search, median", f"{entry['ours_first_search_ms']:,.0f} ms", peer))
            rows.append((f"N={size:,} spawn -> initialized, median", f"{entry['ours_initialize_ms']:,.0f} ms",
                         f"official {entry['official_initialize_ms']:,.0f} ms" if peer_runs else ""))
            rows.append((f"N={size:,} first spawn ever (indexes, keeps it)", f"{first[1]:,.0f} ms", ""))
        if rows:
            print_table("first search of a fresh stdio server (ms, median of spawns)", rows)
        if "warm" in parts:
            _warm(base, args, figures)
        if "writes" in parts:
            _writes(base, args, figures)
    write_json(args.json, figures)
    return 0


def _warm(base: Path, args: argparse.Namespace, figures: dict[str, Any]) -> None:
    root = base / "warm"
    root.mkdir()
    workload = build(root, args.warm_size)
    seconds = embed_all(root / "store")
    figures["embed_seconds"] = seconds
    figures["embed_rate_per_s"] = args.warm_size / seconds
    warm_figures, rss = anyio.run(warm, root / "store", workload, args.samples)
    figures["warm_p50_ms"] = warm_figures
    figures["rss_mib_with_embeddings"] = rss
    rows = [(name, f"{ms:.2f}", "<= 30 ms" if "semantic" in name or "hybrid" in name else "<= 5 ms")
            for name, ms in warm_figures.items()]
    rows.append(("server resident memory after them", f"{rss:,.0f} MiB", "<= 400 MB"))
    rows.append((f"embedding {args.warm_size:,} entities (all cores)", f"{args.warm_size / seconds:,.0f} /s", ""))
    print_table(f"warm search p50 over stdio at N={args.warm_size:,}, embeddings current", rows)


def _writes(base: Path, args: argparse.Namespace, figures: dict[str, Any]) -> None:
    stores = {}
    for name in ("semantic", "off"):
        (base / f"w-{name}").mkdir()
        build(base / f"w-{name}", args.write_size)
        stores[name] = base / f"w-{name}" / "store"
    embed_all(stores["semantic"])
    write_figures = anyio.run(writes, stores, 4, 50)
    figures["write_p50_ms"] = write_figures
    ratio = write_figures["semantic"] / write_figures["off"]
    figures["write_p50_ratio_semantic_over_off"] = ratio
    print_table(f"create 1 entity over stdio at N={args.write_size:,}, durable, p50", [
        ("embedding in the background", f"{write_figures['semantic']:.2f} ms", ""),
        ("--embeddings off", f"{write_figures['off']:.2f} ms", ""),
        ("ratio", f"{ratio:.2f}", "<= 1.1"),
    ])


if __name__ == "__main__":
    raise SystemExit(main())
