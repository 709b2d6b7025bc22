"""Cold starts, resident memory by stage and exit times, with a raw JSON-RPC client over stdio.

    python bench/bench_coldstart.py [--size 50000] [--spawns 5] [--official] [--baseline PYTHON]
                                    [--rss] [--exit] [--json FILE]

One graph of `--size` entities (3 observations, 2 relations each) is written as the official
server's JSONL file and imported with `chronograph import` into a store per Chronograph (this
checkout, and `--baseline`, another checkout's python, e.g. /work/before/.venv/bin/python);
the official server (`--official`, npm) reads the same file. Then, taking turns, each server is
spawned `--spawns` times: spawn -> `initialize` -> `notifications/initialized` -> a first
two-word `search_nodes` ("thing 4242"), timed from the spawn to the search's answer, and
ended with SIGKILL, as clients that kill their servers do. The first spawn comes right after
the import.

With `--rss`, one more spawn of each measures resident memory (VmRSS, and the private part of
it, RssAnon) after initialize, after the first search, after 100 more searches and 5 s later
(a backlog of embeddings at work), and the peak (VmHWM). With `--exit`, one more
spawn of each is asked to stop (stdin closed, SIGTERM, SIGINT in turn, after a first search)
and timed until it is gone, while its embedding projector (if any) has work.

No MCP SDK on the client side: lines are written and read on pipes, so that what is timed is
the server.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from formats import shared
from report import print_table, write_json

OFFICIAL_PACKAGE = "@modelcontextprotocol/server-memory@2026.8.31"
PROTOCOL = "2025-06-18"
QUERY = "thing 4242"
HERE = Path(__file__).resolve().parent.parent


def write_graph(path: Path, size: int, seed: int = 11) -> None:
    """The official server's JSONL: `size` entities "thing N" with 3 observations, 2 relations each."""
    rng = random.Random(seed)
    words = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo") for b in ("pa", "qu", "do", "fe")]
    with path.open("w", encoding="utf-8") as file:
        for i in range(size):
            observations = [" ".join(rng.choices(words, k=rng.randint(4, 8))) for _ in range(3)]
            file.write(json.dumps({"type": "entity", "name": f"thing {i}", "entityType": f"type{i % 20}",
                                   "observations": observations}) + "\n")
        for i in range(size):
            for kind in ("knows", "uses"):
                file.write(json.dumps({"type": "relation", "from": f"thing {i}", "to": f"thing {rng.randrange(size)}",
                                       "relationType": kind}) + "\n")


