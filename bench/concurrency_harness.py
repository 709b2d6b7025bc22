"""Concurrency harness: many server processes on one store, racing on shared entities.

    python bench/concurrency_harness.py [--servers 8] [--writes 1000] [--races 50] [--json FILE]

Each of --servers server processes (over stdio, each with its own MCP client) makes
--writes writes of its own; interleaved, every client joins --races races: all read a
shared entity's version and write to it with that expectedVersion at once. Checks:
no acknowledged write is lost, every race has exactly one winner, every loser got the
conflict error naming the current version, and the views equal a fresh fold of the log.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from chronograph.application import Memory
from chronograph.projections import verify
from chronograph.tools.common.parsing import Parser
from mcp import Client, StdioServerParameters
from report import print_table, write_json
from stdio_transport import linear_stdio_client

ROOT = Path(__file__).resolve().parent.parent
CONFLICT = re.compile(r"is at version (\d+), not the expectedVersion (\d+)")


@dataclass
class Figures:
    servers: int = 0
    writes: int = 0
    acknowledged: int = 0
    lost: int = 0
    races: int = 0
    races_with_one_winner: int = 0
    conflicts: int = 0
    bad_conflicts: int = 0
    mismatches: int = 0
    problems: list[str] = field(default_factory=list)


async def client_task(params: StdioServerParameters, index: int, writes: int, races: int,
                      barrier: list[anyio.Event], outcomes: list[list[Any]], acked: list[str]) -> None:
    async with Client(linear_stdio_client(params), read_timeout_seconds=120) as client:
        race_every = max(1, writes // max(races, 1))
        race = 0
        for i in range(writes):
            name = f"s{index}-{i}"
            result = await client.call_tool("create_entities", {"entities": [
                {"name": name, "entityType": "own", "observations": [f"by {index}"]}]})
            if result.is_error:
                raise RuntimeError(result.content)
            acked.append(name)
            if i % race_every == race_every - 1 and race < races:
                await barrier[2 * race].wait()
                opened = await client.call_tool("open_nodes", {"names": [f"shared-{race}"]})
                version = opened.structured_content["entities"][0]["version"]  # type: ignore[index]
                await barrier[2 * race + 1].wait()  # everyone has read before anyone writes
                tried = await client.call_tool("add_observations", {"observations": [{
                    "entityName": f"shared-{race}", "contents": [f"won by {index}"], "expectedVersion": version}]})
                text = tried.content[0].text  # type: ignore[union-attr]
                outcomes[race].append((index, version, tried.is_error, text))
                race += 1


async def run_clients(params: StdioServerParameters, servers: int, writes: int, races: int) -> tuple[list, list]:  # type: ignore[type-arg]
    outcomes: list[list[Any]] = [[] for _ in range(races)]
    acked: list[str] = []
    barriers = [anyio.Event() for _ in range(2 * races)]
    arrived = [0] * (2 * races)

    class Barrier:
        def __init__(self, race: int) -> None:
            self.race = race

        async def wait(self) -> None:
            arrived[self.race] += 1
            if arrived[self.race] == servers:
                barriers[self.race].set()
            await barriers[self.race].wait()

    async with anyio.create_task_group() as group:
        for index in range(servers):
            group.start_soon(client_task, params, index, writes, races,
                             [Barrier(r) for r in range(2 * races)], outcomes, acked)
    return outcomes, acked


def run(servers: int, writes: int, races: int, store: Path) -> Figures:
    figures = Figures(servers=servers, writes=servers * writes, races=races)
    with Memory(store) as memory:  # the shared entities, before the servers start
        memory.write("create_entities", {"entities": [
            {"name": f"shared-{r}", "entityType": "shared", "observations": []} for r in range(races)]},
            actor="setup")
    params = StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", str(store)],
                                   cwd=str(ROOT), env={"PYTHONPATH": str(ROOT)})
    outcomes, acked = anyio.run(run_clients, params, servers, writes, races)
    figures.acknowledged = len(acked)
    with Memory(store) as memory:
        with memory.views.read() as graph:
            figures.lost = sum(graph.entity("default", name) is None for name in acked)
            for race, attempts in enumerate(outcomes):
                winners = [a for a in attempts if not a[2]]
                figures.races_with_one_winner += len(winners) == 1
                record = graph.entity("default", f"shared-{race}")
                for _, version, failed, text in attempts:
                    if failed:
                        figures.conflicts += 1
                        match = CONFLICT.search(text)
                        if not match or int(match.group(1)) != version + 1:
                            figures.bad_conflicts += 1
                            figures.problems.append(f"race {race}: unexpected error {text[:200]}")
                if winners and record is not None and f"won by {winners[0][0]}" not in record.observations:
                    figures.lost += 1
        differences = verify(memory.views)
        figures.mismatches = len(differences)
        figures.problems += differences
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the harness, print its table; 0 only if every check held."""
    parser = Parser(prog="concurrency_harness", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=1000, help="writes per server")
    parser.add_argument("--races", type=int, default=50)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        figures = run(args.servers, args.writes, args.races, Path(tmp) / "store")
    print_table("concurrency (server processes on one store)", [
        ("server processes", str(figures.servers), ""),
        ("writes acknowledged", f"{figures.acknowledged:,} of {figures.writes:,}", ""),
        ("acknowledged writes lost", str(figures.lost), "0"),
        ("races with exactly one winner", f"{figures.races_with_one_winner} of {figures.races}", "all"),
        ("losers told the current version", f"{figures.conflicts - figures.bad_conflicts} of {figures.conflicts}",
         "all"),
        ("view/log mismatches", str(figures.mismatches), "0"),
    ])
    for problem in figures.problems[:20]:
        print(f"  {problem}")
    if args.json:
        write_json(args.json, {k: v for k, v in figures.__dict__.items() if k != "problems"})
    ok = (figures.acknowledged == figures.writes and not figures.lost and figures.races_with_one_winner == figures.races
          and not figures.bad_conflicts and not figures.mismatches)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
