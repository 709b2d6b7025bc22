"""Benchmark the surfaces of issue 15: what each profile's tools/list costs, and each
surface's entity write next to create_entities, over stdio, interleaved in one run.

    python bench/bench_surfaces.py [--writes 300] [--json FILE]

Each profile gets its own server process and store; one round writes one new entity
through every surface in turn, so the machine's noise falls on all of them alike.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from report import print_table, write_json
from stdio_transport import linear_stdio_client

ROOT = Path(__file__).resolve().parents[1]

WRITES: dict[str, tuple[str, Callable[[int, dict[str, Any]], dict[str, Any]]]] = {
    "chronograph": ("create_entities", lambda n, _: {"entities": [
        {"name": f"e{n}", "entityType": "t", "observations": ["o"]}]}),
    "workspace": ("upsert_entity", lambda n, _: {"workspaceName": "w", "name": f"e{n}", "entityType": "t",
                                                 "observations": ["o"]}),
    "kuzu": ("create_entity", lambda n, _: {"database": "memory", "name": f"e{n}", "entity_type": "t",
                                            "observations": ["o"]}),
    "n2n": ("n2n_add_entities", lambda n, extra: {"projectPath": extra["project"], "entities": [
        {"name": f"e{n}", "entityType": "t", "observations": ["o"]}]}),
    "agent-memory": ("memory_knowledge", lambda n, _: {"action": "add", "scopeType": "global", "title": f"e{n}",
                                                       "content": "o"}),
}


def server(store: Path, profile: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", str(store),
                                                              "--profile", profile], cwd=str(ROOT))


async def measure(base: Path, writes: int) -> tuple[dict[str, int], dict[str, float]]:
    project = base / "project"
    (project / ".mcp").mkdir(parents=True)
    (project / ".git").mkdir()
    extra = {"project": str(project)}
    sizes: dict[str, int] = {}
    samples: dict[str, list[float]] = {profile: [] for profile in WRITES}
    async with AsyncExitStack() as stack:
        clients = {}
        for profile in (*WRITES, "official", "full"):
            client = await stack.enter_async_context(Client(linear_stdio_client(server(base / profile, profile))))
            sizes[profile] = len((await client.list_tools()).model_dump_json(by_alias=True, exclude_none=True))
            if profile in WRITES:
                clients[profile] = client
        for n in range(writes):
            for profile, (tool, arguments) in WRITES.items():
                began = time.perf_counter()
                result = await clients[profile].call_tool(tool, arguments(n, extra))
                samples[profile].append(time.perf_counter() - began)
                assert not result.is_error, result.content
    return sizes, {profile: statistics.median(values) * 1e3 for profile, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--json", type=Path, default=Path("bench-surfaces.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-surfaces-") as base:
        sizes, p50 = asyncio.run(measure(Path(base), args.writes))
    own = p50["chronograph"]
    rows = [(f"tools/list bytes, --profile {profile}", f"{size:,}", "") for profile, size in sizes.items()]
    rows += [(f"{WRITES[profile][0]} p50 (--profile {profile})", f"{ms:.2f} ms  {ms / own:.2f}x",
              "<= 1.2x create_entities" if profile != "chronograph" else "")
             for profile, ms in p50.items()]
    print_table(f"surfaces: {args.writes} durable writes each, interleaved", rows)
    write_json(args.json, {"writes": args.writes, "tools_list_bytes": sizes,
                           "write_p50_ms": {k: round(v, 3) for k, v in p50.items()},
                           "write_ratio": {k: round(v / own, 3) for k, v in p50.items()}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
