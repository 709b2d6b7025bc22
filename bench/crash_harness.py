"""Crash harness: kill the server with SIGKILL under write load, again and again, and check.

    python bench/crash_harness.py [--kills 100] [--seed N] [--store DIR] [--json FILE]

Each round starts `python -m server` over stdio, writes through a real MCP client
(create_entities batches, add_observations, create_relations, all with requestIds)
and kills the server at a random moment. Then, with the server down, it checks that
every write the client saw acknowledged is in the store, that the write in flight is
wholly there or wholly absent, that the views equal a fresh fold of the log
(`replay --verify`), and that positions are gap-free; then it retries the write in
flight with the same requestId and checks it landed exactly once. Exit code 0 only if
nothing was lost, partial, mismatched or missing.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from chronograph.application import Memory
from chronograph.projections import verify
from chronograph.tools.common.parsing import Parser
from mcp import Client, StdioServerParameters
from report import print_table, write_json
from stdio_transport import linear_stdio_client

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Ledger:
    """What the client was told, and what was in flight when the server died."""

    entities: dict[str, list[str]] = field(default_factory=dict)
    """name -> observations acknowledged"""
    relations: set[tuple[str, str]] = field(default_factory=set)
    calls: int = 0
    in_flight: tuple[str, dict[str, Any]] | None = None
    serial: int = 0


@dataclass
class Figures:
    kills: int = 0
    acknowledged_calls: int = 0
    acknowledged_entities: int = 0
    lost: int = 0
    partial: int = 0
    mismatches: int = 0
    gaps: int = 0
    retries: int = 0
    duplicates: int = 0
    problems: list[str] = field(default_factory=list)


def next_call(ledger: Ledger, rng: random.Random) -> tuple[str, dict[str, Any]]:
    ledger.serial += 1
    request = f"r{ledger.serial}"
    names = list(ledger.entities)
    roll = rng.random()
    if roll < 0.5 or len(names) < 2:
        batch = [{"name": f"e{ledger.serial}-{i}", "entityType": "thing",
                  "observations": [f"born in call {ledger.serial}", "second"]} for i in range(rng.randint(1, 20))]
        return "create_entities", {"entities": batch, "requestId": request}
    if roll < 0.8:
        return "add_observations", {"observations": [
            {"entityName": rng.choice(names), "contents": [f"note {ledger.serial}"]}], "requestId": request}
    pairs = [(rng.choice(names), rng.choice(names)) for _ in range(rng.randint(1, 10))]
    return "create_relations", {"relations": [{"from": a, "to": b, "relationType": "links"} for a, b in pairs],
                                "requestId": request}


def acknowledge(ledger: Ledger, tool: str, arguments: dict[str, Any]) -> None:
    ledger.calls += 1
    if tool == "create_entities":
        for item in arguments["entities"]:
            ledger.entities[item["name"]] = list(item["observations"])
    elif tool == "add_observations":
        for item in arguments["observations"]:
            ledger.entities[item["entityName"]] += item["contents"]
    else:
        ledger.relations.update((r["from"], r["to"]) for r in arguments["relations"])


async def round_(params: StdioServerParameters, ledger: Ledger, rng: random.Random) -> None:
    """Write until the server is killed under us, at a random moment after its first answer."""
    processes: list[Process] = []
    answered = anyio.Event()

    async def killer() -> None:
        await answered.wait()
        await anyio.sleep(rng.uniform(0.0, 0.3))
        os.kill(processes[0].pid, signal.SIGKILL)

    async def writer(client: Client) -> None:
        while True:
            tool, arguments = next_call(ledger, rng)
            ledger.in_flight = (tool, arguments)
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise RuntimeError(f"{tool} failed: {result.content}")
            acknowledge(ledger, tool, arguments)
            ledger.in_flight = None
            answered.set()

    try:
        async with Client(linear_stdio_client(params, processes.append), read_timeout_seconds=30) as client:
            async with anyio.create_task_group() as group:
                group.start_soon(killer)
                await writer(client)
    except Exception:  # the connection died with the server, as it should
        pass
    if processes:
        await processes[0].wait()


def check(store: Path, ledger: Ledger, figures: Figures) -> None:
    """Check the store after a kill, then retry the write that was in flight."""
    with Memory(store) as memory:
        with memory.views.read() as graph:
            for name, observations in ledger.entities.items():
                record = graph.entity("default", name)
                if record is None or any(o not in record.observations for o in observations):
                    figures.lost += 1
                    figures.problems.append(f"acknowledged {name} is missing or incomplete")
                elif len(set(record.observations)) != len(record.observations):
                    figures.duplicates += 1
            for source, target in ledger.relations:
                if graph.relation("default", source, "links", target) is None:
                    figures.lost += 1
                    figures.problems.append(f"acknowledged relation {source}->{target} is missing")
            in_flight = ledger.in_flight
            if in_flight is not None and in_flight[0] == "create_entities":
                present = sum(graph.entity("default", e["name"]) is not None for e in in_flight[1]["entities"])
                if present not in (0, len(in_flight[1]["entities"])):
                    figures.partial += 1
                    figures.problems.append(f"a batch of {len(in_flight[1]['entities'])} is {present} present")
        differences = verify(memory.views)
        figures.mismatches += len(differences)
        figures.problems += differences
        positions = [e.position for e in memory.log.read_all()]
        if positions != list(range(1, len(positions) + 1)):
            figures.gaps += 1
            figures.problems.append("the log has gaps")
        if in_flight is not None:  # the same requestId: applied once, whether it landed or not
            memory.write(in_flight[0], in_flight[1], actor="crash-test-retry")
            acknowledge(ledger, *in_flight)
            figures.retries += 1
            ledger.in_flight = None


def run(args: argparse.Namespace) -> Figures:
    rng = random.Random(args.seed)
    figures = Figures()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(args.store) if args.store else Path(tmp) / "store"
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "chronograph", "--store", str(store)], cwd=str(ROOT),
            env={"PYTHONPATH": str(ROOT)},
        )
        ledger = Ledger()
        for kill in range(args.kills):
            anyio.run(round_, params, ledger, rng)
            figures.kills += 1
            check(store, ledger, figures)
            if args.verbose:
                print(f"kill {kill + 1}: {ledger.calls} calls acknowledged, "
                      f"{len(ledger.entities)} entities", file=sys.stderr)
        figures.acknowledged_calls = ledger.calls
        figures.acknowledged_entities = len(ledger.entities)
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the harness, print its table; 0 only if every check held."""
    parser = Parser(prog="crash_harness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--store", help="store directory (default: a temporary one)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    figures = run(args)
    print_table("crash test (SIGKILL under write load)", [
        ("kills", str(figures.kills), ""),
        ("acknowledged calls", f"{figures.acknowledged_calls:,}", ""),
        ("acknowledged entities", f"{figures.acknowledged_entities:,}", ""),
        ("retried in-flight calls (same requestId)", str(figures.retries), ""),
        ("acknowledged writes lost", str(figures.lost), "0"),
        ("batches partly visible", str(figures.partial), "0"),
        ("view/log mismatches", str(figures.mismatches), "0"),
        ("logs with gaps", str(figures.gaps), "0"),
        ("duplicated observations", str(figures.duplicates), "0"),
    ])
    for problem in figures.problems[:20]:
        print(f"  {problem}")
    if args.json:
        write_json(args.json, {k: v for k, v in figures.__dict__.items() if k != "problems"})
    failed = figures.lost or figures.partial or figures.mismatches or figures.gaps or figures.duplicates
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
