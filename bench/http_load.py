"""MCP over HTTP under load, side by side with another Chronograph (run through http_flood.py).

    python bench/http_flood.py load  [--entities 10000] [--levels 1,10,50,200] [--seconds 20] [--baseline CMD]
    python bench/http_flood.py long  [--entities 10000] [--long read_graph|search|refused]
                                     [--short open_nodes|page|search] [--seconds 20] [--warm] [...]
    python bench/http_flood.py admit [--openings 200] [--quota 100] [...]

Each builds a store of --entities entities (3 observations and about 2 relations each, the
benchmarks' graph shape) once, copies it for each server, and starts `chronograph serve
--http` (this checkout, and --baseline CMD such as "/work/before/.venv/bin/python -m
chronograph") one after the other on the same machine in the same run.

- load: at each level, that many sessions, each on its own kept-alive connection, call
  tools back to back for --seconds: 80% reads (open_nodes of 2 entities, search_nodes of
  a rare word), 20% writes (create_entities, add_observations). Prints calls/s, the ratio
  to one session, p50/p99 of any call; checks every acknowledged write is found after.
- long: one session loops a long call (a whole read_graph, a search matching most entities,
  an export of the whole graph, or read_graph {} refused for its size) while 4 others loop a
  short one (--short: open_nodes of one entity, a read_graph page of 10, or a search of a rare
  word); prints the 4's p50/p99 alone and beside the long call, and the server's RSS.
- --keep DIR keeps the built store (DIR/store-N) and copies it from there in later runs.
- admit: --openings initializes at once from one address with --sessions-per-address
  --quota; prints how many were answered 200 and 429 and how many sessions are alive after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from formats import shared
from mcp_http import Refused, Session
from report import print_table, write_json
from workload import Workload

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def build_store(path: Path, entities: int, *, for_baseline: bool = False) -> Workload:
    """A store of `entities` entities (imported from an official-format file); `for_baseline`: in
    a format that a baseline from before store format 3 opens too."""
    if for_baseline:
        shared(path)
    workload = Workload(seed=5)
    lines = []
    for i in range(entities):
        _, event = workload.entity(i, observations=3)
        lines.append(json.dumps({"type": "entity", "name": event.name, "entityType": event.entity_type,
                                 "observations": list(event.observations)}))
    rng = random.Random(3)
    for i in range(entities):
        for _ in range(2):
            lines.append(json.dumps({"type": "relation", "from": workload.name(i),
                                     "to": workload.name(rng.randrange(entities)), "relationType": "knows"}))
    source = path.parent / "graph.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "chronograph", "import", str(source), "--store", str(path)],
                   check=True, stdout=subprocess.DEVNULL)
    return workload


class Server:
    """`CMD serve --http` on a store of its own, up once /health answers."""

    def __init__(self, command: list[str], store: Path, *extra: str) -> None:
        self.port = free_port()
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "CHRONOGRAPH_TOKEN")}
        self.process = subprocess.Popen(
            [*command, "serve", "--http", "--port", str(self.port), "--store", str(store), "--embeddings", "off",
             *extra], cwd=store.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://{HOST}:{self.port}/health", timeout=1) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"{command} did not come up")
            time.sleep(0.1)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_s(self) -> float:
        """CPU seconds the server has used (all its threads)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def quantile(samples: list[float], q: float) -> float:
    if len(samples) < 2:
        return samples[0] if samples else float("nan")
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q * 100) - 1]


async def opened(port: int, count: int, name: str = "bench") -> list[Session]:
    sessions = [Session(HOST, port, f"{name}-{i}") for i in range(count)]
    for start in range(0, count, 50):  # not a burst: that is the admit bench
        await asyncio.gather(*(session.initialize() for session in sessions[start:start + 50]))
    return sessions


