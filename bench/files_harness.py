"""File commands aimed at a live server's store (issue 27.3, 27.4): what the server acknowledged,
and what the store holds afterwards.

    python bench/files_harness.py [--writes 20] [--json FILE]

For each fault, a stdio server on a fresh store acknowledges --writes creates, the fault
runs beside it, and the server (and, for the lock file, a second server started after the
fault) acknowledges --writes more each; then the store is opened afresh and every
acknowledged entity looked up. Faults: `backup -o STORE/data.mdb`, `backup -o STORE/lock.mdb`
(then a second writer), `restore --replace` over the store. Exit code 0 only if every fault
was refused and every acknowledged write was found.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio
from chronograph.application import Memory
from chronograph.tools.common.parsing import Parser
from mcp import Client, StdioServerParameters
from report import print_table, write_json
from stdio_transport import linear_stdio_client

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "CHRONOGRAPH_EMBEDDINGS": "off"}
FAULTS = ("backup -o STORE/data.mdb", "backup -o STORE/lock.mdb", "restore --replace STORE")


@dataclass
class Outcome:
    fault: str
    refused: bool = False
    attempted: int = 0
    acknowledged: int = 0
    found: int = 0
    message: str = ""


def command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronograph", *args], capture_output=True, text=True, env=ENV,
                          cwd=ROOT, timeout=300, check=False)


async def writes(client: Client, prefix: str, n: int, outcome: Outcome, acked: list[str]) -> None:
    for i in range(n):
        outcome.attempted += 1
        try:
            result = await client.call_tool("create_entities", {"entities": [
                {"name": f"{prefix}{i}", "entityType": "t", "observations": []}]})
        except Exception:  # noqa: BLE001 (a server that died acknowledges nothing more)
            return
        if not result.is_error:
            acked.append(f"{prefix}{i}")


async def attack(fault: str, store: Path, spare: Path, n: int) -> Outcome:
    outcome, acked = Outcome(fault), []
    params = StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", str(store)],
                                   env=ENV, cwd=str(ROOT))
    try:
        async with Client(linear_stdio_client(params), read_timeout_seconds=60) as first:
            await writes(first, "before-", n, outcome, acked)
            if fault.startswith("backup"):
                done = command("backup", "--store", str(store), "-o", str(store / fault.split("/")[-1]))
            else:
                done = command("restore", str(spare), "--store", str(store), "--replace")
            outcome.refused = done.returncode != 0
            outcome.message = (done.stderr.strip().splitlines() or [""])[-1][:120]
            await writes(first, "after-", n, outcome, acked)
            if fault.endswith("lock.mdb"):  # a second writer, started after the lock file was replaced
                async with Client(linear_stdio_client(params), read_timeout_seconds=60) as second:
                    async with anyio.create_task_group() as group:
                        group.start_soon(writes, first, "first-", n, outcome, acked)
                        group.start_soon(writes, second, "second-", n, outcome, acked)
    except Exception as error:  # noqa: BLE001 (the server died: what it acknowledged is counted below)
        outcome.message += f" / the server failed: {type(error).__name__}"
    outcome.acknowledged = len(acked)
    try:
        with Memory(store, sync=False) as memory, memory.views.read() as graph:
            outcome.found = sum(graph.entity("default", name) is not None for name in acked)
    except Exception as error:  # noqa: BLE001 (a destroyed store holds nothing)
        outcome.message += f" / the store cannot be opened: {type(error).__name__}"
    return outcome


def run(writes_each: int) -> list[Outcome]:
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="files-harness-") as tmp:
        spare_store, spare = Path(tmp) / "spare", Path(tmp) / "spare.chronograph"
        with Memory(spare_store, sync=False) as memory:
            memory.write("create_entities", {"entities": [{"name": "Spare", "entityType": "t", "observations": []}]},
                         actor="harness")
        command("backup", "--store", str(spare_store), "-o", str(spare))
        for index, fault in enumerate(FAULTS):
            outcomes.append(anyio.run(attack, fault, Path(tmp) / f"store-{index}", spare, writes_each))
    return outcomes


def held(outcome: Outcome) -> bool:
    return outcome.refused and outcome.found == outcome.acknowledged == outcome.attempted


def main(argv: list[str] | None = None) -> int:
    """Run every fault; print the table; 0 only if every one was refused and nothing was lost."""
    parser = Parser(prog="files_harness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=20, help="writes per phase")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    outcomes = run(args.writes)
    print_table("file commands aimed at a live server's store", [
        (o.fault, f"{'refused' if o.refused else 'RAN'}; {o.attempted} attempted, {o.acknowledged} acknowledged, "
                  f"{o.found} found", "refused; all found") for o in outcomes])
    for outcome in outcomes:
        print(f"  {outcome.fault}: {outcome.message}")
    if args.json:
        write_json(args.json, {"faults": [o.__dict__ for o in outcomes]})
    return 0 if all(held(o) for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
