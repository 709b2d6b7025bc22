"""OAuth resource-server mode: one issuer's JWT access tokens as principals (MCP authorization).

Per the MCP authorization specification a server is an OAuth 2.1 resource server: it takes
access tokens an authorization server issued for it, and tells clients where to get them.
`chronograph serve --http --auth-issuer URL --audience URL` does both:

- `OAuthAuthenticator` (an `Authenticator`, server/authentication.py) accepts a JWT whose
  signature one of the issuer's keys verifies with an asymmetric algorithm of `ALGORITHMS`
  (never `none`, never HMAC: a public key is no secret), whose `iss` is the issuer, whose
  `aud` names this server (RFC 8707: a token issued for another resource is refused), that
  has not expired and is not yet to come (`exp`, `nbf`, `iat`, with `LEEWAY` for clocks),
  and that has a `sub`. Its principal and grants come from the grant map (server/grantmap.py).
  A verified token is remembered by its hash until it expires or the keys are loaded again,
  so that a client's calls do not each pay for a signature check.
- `IssuerKeys` holds the issuer's keys: a JWKS file (`--jwks FILE`, for sites that cannot
  reach the issuer), or its `jwks_uri`, found in its metadata (RFC 8414, else OpenID
  Connect discovery). They are fetched when first needed, again after `REFRESH_AFTER`,
  and at once for a key id they do not hold (a rotation), at most once per `COOLDOWN`, so
  that tokens with made-up key ids cannot make the server hammer the issuer.
- `ProtectedResource` is this server's protected-resource metadata (RFC 9728), served at
  `/.well-known/oauth-protected-resource` and at that path followed by the MCP endpoint's
  (`/mcp`), and the `WWW-Authenticate` challenge of every 401 that points at it.

Nothing here logs a token or any part of it: a refusal is logged (INFO) by its reason alone.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jwt
from chronograph.application.engine.principal import Principal
from chronograph.eventstore.codec import check_principal
from chronograph.server.addresses import LOOPBACK
from chronograph.server.grantmap import DEFAULT_MAP, GrantMap
from jwt import PyJWK
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import Response

__all__ = [
    "ALGORITHMS", "COOLDOWN", "LEEWAY", "METADATA_PATH", "REFRESH_AFTER", "IssuerKeys", "OAuthAuthenticator",
    "ProtectedResource", "fetch_json", "oauth_authenticator",
]

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""The signature algorithms accepted: asymmetric only."""

_FAMILIES = {"RSA": ("RS", "PS"), "EC": ("ES",), "OKP": ("EdDSA",)}
"""The algorithms (by prefix) each key type may verify."""

LEEWAY = 60.0
"""Seconds of clock difference allowed around `exp`, `nbf` and `iat`."""

REFRESH_AFTER = 3600.0
"""Seconds after which fetched keys are fetched again (the issuer may have retired one)."""

COOLDOWN = 60.0
"""Seconds between two fetches of the issuer's keys (or metadata) at the most."""

VERIFIED = 4096
"""Tokens whose verification is remembered (by hash), until they expire or the keys change."""

METADATA_PATH = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"
MAX_DOCUMENT = 1 << 20
"""The largest metadata or JWKS document read from the issuer."""

_log = logging.getLogger("chronograph.oauth")

Fetch = Callable[[str], Any]


def fetch_json(url: str, timeout: float = 5.0) -> Any:
    """The JSON document at `url` (a GET, at most `MAX_DOCUMENT` bytes).

    Raises:
        OSError: If it cannot be fetched.
        ValueError: If it is too large or not JSON.
    """
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (https, or loopback)
            body = response.read(MAX_DOCUMENT + 1)
    except http.client.HTTPException as error:  # a broken answer (not an OSError)
        raise OSError(f"{url} answered badly: {type(error).__name__}") from None
    if len(body) > MAX_DOCUMENT:
        raise ValueError(f"{url} answered more than {MAX_DOCUMENT} bytes")
    return json.loads(body)


def check_url(url: str, what: str) -> str:
    """`url` if it is an https URL, or an http one on this machine (tests, a local issuer).

    Raises:
        ValueError: If it is not.
    """
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and (parts.hostname in LOOPBACK or (parts.hostname or "").startswith("127.")):
        return url
    raise ValueError(f"{what} {url!r} must be an https:// URL (http:// only on this machine)")


def discovery_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order the MCP specification has clients try:
    RFC 8414's well-known URI, then OpenID Connect's (inserted, then appended, for an issuer
    with a path)."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    if not path:
        return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]
    return [f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}", f"{origin}{path}/.well-known/openid-configuration"]