async def mixed(session: Session, workload: Workload, entities: int, until: float, seen: dict[str, Any],
                rng: random.Random) -> None:
    """80% reads, 20% writes, back to back until `until`."""
    while time.perf_counter() < until:
        roll = rng.random()
        if roll < 0.5:
            tool, arguments = "open_nodes", {"names": [workload.name(rng.randrange(entities)) for _ in range(2)]}
        elif roll < 0.8:
            rare = workload.rare_term(rng.randrange(max(1, entities // 1000)) * 1000)
            tool, arguments = "search_nodes", {"query": rare}
        elif roll < 0.9:
            name = f"{session.name} new {seen['made']}"
            seen["made"] += 1
            tool, arguments = "create_entities", {"entities": [{"name": name, "entityType": "t", "observations": []}]}
        else:
            name = workload.name(rng.randrange(entities))
            text = f"{session.name} saw {seen['noted']}"
            seen["noted"] += 1
            tool, arguments = "add_observations", {"observations": [{"entityName": name, "contents": [text]}]}
        started = time.perf_counter()
        try:
            result = await session.call(tool, arguments)
        except (Refused, OSError, asyncio.IncompleteReadError):
            seen["failed"] += 1
            continue
        seen["latencies"].append(time.perf_counter() - started)
        if result.get("isError"):
            seen["failed"] += 1
        elif tool == "create_entities":
            seen["created"].append(arguments["entities"][0]["name"])  # type: ignore[index]
        elif tool == "add_observations":
            seen["observed"].append((arguments["observations"][0]["entityName"],  # type: ignore[index]
                                     arguments["observations"][0]["contents"][0]))  # type: ignore[index]


async def load_level(port: int, workload: Workload, entities: int, count: int, seconds: float) -> dict[str, Any]:
    sessions = await opened(port, count, f"s{count}")
    seen: dict[str, Any] = {"latencies": [], "failed": 0, "created": [], "observed": [], "made": 0, "noted": 0}
    started = time.perf_counter()
    await asyncio.gather(*(mixed(s, workload, entities, started + seconds, seen, random.Random(i))
                           for i, s in enumerate(sessions)))
    took = time.perf_counter() - started
    checker = sessions[0]
    lost = 0
    for start in range(0, len(seen["created"]), 200):
        names = seen["created"][start:start + 200]
        found = (await checker.call("open_nodes", {"names": names}))["structuredContent"]["entities"]
        lost += len(names) - len(found)
    by_entity: dict[str, set[str]] = {}
    for name, text in seen["observed"]:
        by_entity.setdefault(name, set()).add(text)
    names = sorted(by_entity)
    for start in range(0, len(names), 200):
        found = (await checker.call("open_nodes", {"names": names[start:start + 200]}))["structuredContent"]
        for entity in found["entities"]:
            lost += len(by_entity[entity["name"]] - set(entity["observations"]))
    for session in sessions:
        session.close()
    latencies = seen["latencies"]
    return {"sessions": count, "calls": len(latencies), "seconds": took, "calls_per_s": len(latencies) / took,
            "p50_ms": quantile(latencies, 0.5) * 1e3, "p99_ms": quantile(latencies, 0.99) * 1e3,
            "failed": seen["failed"], "acked_writes": len(seen["created"]) + len(seen["observed"]), "lost": lost}


LONG = {
    "read_graph": ("read_graph", {"limit": 4000}),
    "export": ("export_graph", {"format": "jsonl"}),
    "search": ("search_nodes", {"query": "ka", "limit": 1000}),
    "refused": ("read_graph", {}),
}
"""The long calls: a page of 4,000 entities, the whole graph as JSONL, a search most entities
match (its first 1,000), and the whole graph asked for at once (refused at 10k entities: over the reply limit)."""


async def looping(session: Session, tool: str, arguments: dict[str, Any], until: float,
                  latencies: list[float], errors: list[int]) -> None:
    while time.perf_counter() < until:
        started = time.perf_counter()
        try:
            result = await session.call(tool, arguments)
        except (Refused, OSError, asyncio.IncompleteReadError):
            errors.append(1)
            continue
        latencies.append(time.perf_counter() - started)
        if result.get("isError"):
            errors.append(1)


def short_call(kind: str, workload: Workload, entities: int, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """The call a short client loops (`--short`)."""
    if kind == "page":
        return "read_graph", {"limit": 10, "offset": rng.randrange(max(1, entities - 10))}
    if kind == "search":
        return "search_nodes", {"query": workload.rare_term(rng.randrange(max(1, entities // 1000)) * 1000)}
    return "open_nodes", {"names": [workload.name(rng.randrange(entities))]}


async def short_calls(port: int, workload: Workload, entities: int, seconds: float, long: str | None,
                      short: str = "open_nodes") -> dict[str, Any]:
    shorts = await opened(port, 4, "short")
    longs = await opened(port, 1, "long") if long else []
    until = time.perf_counter() + seconds
    quick: list[float] = []
    slow: list[float] = []
    errors: list[int] = []
    slow_errors: list[int] = []
    rng = random.Random(1)
    work = [looping(s, *short_call(short, workload, entities, rng), until, quick, errors) for s in shorts]
    if long:
        tool, arguments = LONG[long]
        work.append(looping(longs[0], tool, arguments, until, slow, slow_errors))
    await asyncio.gather(*work)
    for session in shorts + longs:
        session.close()
    return {"short": short, "open_nodes_calls": len(quick), "open_nodes_p50_ms": quantile(quick, 0.5) * 1e3,
            "open_nodes_p99_ms": quantile(quick, 0.99) * 1e3, "open_nodes_failed": len(errors),
            "long_calls": len(slow), "long_refused": len(slow_errors),
            "long_p50_ms": quantile(slow, 0.5) * 1e3 if slow else None}


async def warm(port: int, long: str) -> float:
    """One long call on a session of its own (what a server loads once, such as a workspace's word
    index, is loaded before the phases); its seconds."""
    [session] = await opened(port, 1, "warm")
    tool, arguments = LONG[long]
    started = time.perf_counter()
    await session.call(tool, arguments)
    session.close()
    return time.perf_counter() - started


async def admit(port: int, openings: int) -> dict[str, Any]:
    sessions = [Session(HOST, port, f"o{i}") for i in range(openings)]
    for session in sessions:
        await session.connection.open()  # connected first: the initializes then arrive together

    async def one(session: Session) -> int:
        try:
            await session.initialize()
        except Refused as refused:
            return refused.status
        return 200

    statuses = await asyncio.gather(*(one(s) for s in sessions))
    admitted = [s for s, status in zip(sessions, statuses, strict=True) if status == 200]
    alive = 0
    for session in admitted:
        alive += await session.alive()
    for session in sessions:
        session.close()
    return {"openings": openings, "answered_200": statuses.count(200), "answered_429": statuses.count(429),
            "other": len(statuses) - statuses.count(200) - statuses.count(429), "alive_after": alive}


def targets(baseline: str | None) -> list[tuple[str, list[str]]]:
    ours = ("this checkout", [sys.executable, "-m", "chronograph"])
    return [ours, ("baseline", shlex.split(baseline))] if baseline else [ours]


def main(argv: list[str] | None = None) -> int:
    """Run one bench; print its table and write its JSON."""
    parser = argparse.ArgumentParser(prog="http_flood.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["load", "long", "admit"])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--levels", default="1,10,50,200")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--long", choices=sorted(LONG), default="read_graph")
    parser.add_argument("--short", choices=["open_nodes", "page", "search"], default="open_nodes",
                        help="long: what the 4 short clients loop")
    parser.add_argument("--openings", type=int, default=200)
    parser.add_argument("--quota", type=int, default=100)
    parser.add_argument("--baseline", metavar="CMD", help='another Chronograph, e.g. "/work/before/.venv/bin/python '
                                                          '-m chronograph"')
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--warm", action="store_true",
                        help="long: make one long call before the phases, so that they measure a server that has "
                             "loaded what the call loads once (its time is printed apart)")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="keep the built store in DIR and use it again in later runs of the same size")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"mode": args.mode, "entities": args.entities, "seconds": args.seconds}
    with tempfile.TemporaryDirectory(prefix="bench-http-") as base:
        root = Path(base)
        workload = Workload(seed=5)
        if args.mode != "admit":
            (root / "built").mkdir()
            kept = args.keep / f"store-{args.entities}" if args.keep else None
            if kept is not None and kept.exists():
                shutil.copytree(kept, root / "built" / "store")
            else:
                print(f"building a store of {args.entities:,} entities ...", file=sys.stderr)
                build_store(root / "built" / "store", args.entities, for_baseline=bool(args.baseline))
                if kept is not None:
                    shutil.copytree(root / "built" / "store", kept)
        servers: dict[str, Server] = {}
        try:
            for label, command in targets(args.baseline):  # all up at once; measured in turn, level by level
                place = root / label.replace(" ", "-")
                place.mkdir()
                if args.mode != "admit":
                    shutil.copytree(root / "built" / "store", place / "store")
                extra = ["--sessions-per-address", str(args.quota if args.mode == "admit" else 1000)]
                servers[label] = Server(command, place / "store", *extra)
            if args.mode == "load":
                for label in servers:
                    results[label] = {"levels": []}
                for level in [int(x) for x in args.levels.split(",")]:
                    for label, server in servers.items():
                        print(f"[{label}] {level} session(s) for {args.seconds:.0f} s ...", file=sys.stderr)
                        cpu = server.cpu_s()
                        figures = asyncio.run(load_level(server.port, workload, args.entities, level, args.seconds))
                        figures["server_cpu_ms_per_call"] = (server.cpu_s() - cpu) * 1e3 / max(1, figures["calls"])
                        results[label]["levels"].append(figures)
                for label, server in servers.items():
                    results[label]["rss_mb"] = server.rss_mb()
            elif args.mode == "long":
                for label, server in servers.items():
                    results[label] = {"rss_start_mb": server.rss_mb()}
                    if args.warm:
                        print(f"[{label}] one {args.long} call first ...", file=sys.stderr)
                        results[label]["warm_s"] = asyncio.run(warm(server.port, args.long))
                for phase, long in (("alone", None), ("beside", args.long)):
                    for label, server in servers.items():
                        print(f"[{label}] 4 clients {phase} for {args.seconds:.0f} s ...", file=sys.stderr)
                        results[label][phase] = asyncio.run(
                            short_calls(server.port, workload, args.entities, args.seconds, long, args.short))
                time.sleep(2)
                for label, server in servers.items():
                    results[label]["rss_end_mb"] = server.rss_mb()
            else:
                for label, server in servers.items():
                    results[label] = asyncio.run(admit(server.port, args.openings))
        finally:
            for server in servers.values():
                server.stop()
    print_tables(args, results)
    write_json(args.json or Path(f"bench-http-{args.mode}.json"), results)
    return 0


def print_tables(args: argparse.Namespace, results: dict[str, Any]) -> None:
    labels = [label for label, _ in targets(args.baseline)]
    rows: list[tuple[str, str, str]] = []
    if args.mode == "load":
        for label in labels:
            levels = results[label]["levels"]
            one = levels[0]["calls_per_s"]
            for level in levels:
                rows.append((f"{label}: {level['sessions']} session(s)",
                             f"{level['calls_per_s']:,.0f} calls/s ({level['calls_per_s'] / one:.2f}x), "
                             f"p50 {level['p50_ms']:.1f} / p99 {level['p99_ms']:.1f} ms, "
                             f"server CPU {level['server_cpu_ms_per_call']:.2f} ms/call, "
                             f"{level['failed']} failed, {level['lost']} of {level['acked_writes']} writes lost",
                             ">= 1x one session at 50; p50 <= 3 ms at 1" if level["sessions"] in (1, 50) else ""))
        title = f"MCP over HTTP, kept-alive sessions, 80% reads / 20% writes, {args.entities:,} entities, " \
                f"{args.seconds:.0f} s per level"
    elif args.mode == "long":
        for label in labels:
            figures = results[label]
            for phase in ("alone", "beside"):
                seen = figures[phase]
                during = phase if phase == "alone" else f"beside {args.long}"
                rows.append((f"{label}: 4 clients' {args.short}, {during}",
                             f"{seen['open_nodes_calls']:,} calls, p50 {seen['open_nodes_p50_ms']:.1f} / "
                             f"p99 {seen['open_nodes_p99_ms']:.1f} ms",
                             "p99 <= 50 ms" if phase == "beside" else ""))
            seen = figures["beside"]
            rows.append((f"{label}: the long client", f"{seen['long_calls']:,} calls ({seen['long_refused']} refused), "
                         f"p50 {seen['long_p50_ms'] or 0:,.0f} ms", ""))
            if "warm_s" in figures:
                rows.append((f"{label}: the first {args.long} call, before the phases", f"{figures['warm_s']:,.2f} s",
                             ""))
            rows.append((f"{label}: server RSS start -> end", f"{figures['rss_start_mb']:,.0f} -> "
                         f"{figures['rss_end_mb']:,.0f} MB", ""))
        title = f"one long call ({args.long}) beside 4 clients' {args.short}, {args.entities:,} entities, " \
                f"{args.seconds:.0f} s each"
    else:
        for label in labels:
            figures = results[label]
            rows.append((f"{label}: {figures['openings']} initializes at once",
                         f"{figures['answered_200']} answered 200, {figures['answered_429']} 429, "
                         f"{figures['other']} other; {figures['alive_after']} alive after",
                         f"alive <= {args.quota}"))
        title = f"{args.openings} concurrent initializes from one address, --sessions-per-address {args.quota}"
    print_table(title, rows)


if __name__ == "__main__":
    raise SystemExit(main())
