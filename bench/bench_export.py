"""Exports and whole-workspace answers at size: what an export to a file costs, and what a refusal
of an answer over the reply limit costs; this checkout and a baseline side by side.

    python bench/bench_export.py --store DIR [--project DIR --n2n-store DIR]
        [--baseline "/work/before/.venv/bin/python"] [--rounds 2]

--store is a store whose "default" workspace is large (bench_import.py's graph imported). For
each code in turn, round after round:
  * `chronograph export -o FILE` in every format: wall time and the process's peak RSS;
  * a server over stdio (`--profile P`, embeddings off) asked one whole-workspace call after
    a first call has opened the store: export_graph in every format, the workspace profile's
    read_graph, and (with --project, a folder whose n2n workspace holds a large graph in
    --n2n-store) n2n_read_graph and n2n_get_graph_summary: the call's time, whether it was
    refused, and the server's peak RSS.
Medians per code are printed and written to JSON.
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

FORMATS = ("jsonl", "json", "markdown", "mermaid", "dot")
ENV = {**os.environ, "CHRONOGRAPH_EMBEDDINGS": "off"}
OPENING = {  # a cheap first call of each profile: the store opened before the call measured
    "chronograph": lambda _: ("list_workspaces", {}),
    "workspace": lambda _: ("get_entity_relations", {"workspaceName": "default", "entityName": "Entity 0000000"}),
    "n2n": lambda arguments: ("n2n_get_graph_summary", {**arguments, "limit": 1}),
}


def cli_export(python: str, store: Path, fmt: str, out: Path) -> tuple[float, int]:
    """(seconds, peak RSS in KB) of one `chronograph export` into `out`."""
    out.unlink(missing_ok=True)
    began = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *python.split(), "-m", "chronograph", "export", "--store",
                           str(store), "--format", fmt, "-o", str(out)], env=ENV, capture_output=True, text=True,
                          check=True)
    return time.perf_counter() - began, int(done.stderr.strip().splitlines()[-1])


def call(python: str, store: Path, profile: str, tool: str, arguments: dict[str, Any]) -> tuple[float, bool, int]:
    """(ms, refused, server peak RSS in KB) of `tool` asked of a fresh stdio server, after a first call."""
    server = subprocess.Popen([*python.split(), "-m", "chronograph", "--store", str(store), "--profile", profile],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    assert server.stdin is not None and server.stdout is not None

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        server.stdin.write((json.dumps(message) + "\n").encode())  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]
        while True:
            answer = json.loads(server.stdout.readline())  # type: ignore[union-attr]
            if answer.get("id") == message["id"]:
                return answer

    ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    first = OPENING[profile](arguments)
    ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": first[0], "arguments": first[1]}})
    began = time.perf_counter()
    answer = ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    elapsed = (time.perf_counter() - began) * 1000
    with open(f"/proc/{server.pid}/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    server.stdin.close()
    server.wait(30)
    return elapsed, bool(answer.get("result", {}).get("isError")), peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--project", type=Path, help="an n2n project folder (its .mcp made) for the n2n calls")
    parser.add_argument("--n2n-store", type=Path, help="the store holding --project's graph (default: --store)")
    parser.add_argument("--baseline", help="the Python of a baseline checkout")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path, default=Path("bench-export.json"))
    args = parser.parse_args(argv)
    codes = {"after": sys.executable,
             **({"before": args.baseline} if args.baseline else {})}
    calls: list[tuple[str, Path, str, str, dict[str, Any]]] = [
        *((f"export_graph {fmt}", args.store, "chronograph", "export_graph", {"format": fmt}) for fmt in FORMATS),
        ("workspace read_graph", args.store, "workspace", "read_graph", {"workspaceName": "default"})]
    if args.project:
        project = {"projectPath": str(args.project)}
        calls += [("n2n_read_graph", args.n2n_store or args.store, "n2n", "n2n_read_graph", project),
                  ("n2n_get_graph_summary", args.n2n_store or args.store, "n2n", "n2n_get_graph_summary", project)]
    samples: dict[tuple[str, str], list[tuple[float, Any, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-export-") as scratch:
        for round_ in range(args.rounds):
            for code, python in (codes.items() if round_ % 2 == 0 else reversed(codes.items())):
                for fmt in FORMATS:
                    seconds, peak = cli_export(python, args.store, fmt, Path(scratch) / f"out.{fmt}")
                    samples.setdefault((code, f"cli export {fmt}"), []).append((seconds * 1000, None, peak))
                for name, store, profile, tool, arguments in calls:
                    samples.setdefault((code, name), []).append(call(python, store, profile, tool, arguments))
                print(f"round {round_ + 1}: {code} done", flush=True)
    figures: dict[str, Any] = {"store": str(args.store), "rounds": args.rounds}
    rows = []
    names = dict.fromkeys(name for _, name in samples)
    for name in names:
        cells = []
        for code in codes:
            runs = samples[(code, name)]
            ms = statistics.median(r[0] for r in runs)
            peak = statistics.median(r[2] for r in runs) / 1024
            refused = {r[1] for r in runs} - {None}
            said = "" if not refused else (" refused" if refused == {True} else " answered" if refused == {False}
                                           else " refused or not")
            figures.setdefault(code, {})[name] = {"ms": round(ms, 1), "peak_mb": round(peak),
                                                  "refused": sorted(refused)}
            cells.append(f"{code} {ms:,.0f} ms, {peak:,.0f} MB{said}")
        rows.append((name, " | ".join(cells), ""))
    print_table(f"exports and whole-workspace answers, medians of {args.rounds}", rows)
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
