"""What finding a request's principal costs, and how soon a revocation reaches another server.

    flock /work/scratch/heavy.lock python bench/bench_authentication.py [--events 20000] [--tokens 100]
        [--samples 20000] [--revocations 20] [--json bench/authentication.json]

1. On a store folder of --events graph events and --tokens tokens, side by side in one run: the
   guard's work per request (is a token required, then whose is it) for a store token, for
   `$CHRONOGRAPH_TOKEN`, and for an unknown token; p50 and p99 in µs over --samples calls each,
   interleaved. Nothing new in the log between calls: a server's steady state.
2. The same after every write (the view folds one new event first): what a busy server pays.
3. Two servers on one PostgreSQL database (needs 127.0.0.1:5432, db `test`), each with its own
   cache and follower: a token revoked through one, the time until the other refuses it, over
   --revocations tokens; median and max in ms. The target is 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from report import print_table, write_json


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.99)]


def guard_costs(events: int, tokens: int, samples: int) -> dict[str, Any]:
    from chronograph.application import Memory
    from chronograph.application.engine.tokens import Tokens
    from chronograph.server.tokens import EnvToken, StoreTokens

    with tempfile.TemporaryDirectory(prefix="bench-auth-") as base, Memory(Path(base) / "store", sync=False) as memory:
        for start in range(0, events, 500):
            memory.write("create_entities", {"entities": [
                {"name": f"E{n}", "entityType": "t", "observations": ["x"]}
                for n in range(start, min(start + 500, events))]}, actor="bench")
        issuer = Tokens.of(memory)
        secrets = [issuer.issue(f"t{n}", {"*": "write"}) for n in range(tokens)]
        store = StoreTokens(Tokens.of(memory), Path(base))
        shared = "an-environment-token-of-some-length"
        env = EnvToken(shared)
        cases = {"store token": (store, secrets[-1]), "$CHRONOGRAPH_TOKEN": (env, shared),
                 "unknown token": (store, "chg_" + "A" * 43)}
        store.authenticate(secrets[0])  # the first fold (a raw scan of the log) is the open's, not a request's
        timings: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(samples):
            for name, (authenticator, token) in cases.items():
                began = time.perf_counter()
                _ = store.any()  # the guard asks whether a token is required, then whose it is
                authenticator.authenticate(token)
                timings[name].append((time.perf_counter() - began) * 1e6)
        busy: list[float] = []
        for n in range(min(samples, 2000)):
            memory.write("create_entities", {"entities": [{"name": f"B{n}", "entityType": "t", "observations": []}]},
                         actor="bench")
            began = time.perf_counter()
            _ = store.any()
            store.authenticate(secrets[-1])
            busy.append((time.perf_counter() - began) * 1e6)
        timings["store token, a write before each"] = busy
    return timings


def revocation_latency(server: str, count: int) -> list[float]:
    import psycopg
    from chronograph.application import Memory
    from chronograph.application.engine.tokens import Tokens
    from chronograph.server.tokens import StoreTokens

    schema = f"bench_auth_{uuid.uuid4().hex[:8]}"
    try:
        return _revocations(f"{server}?schema={schema}", count, Memory, Tokens, StoreTokens)
    finally:
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _revocations(url: str, count: int, Memory: Any, Tokens: Any, StoreTokens: Any) -> list[float]:  # noqa: N803
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-auth-pg-") as base, \
            Memory(url, cache=Path(base) / "a") as a, Memory(url, cache=Path(base) / "b") as b:
        a.follow()
        b.follow()
        on_b = StoreTokens(Tokens.of(b))
        for n in range(count):
            secret = Tokens.of(a).issue(f"r{n}", {"*": "read"})
            while on_b.authenticate(secret) is None:
                time.sleep(0.001)
            Tokens.of(a).revoke(f"r{n}")
            began = time.perf_counter()
            while on_b.authenticate(secret) is not None:
                time.sleep(0.001)
            latencies.append((time.perf_counter() - began) * 1000)
    return latencies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--revocations", type=int, default=20)
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("authentication.json"))
    args = parser.parse_args(argv)
    timings = guard_costs(args.events, args.tokens, args.samples)
    rows = []
    for name, found in timings.items():
        p50, p99 = percentiles(found)
        rows.append((f"{name}: p50 / p99", f"{p50:,.1f} / {p99:,.1f} us", "side by side, one run"))
    try:
        latencies = revocation_latency(args.url, args.revocations)
    except Exception as error:  # noqa: BLE001 (no database: say so, keep the rest)
        print(f"no PostgreSQL measure: {error}", file=sys.stderr)
        latencies = []
    if latencies:
        rows.append(("revoked on one server, refused by the other: median",
                     f"{statistics.median(latencies):,.0f} ms", "<= 1,000 ms"))
        rows.append(("... max", f"{max(latencies):,.0f} ms", "<= 1,000 ms"))
    print_table(f"authentication ({args.events:,} events, {args.tokens} tokens, {args.samples:,} samples)", rows)
    write_json(args.json, {"events": args.events, "tokens": args.tokens,
                           "microseconds": {k: percentiles(v) for k, v in timings.items()},
                           "revocation_ms": latencies})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