class IssuerKeys:
    """The issuer's signing keys, by key id: from a JWKS file, or fetched from its `jwks_uri`."""

    def __init__(self, issuer: str, *, jwks_file: Path | None = None, fetch: Fetch = fetch_json,
                 refresh_after: float = REFRESH_AFTER, cooldown: float = COOLDOWN,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.issuer = issuer
        self.jwks_file = jwks_file
        self._fetch = fetch
        self._refresh_after = refresh_after
        self._cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._jwks_uri: str | None = None
        self._keys: list[dict[str, Any]] | None = None
        self._loaded = 0.0
        self._tried: float | None = None
        self._built: dict[tuple[int, str], PyJWK] = {}
        self.generation = 0
        """Counts the loads of the keys: what was verified with older keys is verified again."""
        if jwks_file is not None:
            self._keys = self._read_file(jwks_file)  # at start: a bad file is a clear error, not a 401 later
            self._loaded = self._tried = clock()

    def key(self, kid: str | None, algorithm: str) -> PyJWK | None:
        """The key with id `kid` (any key, when the token names none and the set holds one),
        bound to `algorithm`; None if there is none that may verify it."""
        with self._lock:
            now = self._clock()
            stale = self._keys is None or (self.jwks_file is None and now - self._loaded >= self._refresh_after)
            if (stale or self._find(kid) is None) and (self._tried is None or now - self._tried >= self._cooldown):
                self._tried = now
                self._load(now)
            found = self._find(kid)
            if found is None:
                return None
            return self._bound(found, algorithm)

    def load(self) -> str | None:
        """Fetch the keys now (at start); why not, or None if they were. The caller says why (the
        log says it only when a token's arrival fetches them)."""
        with self._lock:
            self._tried = self._clock()
            return self._load(self._tried, logged=False)

    def _find(self, kid: str | None) -> dict[str, Any] | None:
        keys = self._keys or []
        if kid is None:
            return keys[0] if len(keys) == 1 else None
        return next((key for key in keys if key.get("kid") == kid), None)

    def _bound(self, jwk: dict[str, Any], algorithm: str) -> PyJWK | None:
        """`jwk` as a key for `algorithm`, if its type and its own `alg`, if any, allow it."""
        if algorithm not in ALGORITHMS or jwk.get("alg", algorithm) != algorithm:
            return None
        if not algorithm.startswith(_FAMILIES.get(str(jwk.get("kty")), ())):
            return None
        cached = self._built.get((id(jwk), algorithm))
        if cached is None:
            try:
                cached = PyJWK(jwk, algorithm)
            except jwt.PyJWTError as error:
                _log.warning("a key of the issuer's set cannot verify %s: %s", algorithm, type(error).__name__)
                return None
            self._built[(id(jwk), algorithm)] = cached
        return cached

    def _load(self, now: float, *, logged: bool = True) -> str | None:
        try:
            if self.jwks_file is not None:
                keys = self._read_file(self.jwks_file)
            else:
                if self._jwks_uri is None:
                    self._jwks_uri = self._discover()
                keys = _signing_keys(self._fetch(self._jwks_uri), self._jwks_uri)
        except (OSError, ValueError) as error:
            why = f"cannot load the signing keys of {self.issuer}: {error}"
            if logged:
                _log.warning("%s (tokens signed with keys not yet known are refused)", why)
            return why
        if keys != self._keys:  # the same keys again: what they verified stands
            self._keys, self._built = keys, {}
            self.generation += 1
        self._loaded = now
        return None

    def _discover(self) -> str:
        """The issuer's `jwks_uri`, from the first metadata document that names this issuer."""
        problems = []
        for url in discovery_urls(self.issuer):
            try:
                document = self._fetch(url)
            except (OSError, ValueError) as error:
                problems.append(f"{url}: {error}")
                continue
            if not isinstance(document, dict) or not isinstance(document.get("jwks_uri"), str):
                problems.append(f"{url}: no jwks_uri")
                continue
            if str(document.get("issuer", "")).rstrip("/") != self.issuer.rstrip("/"):  # RFC 8414 §3.3
                problems.append(f"{url}: names another issuer, {document.get('issuer')!r}")
                continue
            return check_url(document["jwks_uri"], "the issuer's jwks_uri")
        raise ValueError("no metadata of the issuer names its keys (" + "; ".join(problems) + ")")

    @staticmethod
    def _read_file(path: Path) -> list[dict[str, Any]]:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ValueError(f"cannot read the JWKS file {path}: {error}") from None
        return _signing_keys(document, str(path))


def _signing_keys(document: Any, source: str) -> list[dict[str, Any]]:
    """The public signing keys of a JWKS `document` (symmetric and encryption keys left out).

    Raises:
        ValueError: If it holds none.
    """
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise ValueError(f"{source} is not a JWK set (no \"keys\" list)")
    usable = [key for key in keys if isinstance(key, dict) and key.get("kty") in _FAMILIES
              and key.get("use", "sig") == "sig" and "d" not in key]
    if not usable:
        raise ValueError(f"{source} holds no public signing key (RSA, EC or OKP)")
    return usable


class OAuthAuthenticator:
    """Accepts the issuer's JWT access tokens for this server; their principal from the grant map."""

    blocking = True
    """`authenticate` may fetch the issuer's keys: the guard asks it in a worker thread."""

    def __init__(self, issuer: str, audience: str, keys: IssuerKeys, grants: GrantMap = DEFAULT_MAP, *,
                 leeway: float = LEEWAY) -> None:
        self.issuer = issuer
        self.audience = audience
        self.keys = keys
        self.grants = grants
        self.leeway = leeway
        self._audiences = sorted({audience, audience.rstrip("/"), audience.rstrip("/") + "/"})
        self._verified: dict[bytes, tuple[Principal, float, int]] = {}
        """sha256 of a token -> its principal, until when, and the keys' generation it was verified with"""
        self._lock = threading.Lock()

    def authenticate(self, token: str) -> Principal | None:
        """The principal of `token` if it is a valid access token of the issuer for this server.
        May fetch the issuer's keys (see `IssuerKeys`): call it off the event loop."""
        if token.count(".") != 2:
            return None  # not a JWS in compact form: another authenticator's token, if anyone's
        digest = hashlib.sha256(token.encode()).digest()
        with self._lock:
            known = self._verified.get(digest)
        if known is not None and time.time() < known[1] and known[2] == self.keys.generation:
            return known[0]
        generation = self.keys.generation  # before: a token verified during a reload is verified again later
        verified = self._verify(token)
        if verified is None:
            return None
        principal, until = verified
        with self._lock:
            self._verified.pop(digest, None)
            self._verified[digest] = (principal, until, generation)
            if len(self._verified) > VERIFIED:
                del self._verified[next(iter(self._verified))]  # the oldest
        return principal

    def _verify(self, token: str) -> tuple[Principal, float] | None:
        """The principal of `token` and until when it may be taken, if it is valid."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return _refused("its header is unreadable")
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            return _refused(f"its algorithm {str(algorithm)[:16]!r} is not accepted")
        kid = header.get("kid")
        key = self.keys.key(kid if isinstance(kid, str) else None, algorithm)
        if key is None:
            return _refused(f"no key of the issuer may verify it ({algorithm}, key id {str(kid)[:64]!r})")
        try:
            claims = jwt.decode(token, key, algorithms=[algorithm], audience=self._audiences, issuer=self.issuer,
                                leeway=self.leeway, options={"require": ["exp", "iss", "aud", "sub"]})
        except jwt.PyJWTError as error:
            return _refused(type(error).__name__)  # the class alone: a message could quote a claim
        subject = str(claims["sub"])
        try:
            check_principal(subject.strip())  # what every event it writes will be recorded with
            check_principal(subject)
        except ValueError:
            return _refused("its subject names no principal (it is blank or holds a control character)")
        return self.grants.principal(claims), float(claims["exp"]) + self.leeway


def _refused(why: str) -> tuple[Principal, float] | None:
    """None (no principal), having logged `why` (never the token)."""
    _log.info("refused an OAuth access token: %s", why)
    return None


class ProtectedResource:
    """This server as an OAuth protected resource: its metadata document, where it is served,
    and the challenge of a 401 that points at it."""

    def __init__(self, audience: str, issuer: str, scopes: Iterable[str] = (), requested: str = "") -> None:
        self.metadata = ProtectedResourceMetadata.model_validate({  # the model's own URL rules: no slash added
            "resource": audience, "authorization_servers": [issuer],
            "scopes_supported": sorted(scopes) or None, "resource_name": "Chronograph",
        })
        self.metadata_url = str(build_resource_metadata_url(AnyHttpUrl(audience)))
        suffixed = urlsplit(self.metadata_url).path
        self.paths = sorted({METADATA_PATH, METADATA_PATH + MCP_PATH, suffixed})
        """The root document and the MCP endpoint's (RFC 9728 §3.1): clients try both."""
        self._handler = ProtectedResourceMetadataHandler(self.metadata)
        self.requested = requested
        """The scope a 401 asks clients to request (the MCP specification: SHOULD, RFC 6750 §3)."""

    async def document(self, request: Request) -> Response:
        """The metadata document (the SDK's handler)."""
        return await self._handler.handle(request)

    def challenge(self, *, invalid: bool) -> str:
        """The `WWW-Authenticate` value of a 401: `invalid_token` when a token was given
        (RFC 6750 §3.1; none when it was missing), the scope to request, and where the metadata
        is (RFC 9728 §5.1)."""
        error = 'error="invalid_token", error_description="the access token is not valid here", ' if invalid else ""
        scope = f'scope="{self.requested}", ' if self.requested else ""
        return f'Bearer {error}{scope}resource_metadata="{self.metadata_url}"'


def oauth_authenticator(issuer: str, audience: str, *, jwks: Path | None = None,
                        grants: GrantMap = DEFAULT_MAP) -> tuple[OAuthAuthenticator, ProtectedResource]:
    """The authenticator and the protected resource `serve --auth-issuer` runs with.

    Raises:
        ValueError: If a URL is not https (or loopback http) or the JWKS file is unusable.
    """
    check_url(issuer, "--auth-issuer")
    parts = urlsplit(audience)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.fragment:
        raise ValueError(f"--audience {audience!r} must be this server's URL, e.g. https://memory.example.com/mcp")
    keys = IssuerKeys(issuer, jwks_file=jwks)
    resource = ProtectedResource(audience, issuer, grants.scopes, grants.requested)
    return OAuthAuthenticator(issuer, audience, keys, grants), resource
