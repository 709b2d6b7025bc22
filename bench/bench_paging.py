"""What a refused answer, a page and a whole-graph answer cost: this checkout beside a baseline
(and, for whole answers, beside the official server).

    python bench/bench_paging.py [--sizes 50000,200000] [--rounds 5] [--samples 15]
                                 [--baseline /old/checkout/.venv/bin/python]
                                 [--whole 1000] [--whole-samples 30] [--peer] [--json FILE]

1. Inside the process, at each size: a store of N entities (three observations each from the
   shared synthetic workload, names "Entity 0001234", about two relations each), filled by
   each checkout's own code. Each call runs as the server runs it: the query, then the reply
   (text and structured content) checked against the default 9 MiB limit. Measured: refusing
   search_nodes of a word in every entity ("entity") and read_graph without paging; a page of
   20 of that word (substring, at offset 0 and 1,000; ranked; fuzzy); a page of 20 of a
   two-word query whose first word is in every entity; a rare word. The sides run in
   alternating rounds (so the load of a shared machine falls on both); the table is the median
   over rounds of each side's p50.
2. Over stdio with a raw JSON-RPC client (one line out, one line back; nothing validated):
   ours, the baseline and the official server (--peer, npm) each filled with the same --whole
   entities through their tools, then called in turn, call by call: read_graph, a search of a
   word in every entity, a rare word, open 2 nodes. p50 per server, and the ratios.
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
from typing import Any

from report import print_table, write_json

HERE = Path(__file__).resolve()
LIMIT = 9 << 20
MEASURES = (
    "refuse search_nodes of a word in every entity",
    "refuse read_graph",
    "page of 20, a word in every entity",
    "page of 20 at offset 1,000",
    "page of 20, two words (one in every entity)",
    "ranked page of 20, a word in every entity",
    "fuzzy page of 20, a word in every entity",
    "search a rare word",
)


def fill(store: Path, entities: int) -> None:
    """`entities` entities of the shared workload, three observations each, ~2 relations each."""
    from chronograph.application import Memory
    from workload import Workload

    workload = Workload(seed=11)
    with Memory(store, sync=False) as memory:
        for base in range(0, entities, 1000):
            batch = []
            for i in range(base, min(base + 1000, entities)):
                _, event = workload.entity(i, observations=3)
                batch.append({"name": event.name, "entityType": event.entity_type,
                              "observations": list(event.observations)})
            memory.write("create_entities", {"entities": batch}, actor="bench")
        rng = workload.rng
        relations = [{"from": workload.name(i), "to": workload.name(rng.randrange(entities)),
                      "relationType": rng.choice(["knows", "uses", "owns"])} for i in range(entities) for _ in range(2)]
        for base in range(0, len(relations), 1000):
            memory.write("create_relations", {"relations": relations[base : base + 1000]}, actor="bench")
        memory.read("search_nodes", {"query": workload.rare_term(0)})  # the index, kept with the store


def measure(store: Path, entities: int, samples: int) -> dict[str, Any]:
    """p50 ms of each measure (each call as the server runs it: query, then the checked reply)."""
    from chronograph.application import Memory, ReplyTooLargeError
    from chronograph.projections import paused_gc
    from chronograph.server.results import reply

    two = f"entity {entities // 2:07d}"
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        MEASURES[0]: ("search_nodes", {"query": "entity"}),
        MEASURES[1]: ("read_graph", {}),
        MEASURES[2]: ("search_nodes", {"query": "entity", "limit": 20}),
        MEASURES[3]: ("search_nodes", {"query": "entity", "limit": 20, "offset": 1000}),
        MEASURES[4]: ("search_nodes", {"query": two, "limit": 20}),
        MEASURES[5]: ("search_nodes", {"query": "entity", "mode": "ranked", "limit": 20}),
        MEASURES[6]: ("search_nodes", {"query": "entity", "mode": "fuzzy", "limit": 20}),
        MEASURES[7]: ("search_nodes", {"query": "zqx1000rare"}),
    }
    figures: dict[str, Any] = {}
    with Memory(store) as memory:
        memory.reply_limit = LIMIT  # what a server sets (an older checkout ignores it)
        for name, (tool, arguments) in calls.items():
            outcome = ""

            def once(tool: str = tool, arguments: dict[str, Any] = arguments) -> str:
                try:
                    with paused_gc():
                        answer = reply(memory.read(tool, arguments), tool=tool, limit=LIMIT)
                    _, structured, _ = answer
                    return f"total {structured.get('total', len(structured['entities']))}"
                except ReplyTooLargeError as error:
                    return "refused: " + str(error).split(" one reply")[0].split("would be ")[1]

            outcome = once()  # warm
            times = []
            for _ in range(samples):
                started = time.perf_counter()
                once()
                times.append((time.perf_counter() - started) * 1e3)
            figures[name] = statistics.median(times)
            figures[name + " (answer)"] = outcome
    return figures


def worker(python: str, store: Path, entities: int, samples: int, *, fill_only: bool = False) -> dict[str, Any]:
    """Run this script's worker with `python` (a checkout's interpreter) and return what it printed."""
    argv = [python, str(HERE), "--worker", str(store), "--entities", str(entities), "--samples", str(samples)]
    done = subprocess.run([*argv, *(["--fill"] if fill_only else [])], capture_output=True, text=True, check=True,
                          cwd=HERE.parent)
    return json.loads(done.stdout) if not fill_only else {}


def inside(sides: dict[str, str], sizes: list[int], rounds: int, samples: int, base: Path,
           keep: bool = False) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for size in sizes:
        stores = {side: base / f"store-{size}-{i}" for i, side in enumerate(sides)}
        for side, python in sides.items():
            if keep and (stores[side] / "data.mdb").exists():
                continue  # filled by an earlier run (--stores)
            print(f"filling {size:,} entities ({side}) ...", file=sys.stderr)
            worker(python, stores[side], size, samples, fill_only=True)
        found: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for number in range(rounds):
            print(f"{size:,}: round {number + 1} of {rounds} ...", file=sys.stderr)
            for side in (list(sides) if number % 2 == 0 else list(reversed(sides))):
                found[side].append(worker(sides[side], stores[side], size, samples))
        results[size] = {side: {**{m: statistics.median(r[m] for r in runs) for m in MEASURES},
                                **{m + " (answer)": runs[-1][m + " (answer)"] for m in MEASURES}}
                         for side, runs in found.items()}
        if not keep:
            for store in stores.values():
                subprocess.run(["rm", "-rf", str(store)], check=True)
    return results


# --- over stdio, with a raw JSON-RPC client ---------------------------------------------------


class Raw:
    """A server over stdio spoken to one JSON-RPC line at a time."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env)
        self.ident = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> tuple[bytes, float]:
        """The answer's line, and when it had been read (before it is parsed to check its id)."""
        self.ident += 1
        self.send({"jsonrpc": "2.0", "id": self.ident, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            read = time.perf_counter()
            if not line:
                raise RuntimeError(f"the server ended during {method}")
            if json.loads(line).get("id") == self.ident:
                return line, read

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bytes, float]:
        line, read = self.request("tools/call", {"name": tool, "arguments": arguments})
        if json.loads(line)["result"].get("isError"):
            raise RuntimeError(f"{tool} failed: {line[:300]!r}")
        return line, read

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def whole(commands: dict[str, tuple[list[str], dict[str, str] | None]], entities: int,
          samples: int) -> dict[str, Any]:
    """Fill each server in a session of its own, then measure in a new one (as a client's next
    session finds it: ours answers from the stdio front, whose kept answers the first left)."""
    sys.path.insert(0, str(HERE.parent))
    from workload import Workload

    for name, (command, env) in commands.items():
        server = Raw(command, env)
        print(f"filling {entities:,} entities ({name}) ...", file=sys.stderr)
        workload = Workload(seed=11)
        for base in range(0, entities, 500):
            batch = []
            for i in range(base, min(base + 500, entities)):
                _, event = workload.entity(i, observations=3)
                batch.append({"name": event.name, "entityType": event.entity_type,
                              "observations": list(event.observations)})
            server.call("create_entities", {"entities": batch})
        rng = workload.rng
        relations = [{"from": workload.name(i), "to": workload.name(rng.randrange(entities)),
                      "relationType": rng.choice(["knows", "uses", "owns"])} for i in range(entities) for _ in range(2)]
        for base in range(0, len(relations), 500):
            server.call("create_relations", {"relations": relations[base : base + 500]})
        server.call("search_nodes", {"query": workload.rare_term(0)})
        server.close()
    servers = {name: Raw(command, env) for name, (command, env) in commands.items()}
    try:
        return _measure_whole(servers, samples)
    finally:
        for server in servers.values():
            server.close()


def _measure_whole(servers: dict[str, Raw], samples: int) -> dict[str, Any]:
    calls = {
        "read_graph": ("read_graph", {}),
        "search a word in every entity": ("search_nodes", {"query": "entity"}),
        "search a rare word": ("search_nodes", {"query": "zqx0rare"}),
        "open 2 nodes": ("open_nodes", {"names": ["Entity 0000031", "Entity 0000037"]}),
    }
    times: dict[str, dict[str, list[float]]] = {call: {name: [] for name in servers} for call in calls}
    sizes: dict[str, dict[str, int]] = {call: {} for call in calls}
    order = list(servers)
    for sample in range(samples + 1):
        for call, (tool, arguments) in calls.items():
            for name in order[sample % len(order):] + order[: sample % len(order)]:  # each goes first in turn
                started = time.perf_counter()
                line, read = servers[name].call(tool, arguments)
                if sample:  # the first round warms
                    times[call][name].append((read - started) * 1e3)
                sizes[call][name] = len(line)
    return {call: {name: {"p50": statistics.median(t), "bytes": sizes[call][name]} for name, t in found.items()}
            for call, found in times.items()}


def main(argv: list[str] | None = None) -> int:
    """Run both parts; print the tables; 0."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50000", help="graph sizes inside the process (0: skip)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--baseline", metavar="PYTHON", help="the interpreter of the checkout to compare with")
    parser.add_argument("--whole", type=int, default=0, help="entities for the stdio part (0: skip)")
    parser.add_argument("--whole-samples", type=int, default=30)
    parser.add_argument("--peer", action="store_true", help="the official server too in the stdio part (npm)")
    parser.add_argument("--stores", type=Path, help="keep the filled stores here (store-N-0 ours, store-N-1 the "
                        "baseline) and use those already there")
    parser.add_argument("--json", type=Path, default=Path("bench-paging.json"))
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--entities", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--fill", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        if args.fill:
            fill(args.worker, args.entities)
        else:
            print(json.dumps(measure(args.worker, args.entities, args.samples)))
        return 0
    sides = {"ours": sys.executable, **({"baseline": args.baseline} if args.baseline else {})}
    sizes = [int(s) for s in args.sizes.split(",") if int(s)]
    document: dict[str, Any] = {"sizes": sizes, "rounds": args.rounds, "samples": args.samples}
    with tempfile.TemporaryDirectory(prefix="bench-paging-") as tmp:
        base = Path(tmp)
        if sizes:
            document["inside"] = inside(sides, sizes, args.rounds, args.samples, args.stores or base,
                                        keep=args.stores is not None)
            for size in sizes:
                rows = []
                for name in MEASURES:
                    ours = document["inside"][size]["ours"]
                    text = ""
                    if "baseline" in document["inside"][size]:
                        before = document["inside"][size]["baseline"]
                        text = (f"baseline {before[name]:,.1f} ms ({before[name + ' (answer)']}); "
                                f"ours/baseline {ours[name] / before[name]:.3f}")
                    rows.append((name, f"{ours[name]:,.2f} ms ({ours[name + ' (answer)']})", text))
                print_table(f"inside the process at {size:,} entities, p50 (median of {args.rounds} rounds)", rows)
        if args.whole:
            root = Path(__file__).resolve().parent.parent
            commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
                "ours": ([sys.executable, "-m", "chronograph", "--store", str(base / "w-ours"), "--embeddings", "off"],
                         {**os.environ, "PYTHONPATH": str(root)})}
            if args.baseline:
                commands["baseline"] = ([args.baseline, "-m", "chronograph", "--store", str(base / "w-base"),
                                         "--embeddings", "off"], None)
            if args.peer:
                from bench_server import official_server

                peer = official_server(base)
                if peer is not None:
                    commands["official"] = ([peer.command, *peer.args], {**os.environ, **(peer.env or {})})
            document["whole"] = whole(commands, args.whole, args.whole_samples)
            rows = []
            for call, found in document["whole"].items():
                ours = found["ours"]["p50"]
                notes = []
                if "official" in found:
                    theirs = found["official"]["p50"]
                    notes.append(f"official {theirs:,.2f} ms ({theirs / ours:.2f}x as long as ours)")
                if "baseline" in found:
                    notes.append(f"baseline {found['baseline']['p50']:,.2f} ms (ours/baseline "
                                 f"{ours / found['baseline']['p50']:.2f})")
                bytes_ = ", ".join(f"{name} {f['bytes'] / 1e6:.2f} MB" for name, f in found.items())
                rows.append((call, f"{ours:,.2f} ms", "; ".join(notes) + f" [{bytes_}]"))
            print_table(f"over stdio, raw JSON-RPC, {args.whole:,} entities, p50 of {args.whole_samples} "
                        "(calls in turn)", rows)
    write_json(args.json, document)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
