"""Benchmark the MCP server over stdio with a real MCP client, as Claude Desktop runs it.

    python bench/bench_server.py [--sizes 1000,10000,50000] [--samples 100] [--peer] [--json FILE]

At each graph size N (entities with 3 observations and about 2 relations each, grown in
batches through the tools), measures per-call p50/p95 of: create 1 entity, add 1
observation, search for a rare term, open 2 nodes, read_graph. With --peer, the
official memory server (npm, needs node) is measured in the same run for ratios; with
--baseline CMD, another Chronograph (say, an older checkout: "/old/.venv/bin/python -m
server") is, so that a change can be checked for leaving calls as fast as they were.
The client is the SDK's `mcp.Client`; its stdio transport is swapped for one with a
linear line reader (see tools/stdio_transport.py) unless --sdk-reader is given.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from report import print_table, write_json
from stdio_transport import linear_stdio_client
from workload import Workload

OFFICIAL_PACKAGE = "@modelcontextprotocol/server-memory@2026.8.31"


async def timed(count: int, work: Callable[[int], Awaitable[Any]]) -> list[float]:
    """Durations in ms of `count` awaited calls."""
    out = []
    for i in range(count):
        started = time.perf_counter()
        await work(i)
        out.append((time.perf_counter() - started) * 1e3)
    return out


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": statistics.median(ordered), "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]}


async def checked(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return result


async def grow(client: Client, workload: Workload, start: int, stop: int) -> None:
    """Entities start..stop with 3 observations each, then about 2 relations per entity."""
    for base in range(start, stop, 500):
        entities = []
        for i in range(base, min(base + 500, stop)):
            _, event = workload.entity(i, observations=3)
            entities.append({"name": event.name, "entityType": event.entity_type,
                             "observations": list(event.observations)})
        await checked(client, "create_entities", {"entities": entities})
    rng, count = workload.rng, len(workload.entities)
    relations = []
    for i in range(start, stop):
        for _ in range(2):
            relations.append({"from": workload.name(i), "to": workload.name(rng.randrange(count)),
                              "relationType": rng.choice(["knows", "uses", "owns"])})
    for base in range(0, len(relations), 500):
        await checked(client, "create_relations", {"relations": relations[base : base + 500]})


async def measure(client: Client, workload: Workload, size: int, samples: int, tag: str) -> dict[str, Any]:
    count = len(workload.entities)
    rare = [workload.rare_term(i) for i in range(0, size, 1000)]
    figures = {
        "create 1 entity": summary(await timed(samples, lambda i: checked(client, "create_entities", {
            "entities": [{"name": f"{tag}-bench-{size}-{i}", "entityType": "bench", "observations": ["o"]}]}))),
        "add 1 observation": summary(await timed(samples, lambda i: checked(client, "add_observations", {
            "observations": [{"entityName": workload.name((i * 7919) % count), "contents": [f"{tag} note {i}"]}]}))),
        "search rare term": summary(await timed(samples, lambda i: checked(client, "search_nodes", {
            "query": rare[i % len(rare)]}))),
        "open 2 nodes": summary(await timed(samples, lambda i: checked(client, "open_nodes", {
            "names": [workload.name((i * 31) % count), workload.name((i * 37 + 1) % count)]}))),
        "read_graph": summary(await timed(max(3, samples // 20), lambda i: checked(client, "read_graph", {}))),
    }
    if tag == "ours":  # the floor: a tool call that finds nothing to do (protocol 2026-07-28 has no ping)
        figures["read_context, no work"] = summary(await timed(samples, lambda i: checked(
            client, "read_context", {"workspace": "nothing-here"})))
    return figures


def server_side_read_graph(store: Path, rounds: int = 3) -> dict[str, float]:
    """read_graph inside the server process: query, output, and the JSON-RPC reply it writes."""
    from chronograph.application import Memory
    from chronograph.server.results import reply, result

    with Memory(store) as memory:
        times = {"query": [], "reply_json": []}
        size = 0
        for _ in range(rounds):
            started = time.perf_counter()
            output = memory.read("read_graph", {})
            middle = time.perf_counter()
            size = len(result(*reply(output)).model_dump_json(by_alias=True, exclude_unset=True))
            times["query"].append((middle - started) * 1e3)
            times["reply_json"].append((time.perf_counter() - middle) * 1e3)
    return {**{k: statistics.median(v) for k, v in times.items()}, "reply_bytes": size}


def server_side_calls(store: Path, samples: int, count: int) -> dict[str, float]:
    """p50 ms of the small calls inside the server process (durable writes), no MCP around them."""
    from chronograph.application import Memory
    from chronograph.server.results import reply, result

    workload = Workload(seed=11)
    with Memory(store) as memory:
        calls = {
            "create 1 entity": lambda i: memory.write("create_entities", {"entities": [
                {"name": f"inside-{i}", "entityType": "bench", "observations": ["o"]}]}, actor="bench").output,
            "add 1 observation": lambda i: memory.write("add_observations", {"observations": [
                {"entityName": workload.name((i * 7919) % count), "contents": [f"inside note {i}"]}]},
                actor="bench").output,
            "search rare term": lambda i: memory.read("search_nodes", {"query": workload.rare_term(0)}),
            "open 2 nodes": lambda i: memory.read("open_nodes", {
                "names": [workload.name((i * 31) % count), workload.name((i * 37 + 1) % count)]}),
        }
        figures = {}
        for name, call in calls.items():
            times = []
            for i in range(samples):
                started = time.perf_counter()
                result(*reply(call(i)))
                times.append((time.perf_counter() - started) * 1e3)
            figures[name] = statistics.median(times)
    return figures


async def run_target(
    params: StdioServerParameters, sizes: list[int], samples: int, tag: str, sdk_reader: bool
) -> dict[int, Any]:
    workload = Workload(seed=11)
    results: dict[int, Any] = {}
    transport = params if sdk_reader else linear_stdio_client(params)
    async with Client(transport, read_timeout_seconds=600) as client:
        grown = 0
        for size in sizes:
            print(f"[{tag}] growing to {size:,} entities ...", file=sys.stderr)
            await grow(client, workload, grown, size)
            grown = size
            # search warms its index on first use; measure steady state
            await checked(client, "search_nodes", {"query": workload.rare_term(0)})
            results[size] = await measure(client, workload, size, samples, tag)
    return results


def official_server(root: Path) -> StdioServerParameters | None:
    if shutil.which("npm") is None or shutil.which("node") is None:
        return None
    prefix = root / "official"
    prefix.mkdir()
    subprocess.run(["npm", "install", "--silent", "--prefix", str(prefix), OFFICIAL_PACKAGE], check=True,
                   stdout=subprocess.DEVNULL)
    script = prefix / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
    return StdioServerParameters(command="node", args=[str(script)],
                                 env={"MEMORY_FILE_PATH": str(root / "memory.jsonl")})


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000", help="graph sizes (entities), ascending")
    parser.add_argument("--samples", type=int, default=100, help="calls per measure and size")
    parser.add_argument("--peer", action="store_true", help="also measure the official server (node)")
    parser.add_argument("--peer-samples", type=int, default=10, help="calls per measure for the peer")
    parser.add_argument("--baseline", metavar="CMD",
                        help="also measure this Chronograph server command (given --store and --max-reply)")
    parser.add_argument("--sdk-reader", action="store_true",
                        help="use the SDK's stdio client transport (quadratic on big replies)")
    parser.add_argument("--json", type=Path, default=Path("bench-server.json"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # No reply limit: read_graph at 50k is measured whole, as the official server sends it.
        ours = StdioServerParameters(command=sys.executable,
                                     args=["-m", "chronograph", "--store", str(root / "store"), "--max-reply", "0"],
                                     cwd=str(Path(__file__).resolve().parent.parent))
        results: dict[str, Any] = {
            "chronograph": anyio.run(run_target, ours, sizes, args.samples, "ours", args.sdk_reader)
        }
        inside = server_side_read_graph(root / "store")
        inside_calls = server_side_calls(root / "store", args.samples, sizes[-1])
        if args.baseline:
            command, *rest = shlex.split(args.baseline)
            baseline = StdioServerParameters(
                command=command, args=[*rest, "--store", str(root / "baseline"), "--max-reply", "0"], cwd=str(root))
            results["baseline"] = anyio.run(run_target, baseline, sizes, args.samples, "base", args.sdk_reader)
        if args.peer:
            peer = official_server(root)
            if peer is None:
                print("node/npm not found: skipping --peer", file=sys.stderr)
            else:
                results["official"] = anyio.run(run_target, peer, sizes, args.peer_samples, "peer", args.sdk_reader)

    rows = []
    for size in sizes:
        for measure_name, figure in results["chronograph"][size].items():
            peer_text = ""
            if measure_name in results.get("official", {}).get(size, {}):
                theirs = results["official"][size][measure_name]["p50"]
                ratio = theirs / figure["p50"]
                peer_text = f"official p50 {theirs:,.1f} ms ({ratio:,.0f}x)" if ratio >= 10 else \
                    f"official p50 {theirs:,.1f} ms ({ratio:.2f}x)"
            if measure_name in results.get("baseline", {}).get(size, {}):
                before = results["baseline"][size][measure_name]["p50"]
                peer_text = (peer_text + "; " if peer_text else "") + \
                    f"baseline p50 {before:,.2f} ms (ours/baseline {figure['p50'] / before:.2f})"
            rows.append((f"N={size:,} {measure_name}", f"{figure['p50']:.2f} / {figure['p95']:.2f}", peer_text))
    print_table("server over stdio: p50 / p95 ms per call", rows)
    flat = {
        "write_p50_50k_over_1k": results["chronograph"][sizes[-1]]["create 1 entity"]["p50"]
        / results["chronograph"][sizes[0]]["create 1 entity"]["p50"],
    }
    print(f"\ncreate p50 at N={sizes[-1]:,} / at N={sizes[0]:,}: {flat['write_p50_50k_over_1k']:.2f} (target <= 1.3)")
    print(f"read_graph at N={sizes[-1]:,} inside the server: query {inside['query']:.0f} ms, "
          f"JSON-RPC reply {inside['reply_json']:.0f} ms ({inside['reply_bytes'] / 1e6:.1f} MB); "
          "the rest is the client (the SDK validates the reply against the output schema in Python)")
    print(f"inside the server at N={sizes[-1]:,}, p50 ms (durable writes, no MCP): "
          + ", ".join(f"{name} {ms:.2f}" for name, ms in inside_calls.items()))
    write_json(args.json, {"sizes": sizes, "results": results, "read_graph_inside_server_ms": inside,
                           "calls_inside_server_p50_ms": inside_calls, **flat})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
