"""What the README's two commands install, and how long their first run takes, on a fresh clone.

    python bench/bench_install.py [--rev A [--rev B ...]] [--rounds 3] [--cold-cache] [--json FILE]

Clones this checkout at each --rev (default HEAD; give two to compare them side by side, in
turn, round after round) into a temporary folder (committed files only, no .venv), reads the
Run and Test commands from that clone's README, and runs each on its own fresh clone, as a
newcomer would: the run command until the server answers `initialize` over stdio (on a store in
the temporary folder, through $CHRONOGRAPH_STORE), the test command with `--version` appended
(the environment built and pytest started; the suite itself is timed elsewhere). For each it
reports the median first run's time, the size of the `.venv` it left and which test tools that
environment holds. --cold-cache gives uv an empty cache, so every wheel is downloaded;
otherwise uv's own cache is used and the time is mostly installing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from report import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
TEST_TOOLS = ("pytest", "playwright", "mypy", "ruff", "hypothesis")
"""Distributions the run command's environment should not hold."""
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench-install", "version": "0"}}}


def readme_command(readme: Path, section: str) -> list[str]:
    """The first command of the ```sh block under `## section` of the README."""
    text = readme.read_text(encoding="utf-8")
    block = re.search(rf"^## {section}\n.*?```sh\n(.+?)\n", text, re.S | re.M)
    if block is None:
        raise SystemExit(f"{readme}: no command under '## {section}'")
    return shlex.split(block.group(1))


def clone(rev: str, into: Path) -> Path:
    """A fresh clone of this checkout at `rev`."""
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "--quiet", rev], check=True)
    return into


def size(folder: Path) -> int:
    """Bytes on disk under `folder` (du's count, hard links once)."""
    out = subprocess.run(["du", "-sk", str(folder)], check=True, capture_output=True, text=True).stdout
    return int(out.split()[0]) * 1024


def installed(venv: Path) -> list[str]:
    """Which of TEST_TOOLS the environment holds."""
    names = {p.name.split("-")[0].lower() for p in venv.glob("lib/python*/site-packages/*.dist-info")}
    return [tool for tool in TEST_TOOLS if tool in names]


def first_run(command: list[str], checkout: Path, env: dict[str, str]) -> float:
    """Seconds until the server started by `command` answers `initialize` over stdio."""
    began = time.perf_counter()
    process = subprocess.Popen(command, cwd=checkout, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INITIALIZE) + "\n")
    process.stdin.flush()
    answer = process.stdout.readline()
    elapsed = time.perf_counter() - began
    process.stdin.close()
    process.wait(timeout=60)
    if '"result"' not in answer:
        raise SystemExit(f"{shlex.join(command)}: no answer to initialize ({answer!r})")
    return elapsed


def measure(kind: str, rev: str, work: Path, cold: bool) -> dict[str, Any]:
    """One README command on its own fresh clone: its first run's time, its .venv and test tools."""
    checkout = clone(rev, work / kind)
    env = {**os.environ, "CHRONOGRAPH_STORE": str(work / f"{kind}-store")}
    env.pop("VIRTUAL_ENV", None)
    if cold:
        env["UV_CACHE_DIR"] = str(work / f"{kind}-cache")
    if kind == "run":
        command = readme_command(checkout / "README.md", "Run")
        seconds = first_run(command, checkout, env)
    else:
        command = [*readme_command(checkout / "README.md", "Test"), "--version"]
        began = time.perf_counter()
        subprocess.run(command, cwd=checkout, env=env, check=True, capture_output=True)
        seconds = time.perf_counter() - began
    venv = checkout / ".venv"
    return {"command": shlex.join(command), "seconds": round(seconds, 1), "venv_bytes": size(venv),
            "test_tools": installed(venv)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", action="append", help="a commit to clone (default HEAD; repeat to compare)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh clones per command and commit (default 3)")
    parser.add_argument("--cold-cache", action="store_true", help="an empty uv cache: download every wheel")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    revs = [subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True, capture_output=True,
                           text=True).stdout.strip() for rev in args.rev or ["HEAD"]]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {rev: {"run": [], "test": []} for rev in revs}
    for n in range(args.rounds):
        for rev in revs:
            for kind in ("run", "test"):
                with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
                    runs[rev][kind].append(measure(kind, rev, Path(tmp), args.cold_cache))
                print(f"round {n + 1}, {rev}, {kind}: {runs[rev][kind][-1]['seconds']} s", file=sys.stderr)
    results = {rev: {kind: {**found[-1], "seconds": statistics.median(r["seconds"] for r in found),
                            "rounds": [r["seconds"] for r in found]}
                     for kind, found in kinds.items()} for rev, kinds in runs.items()}
    rows: list[tuple[str, str, str]] = []
    for kind in ("run", "test"):
        for rev in revs:
            result = results[rev][kind]
            rows.append((f"{kind} at {rev}: {result['command']}", "", ""))
            rows.append(("  first run, median s", f"{result['seconds']:.1f}", ""))
            rows.append(("  .venv, MB", f"{result['venv_bytes'] / 1e6:.0f}", ""))
            rows.append(("  test tools in it", ", ".join(result["test_tools"]) or "none",
                         "none" if kind == "run" else "all"))
    cache = "cold uv cache" if args.cold_cache else "warm uv cache"
    print_table(f"the README's commands on fresh clones ({cache}, {args.rounds} rounds)", rows)
    if args.json:
        write_json(args.json, {"revs": revs, "cold_cache": args.cold_cache, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
