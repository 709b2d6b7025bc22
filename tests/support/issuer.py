"""A local OAuth issuer for the tests: key pairs, their JWKS, signed access tokens, and a
loopback HTTP server that publishes the issuer's metadata and keys (no network beyond it)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

AUDIENCE = "https://memory.example.com/mcp"


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def public_jwk(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, kid: str) -> dict[str, Any]:
    """The public half of `key` as a JWK with id `kid`."""
    if isinstance(key, rsa.RSAPrivateKey):
        jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    else:
        jwk = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**jwk, "kid": kid, "use": "sig"}


@dataclass
class Issuer:
    """An authorization server's signing side: its URL and its keys by id."""

    url: str
    keys: dict[str, Any] = field(default_factory=dict)
    fetches: list[str] = field(default_factory=list)
    """The paths the issuer's HTTP server was asked for, in order."""

    def jwks(self) -> dict[str, Any]:
        return {"keys": [public_jwk(key, kid) for kid, key in self.keys.items()]}

    def claims(self, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {"iss": self.url, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300,
                  "scope": "chronograph:write"}
        claims.update(changes)
        return {name: value for name, value in claims.items() if value is not None}

    def token(self, *, kid: str = "rsa-1", alg: str | None = None, key: Any = None, **changes: Any) -> str:
        """An access token signed with the key `kid` (or `key`), claims `claims(**changes)`."""
        signing = key if key is not None else self.keys[kid]
        if alg is None:
            alg = "RS256" if isinstance(signing, rsa.RSAPrivateKey) else "ES256"
        return jwt.encode(self.claims(**changes), signing, algorithm=alg, headers={"kid": kid})


def issuer(url: str = "https://id.example.com") -> Issuer:
    return Issuer(url, {"rsa-1": rsa_key(), "ec-1": ec_key()})


@contextmanager
def serving(signer: Issuer | None = None, *, named: str | None = None) -> Iterator[Issuer]:
    """An issuer on a loopback port publishing RFC 8414 metadata (naming `named`, else itself)
    and its JWKS, until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            served.fetches.append(self.path)
            if self.path == "/.well-known/oauth-authorization-server":
                body: Any = {"issuer": named or served.url, "jwks_uri": served.url + "/jwks",
                             "authorization_endpoint": served.url + "/authorize",
                             "token_endpoint": served.url + "/token"}
            elif self.path == "/jwks":
                body = served.jwks()
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served = signer or issuer()
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