class Server:
    """One spawned server and a line reader on its stdout."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})}, cwd=cwd)
        self._buffer = b""
        self._ids = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        ident = self._ids
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        while True:
            line = self._line()
            message = json.loads(line)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def _line(self) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise RuntimeError("the server closed its stdout")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def initialize(self) -> None:
        self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                    "clientInfo": {"name": "bench-coldstart", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def search(self, query: str) -> dict[str, Any]:
        result = self.request("tools/call", {"name": "search_nodes", "arguments": {"query": query}})
        if result.get("isError"):
            raise RuntimeError(f"search_nodes failed: {result}")
        return result

    def since(self) -> float:
        return (time.perf_counter() - self.started) * 1e3

    def memory(self) -> dict[str, int]:
        """VmRSS, RssAnon (private memory; the rest of RSS is mapped files: for Chronograph, the
        store's pages its reads touched, which the kernel may drop) and VmHWM, in MB, of the
        server and its children."""
        found = {"rss": 0, "anon": 0, "peak": 0}
        for pid in [self.process.pid, *_children(self.process.pid)]:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    found["rss"] += int(line.split()[1]) // 1024
                elif line.startswith("VmHWM:"):
                    found["peak"] += int(line.split()[1]) // 1024
                elif line.startswith("RssAnon:"):
                    found["anon"] += int(line.split()[1]) // 1024
        return found

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self, how: str) -> float:
        """Ask the server to stop (stdin, SIGTERM, SIGINT); ms until it is gone (60 s at most)."""
        started = time.perf_counter()
        assert self.process.stdin is not None
        if how == "stdin":
            self.process.stdin.close()
        else:
            self.process.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()
        return (time.perf_counter() - started) * 1e3


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    found = [int(child) for child in text.split()]
    return found + [grand for child in found for grand in _children(child)]


def cold_start(command: list[str], env: dict[str, str] | None, cwd: Path) -> dict[str, float]:
    server = Server(command, env, cwd)
    try:
        server.initialize()
        initialized = server.since()
        server.search(QUERY)
        return {"initialize_ms": initialized, "first_search_ms": server.since()}
    finally:
        server.kill()


def stages(command: list[str], env: dict[str, str] | None, cwd: Path, size: int) -> dict[str, int]:
    server = Server(command, env, cwd)
    try:
        server.initialize()
        time.sleep(0.5)  # whatever starts in the background at initialize has started
        figures: dict[str, int] = {}

        def note(stage: str) -> None:
            found = server.memory()
            figures[stage], figures[f"{stage} (private)"] = found["rss"], found["anon"]

        note("after initialize")
        server.search(QUERY)
        note("after a first search")
        rng = random.Random(5)
        for _ in range(100):
            server.search(f"thing {rng.randrange(size)}")
        note("after 100 searches")
        time.sleep(5.0)  # whatever the server does in the background (an embedding backlog) shows
        note("5 s later")
        figures["peak"] = server.memory()["peak"]
        return figures
    finally:
        server.kill()


def exit_time(command: list[str], env: dict[str, str] | None, cwd: Path, how: str) -> float:
    server = Server(command, env, cwd)
    try:
        server.initialize()
        server.search(QUERY)
        time.sleep(4.0)  # the embedding projector (if any: it starts 2 s after the spawn) is at work on a backlog
        return server.stop(how)
    finally:
        if server.process.poll() is None:
            server.kill()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print its tables, write its JSON; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=50_000, help="entities")
    parser.add_argument("--spawns", type=int, default=5, help="cold starts per server (median)")
    parser.add_argument("--official", action="store_true", help="also the official server (npm, node)")
    parser.add_argument("--baseline", metavar="PYTHON", help="another checkout's python (before)")
    parser.add_argument("--embeddings", default=None, help="pass --embeddings to ours (default: the server's default)")
    parser.add_argument("--rss", action="store_true", help="also resident memory by stage")
    parser.add_argument("--exit", action="store_true", help="also the time to exit when asked")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold starts")
    parser.add_argument("--alternate", type=int, default=0, metavar="N",
                        help="also spawn this checkout and the baseline N times each, taking turns, on one store "
                        "(this checkout's): the code's own start, whatever the store keeps")
    parser.add_argument("--one-store", action="store_true",
                        help="the baseline serves the store this checkout imported (for --rss and --exit; "
                        "it takes no part in the cold starts, which need a store of its own import)")
    parser.add_argument("--keep", type=Path, help="build the stores here (and keep them) instead of a temp dir")
    parser.add_argument("--json", type=Path, default=Path("bench-coldstart.json"))
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        graph = root / "graph.jsonl"
        if not graph.exists():
            write_graph(graph, args.size)
        targets: dict[str, tuple[list[str], dict[str, str] | None]] = {}
        pythons = {"after": sys.executable}
        if args.baseline:
            pythons["before"] = args.baseline
        timings: dict[str, Any] = {}
        for name, python in pythons.items():
            store = root / ("store-after" if args.one_store else f"store-{name}")
            extra = [] if args.embeddings is None else ["--embeddings", args.embeddings]
            if not store.exists() and not (args.one_store and name == "before"):
                if args.one_store or args.alternate:  # the baseline serves it too
                    shared(store)
                started = time.perf_counter()
                subprocess.run([python, "-m", "chronograph", "import", str(graph), "--store", str(store)],
                               check=True, cwd=root, stdout=subprocess.DEVNULL)
                timings[f"{name} import s"] = time.perf_counter() - started
                print(f"[{name}] imported {args.size:,} entities in {timings[f'{name} import s']:.1f} s",
                      file=sys.stderr)
            targets[name] = ([python, "-m", "chronograph", "serve", "--store", str(store), *extra], None)
        if args.official:
            prefix = root / "official"
            script = prefix / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
            if not script.exists():
                prefix.mkdir(exist_ok=True)
                subprocess.run(["npm", "install", "--silent", "--prefix", str(prefix), OFFICIAL_PACKAGE], check=True,
                               stdout=subprocess.DEVNULL)
            memory_file = root / "official.jsonl"
            shutil.copyfile(graph, memory_file)
            targets["official"] = (["node", str(script)], {"MEMORY_FILE_PATH": str(memory_file)})

        results: dict[str, Any] = {name: {"cold": [], "rss": None, "exit": {}} for name in targets}
        if not args.no_cold:
            for turn in range(args.spawns):
                for name, (command, env) in targets.items():
                    if args.one_store and name == "before":
                        continue
                    figure = cold_start(command, env, root)
                    results[name]["cold"].append(figure)
                    print(f"[{name}] spawn {turn + 1}: initialize {figure['initialize_ms']:.0f} ms, "
                          f"first search {figure['first_search_ms']:.0f} ms", file=sys.stderr)
        if args.alternate and "before" in pythons:
            store = str(root / "store-after")
            pair = {name: [pythons[name], "-m", "chronograph", "serve", "--store", store]
                    for name in ("after", "before")}
            for _ in range(args.alternate):
                for name, command in pair.items():
                    results[name].setdefault("alternating", []).append(cold_start(command, None, root))
        if args.rss:
            for name, (command, env) in targets.items():
                results[name]["rss"] = stages(command, env, root, args.size)
                print(f"[{name}] rss {results[name]['rss']}", file=sys.stderr)
        if args.exit:
            for name, (command, env) in targets.items():
                for how in ("stdin", "SIGTERM", "SIGINT"):
                    results[name]["exit"][how] = exit_time(command, env, root, how)
                    print(f"[{name}] exit after {how}: {results[name]['exit'][how]:.0f} ms", file=sys.stderr)

    rows = []
    official = results.get("official", {}).get("cold") or []
    theirs = statistics.median(f["first_search_ms"] for f in official) if official else None
    for name in targets:
        cold = results[name]["cold"]
        if not cold:
            continue
        ours = statistics.median(f["first_search_ms"] for f in cold)
        init = statistics.median(f["initialize_ms"] for f in cold)
        results[name]["median_first_search_ms"] = ours
        results[name]["median_initialize_ms"] = init
        ratio = f"{ours / theirs:.2f}x the official" if theirs and name != "official" else ""
        spread = ", ".join(f"{f['first_search_ms']:.0f}" for f in cold)
        rows.append((f"N={args.size:,} {name}: spawn -> first search (ms)", f"{ours:.0f} (init {init:.0f})",
                     f"{ratio}  [{spread}]"))
    if rows:
        print_table(f"cold start, every spawn ended by SIGKILL, median of {args.spawns}", rows)
    if args.alternate and "before" in pythons:
        alternating = []
        for name in ("after", "before"):
            spawns = results[name]["alternating"]
            first = statistics.median(f["first_search_ms"] for f in spawns)
            init = statistics.median(f["initialize_ms"] for f in spawns)
            results[name]["alternating_median_ms"] = {"initialize": init, "first_search": first}
            alternating.append((f"N={args.size:,} {name}: spawn -> first search (ms)", f"{first:.0f} (init {init:.0f})",
                                ""))
        print_table(f"the two checkouts taking turns on one store, median of {args.alternate}", alternating)
    if args.rss:
        rss_rows = []
        for stage in ("after initialize", "after a first search", "after 100 searches", "5 s later", "peak",
                      "after initialize (private)", "after a first search (private)",
                      "after 100 searches (private)", "5 s later (private)"):
            base = results.get("official", {}).get("rss") or {}
            for name in targets:
                figures = results[name]["rss"]
                ratio = f"{figures[stage] / base[stage]:.2f}x the official" if base and name != "official" else ""
                rss_rows.append((f"N={args.size:,} {stage}: {name}", f"{figures[stage]} MB", ratio))
        print_table("resident memory by stage", rss_rows)
    if args.exit:
        exit_rows = [(f"N={args.size:,} exit after {how}: {name}", f"{results[name]['exit'][how]:.0f} ms", "")
                     for name in targets for how in results[name]["exit"]]
        print_table("time to exit when asked (after a first search, projector busy)", exit_rows)
    write_json(args.json, {"size": args.size, "spawns": args.spawns, "query": QUERY, "protocol": PROTOCOL,
                           "embeddings": args.embeddings, "timings": timings, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
