"""Benchmark the team memory (`--profile agent-memory`) at the sizes issue 14 names.

    python bench/bench_teams.py [--entries 100000] [--projects 1000] [--samples 200] [--json FILE]

Fills a store through memory_import (1,000 entries per call, one transaction each), then
measures: memory_query search in one project with inheritance (in process and over
stdio), a context answer for a project of 1,000 entries, a file-lock checkout over stdio,
the first call of a fresh process (it folds the team memory from the log), and, side by
side in one run, create_entities over stdio with and without a big team memory in the
store (the graph's write path must not notice it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from chronograph.application import Memory
from mcp import Client, StdioServerParameters
from report import print_table, write_json
from stdio_transport import linear_stdio_client

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("auth cache deploy schema index queue retry token session migration logging metrics billing search "
         "upload email payment report export import backup restore webhook timeout").split()


def server(store: Path, profile: str = "agent-memory") -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", str(store),
                                                              "--profile", profile], cwd=str(ROOT))


def entry(rng: random.Random, kind: str, n: int, scope: tuple[str, str | None]) -> dict[str, Any]:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    label = "title" if kind == "knowledge" else "name"
    fields = {"content": f"{n}: {words}"} if kind != "tool" else {"description": f"{n}: {words}"}
    if kind == "guideline":
        fields["priority"] = rng.randrange(100)
    return {label: f"{kind}-{n}", "scopeType": scope[0], "scopeId": scope[1], "currentVersion": fields}


def fill(store: Path, entries: int, projects: int) -> tuple[list[str], str]:
    """A store with `entries` spread over `projects`, and one more project of 1,000 entries."""
    rng = random.Random(14)
    kinds = ("tool", "guideline", "knowledge")
    with Memory(store, sync=False) as memory:
        org = memory.call("memory_org", {"action": "create", "name": "org"}, actor="bench").output.reply["organization"]
        ids = [memory.call("memory_project", {"action": "create", "name": f"p{i}", "orgId": org["id"]},
                           actor="bench").output.reply["project"]["id"] for i in range(projects)]
        big = memory.call("memory_project", {"action": "create", "name": "big"}, actor="bench").output.reply
        scopes = [("project", ids[i % projects]) for i in range(entries)] + [("project", big["project"]["id"])] * 1000
        for start in range(0, len(scopes), 1000):
            chunk: dict[str, list[Any]] = {"tools": [], "guidelines": [], "knowledge": []}
            for n in range(start, min(start + 1000, len(scopes))):
                kind = kinds[n % 3]
                chunk["knowledge" if kind == "knowledge" else kind + "s"].append(entry(rng, kind, n, scopes[n]))
            memory.call("memory_import", {"action": "import", "content": json.dumps({"entries": chunk})},
                        actor="bench")
            print(f"\rfilled {min(start + 1000, len(scopes)):,} entries", end="", file=sys.stderr)
    print(file=sys.stderr)
    return ids, big["project"]["id"]


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e3, 2)


def in_process(store: Path, ids: list[str], big: str, count: int) -> dict[str, float]:
    rng = random.Random(1)
    with Memory(store, sync=False) as memory:
        started = time.perf_counter()
        memory.read("memory_health", {})
        fold = time.perf_counter() - started
        query, context = [], []
        for _ in range(count):
            arguments = {"action": "search", "scope": {"type": "project", "id": rng.choice(ids)},
                         "search": rng.choice(WORDS), "limit": 20}
            began = time.perf_counter()
            memory.read("memory_query", arguments)
            query.append(time.perf_counter() - began)
        for _ in range(max(20, count // 10)):
            began = time.perf_counter()
            memory.read("memory_query", {"action": "context", "scopeType": "project", "scopeId": big})
            context.append(time.perf_counter() - began)
    return {"fold_s": round(fold, 3), "query_ms": median_ms(query), "context_ms": median_ms(context)}


async def timed(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    began = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return time.perf_counter() - began


async def over_stdio(store: Path, ids: list[str], big: str, count: int) -> dict[str, float]:
    rng = random.Random(2)
    began = time.perf_counter()
    async with Client(linear_stdio_client(server(store)), read_timeout_seconds=600) as client:
        first = await timed(client, "memory_query", {"action": "search", "scope": {"type": "project", "id": ids[0]}})
        spawn = time.perf_counter() - began
        query = [await timed(client, "memory_query", {"action": "search", "limit": 20, "search": rng.choice(WORDS),
                                                      "scope": {"type": "project", "id": rng.choice(ids)}})
                 for _ in range(count)]
        context = [await timed(client, "memory_query", {"action": "context", "scopeType": "project",
                                                        "scopeId": big}) for _ in range(max(20, count // 10))]
        locks = []
        for n in range(count):
            locks.append(await timed(client, "memory_file_lock", {"action": "checkout", "file_path": f"/f/{n}.py",
                                                                  "agent_id": "bench"}))
            await timed(client, "memory_file_lock", {"action": "checkin", "file_path": f"/f/{n}.py",
                                                     "agent_id": "bench"})
    return {"first_call_after_spawn_ms": round((first) * 1e3, 1), "spawn_to_first_answer_s": round(spawn, 2),
            "query_ms": median_ms(query), "context_ms": median_ms(context), "checkout_ms": median_ms(locks)}


async def graph_writes(plain: Path, team: Path, count: int) -> dict[str, float]:
    """create_entities p50 on a store without and with the team memory, interleaved."""
    samples: dict[str, list[float]] = {"without": [], "with": []}
    async with Client(linear_stdio_client(server(plain, "chronograph"))) as a, \
            Client(linear_stdio_client(server(team, "chronograph"))) as b:
        for n in range(count):
            for label, client in (("without", a), ("with", b)):
                samples[label].append(await timed(client, "create_entities", {"entities": [
                    {"name": f"e{n}", "entityType": "t", "observations": ["o"]}]}))
    without, with_team = median_ms(samples["without"]), median_ms(samples["with"])
    return {"without_ms": without, "with_ms": with_team, "ratio": round(with_team / without, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--projects", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--json", type=Path, default=Path("bench_teams.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-teams-") as base:
        root = Path(base)
        began = time.perf_counter()
        ids, big = fill(root / "team", args.entries, args.projects)
        filled = time.perf_counter() - began
        local = in_process(root / "team", ids, big, args.samples)
        wire = asyncio.run(over_stdio(root / "team", ids, big, args.samples))
        writes = asyncio.run(graph_writes(root / "plain", root / "team", args.samples))
    rows = [
        ("fill (memory_import, 1,000 per call)", f"{filled:.1f} s", ""),
        ("fold of the team memory at first use", f"{local['fold_s']:.2f} s", ""),
        ("memory_query search p50 (in process)", f"{local['query_ms']} ms", "<= 10 ms"),
        ("memory_query search p50 (stdio)", f"{wire['query_ms']} ms", "<= 10 ms"),
        ("context of 1,000 entries p50 (in process)", f"{local['context_ms']} ms", "<= 50 ms"),
        ("context of 1,000 entries p50 (stdio)", f"{wire['context_ms']} ms", "<= 50 ms"),
        ("file lock checkout p50 (stdio)", f"{wire['checkout_ms']} ms", "<= 3 ms"),
        ("spawn to first query answer", f"{wire['spawn_to_first_answer_s']} s", ""),
        ("create_entities p50 with/without team memory", f"{writes['ratio']}", "~1.0"),
    ]
    print_table(f"team memory: {args.entries:,} entries in {args.projects:,} projects", rows)
    write_json(args.json, {"entries": args.entries, "projects": args.projects, "fill_s": round(filled, 1),
                           "in_process": local, "stdio": wire, "graph_writes": writes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
