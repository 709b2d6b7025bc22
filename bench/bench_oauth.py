"""What an OAuth access token costs a request: the guard's authentication, side by side.

    python bench/bench_oauth.py [--calls 2000] [--json FILE]

One guard (server/http.py) around an app that answers at once, driven in-process (no
sockets), with a request per call: no authentication at all, the server's own token, an
issuer's token seen before (remembered), and fresh tokens (each verified: RS256, ES256).
Also `OAuthAuthenticator.authenticate` alone, remembered and fresh. Medians in microseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jwt
from chronograph.server.grantmap import DEFAULT_MAP
from chronograph.server.http import Guard
from chronograph.server.oauth import oauth_authenticator
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from report import print_table, write_json

ISSUER = "https://id.example.com"
AUDIENCE = "http://127.0.0.1/mcp"
STATIC = "s3cret-static-token"


async def answer(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def request(token: str | None) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    return {"type": "http", "method": "GET", "path": "/health", "headers": headers, "client": ("127.0.0.1", 1),
            "query_string": b""}


async def through(guard: Guard, tokens: Sequence[str | None]) -> list[float]:
    """Microseconds per request of `tokens` through `guard` (each must be let in)."""
    statuses: list[int] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    times = []
    for token in tokens:
        began = time.perf_counter()
        await guard(request(token), receive, send)
        times.append((time.perf_counter() - began) * 1e6)
    assert set(statuses) == {200}, statuses[:5]
    return times


def timed(function: Callable[[str], Any], tokens: Sequence[str]) -> list[float]:
    times = []
    for token in tokens:
        began = time.perf_counter()
        assert function(token) is not None
        times.append((time.perf_counter() - began) * 1e6)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=Path("bench-oauth.json"))
    args = parser.parse_args(argv)
    keys = {"rsa": rsa.generate_private_key(public_exponent=65537, key_size=2048),
            "ec": ec.generate_private_key(ec.SECP256R1())}
    jwks = {"keys": [{**RSAAlgorithm.to_jwk(keys["rsa"].public_key(), as_dict=True), "kid": "rsa"},
                     {**ECAlgorithm.to_jwk(keys["ec"].public_key(), as_dict=True), "kid": "ec"}]}

    def token(kid: str, n: int) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": f"user-{n}", "iat": now, "exp": now + 3600,
                  "scope": "chronograph:write"}
        return jwt.encode(claims, keys[kid], algorithm="RS256" if kid == "rsa" else "ES256", headers={"kid": kid})

    with tempfile.TemporaryDirectory(prefix="bench-oauth-") as base:
        file = Path(base) / "jwks.json"
        file.write_text(json.dumps(jwks))
        calls = args.calls

        def fresh() -> Any:
            return oauth_authenticator(ISSUER, AUDIENCE, jwks=file, grants=DEFAULT_MAP)

        rsa_tokens = [token("rsa", n) for n in range(calls)]
        ec_tokens = [token("ec", n) for n in range(calls)]
        figures: dict[str, float] = {}

        async def guarded() -> None:
            plain = Guard(answer, token=None, hosts={"127.0.0.1"})
            static = Guard(answer, token=STATIC, hosts={"127.0.0.1"})
            authenticator, resource = fresh()
            oauth = Guard(answer, token=STATIC, hosts={"127.0.0.1"}, authenticators=[authenticator], resource=resource)
            await through(oauth, rsa_tokens[:1])  # remembered from here on
            for _ in range(2):  # warm up, then measure each side by side
                figures["guard_no_auth_us"] = statistics.median(await through(plain, [None] * calls))
                figures["guard_static_token_us"] = statistics.median(await through(static, [STATIC] * calls))
                figures["guard_oauth_remembered_us"] = statistics.median(await through(oauth, rsa_tokens[:1] * calls))
                authenticator, resource = fresh()
                oauth_rs = Guard(answer, token=STATIC, hosts={"127.0.0.1"}, authenticators=[authenticator])
                figures["guard_oauth_fresh_rs256_us"] = statistics.median(await through(oauth_rs, rsa_tokens))
                authenticator, resource = fresh()
                oauth_es = Guard(answer, token=STATIC, hosts={"127.0.0.1"}, authenticators=[authenticator])
                figures["guard_oauth_fresh_es256_us"] = statistics.median(await through(oauth_es, ec_tokens))

        asyncio.run(guarded())
        authenticator = fresh()[0]
        figures["authenticate_fresh_rs256_us"] = statistics.median(timed(authenticator.authenticate, rsa_tokens))
        figures["authenticate_remembered_us"] = statistics.median(timed(authenticator.authenticate, rsa_tokens))
        figures["authenticate_fresh_es256_us"] = statistics.median(timed(fresh()[0].authenticate, ec_tokens))
    rounded = {name: round(value, 1) for name, value in figures.items()}
    print_table(f"authentication per request, median of {calls:,} (microseconds)", [
        ("guard, no authentication", f"{rounded['guard_no_auth_us']} us", ""),
        ("guard, the server's own token", f"{rounded['guard_static_token_us']} us", ""),
        ("guard, an issuer's token seen before", f"{rounded['guard_oauth_remembered_us']} us", ""),
        ("guard, a fresh RS256 token", f"{rounded['guard_oauth_fresh_rs256_us']} us", ""),
        ("guard, a fresh ES256 token", f"{rounded['guard_oauth_fresh_es256_us']} us", ""),
        ("authenticate, a token seen before", f"{rounded['authenticate_remembered_us']} us", ""),
        ("authenticate, a fresh RS256 token", f"{rounded['authenticate_fresh_rs256_us']} us", ""),
        ("authenticate, a fresh ES256 token", f"{rounded['authenticate_fresh_es256_us']} us", ""),
    ])
    write_json(args.json, {"calls": calls, **rounded})
    return 0


if __name__ == "__main__":
    sys.exit(main())
