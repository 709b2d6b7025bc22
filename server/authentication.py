"""Who an HTTP request is made for: the authenticators a server's guard asks, in turn.

The guard (server/http.py) takes the bearer token of a request (the header, or the
explorer's cookie or link) and asks each `Authenticator` for the principal it stands for:
Chronograph's own tokens, `$CHRONOGRAPH_TOKEN` (one admin principal), an OAuth issuer's
access tokens. The first that knows the token answers; none knowing it is a 401. The
principal rides the request's ASGI scope under `PRINCIPAL_KEY` to the tool call, which
hands it to the core (the core decides what it may do; nothing here does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from chronograph.application.engine.principal import Principal

__all__ = ["PRINCIPAL_KEY", "Authenticator", "Authenticators", "principal_name"]

PRINCIPAL_KEY = "chronograph.principal"
"""The ASGI scope's key for the request's authenticated `Principal`."""


def principal_name(scope: Mapping[str, Any]) -> str:
    """The name of the principal in a request's scope ("": none was put there)."""
    principal = scope.get(PRINCIPAL_KEY)
    return "" if principal is None else str(principal.name)


class Authenticator(Protocol):
    """Knows some bearer tokens and the principals they stand for. One whose `authenticate` may
    block (fetch keys over the network) says so with a true class attribute `blocking`: the
    guard then asks it in a worker thread, and the listener's flood triage does not ask it."""

    def authenticate(self, token: str) -> Principal | None:
        """The principal `token` stands for, or None if this authenticator does not know it
        (or it is revoked or expired). Compares secrets in constant time; never logs them."""
        ...


class Authenticators:
    """The authenticators a guard asks in turn, and what they say together."""

    def __init__(self, authenticators: Sequence[Authenticator]) -> None:
        self.each: list[Authenticator] = list(authenticators)

    def __bool__(self) -> bool:
        return bool(self.each)

    def required(self) -> bool:
        """Whether a request must present a valid token: an authenticator that can tell (the
        store's tokens) says whether it has any; any other one configured always asks for one."""
        return any(getattr(authenticator, "any", lambda: True)() for authenticator in self.each)

    def principal(self, token: str) -> Principal | None:
        """The principal of a bearer token, as the first authenticator that answers at once and
        knows it says (those that may block, `blocking`, are left to `authenticated`)."""
        token = token.strip()
        if not token:
            return None
        for authenticator in self.each:
            if not getattr(authenticator, "blocking", False):
                principal = authenticator.authenticate(token)
                if principal is not None:
                    return principal
        return None

    def vouches(self, headers: Iterable[tuple[bytes, bytes]]) -> bool:
        """Whether a request's raw headers carry a valid bearer token (the listener keeps the
        requests that do, under a flood, and closes the others first)."""
        if not self.each:
            return False
        for name, value in headers:
            if name.lower() == b"authorization":
                scheme, _, given = value.decode("latin-1").strip().partition(" ")
                try:
                    return scheme.lower() == "bearer" and self.principal(given) is not None
                except Exception:  # noqa: BLE001 (tokens that cannot be read vouch for nobody)
                    return False
        return False

    async def authenticated(self, token: str) -> Principal | None:
        """The principal `token` stands for: as the authenticators that answer at once say (a
        digest looked up in memory), else as one that may block does (an OAuth authenticator
        fetching its issuer's keys), asked in a worker thread."""
        principal = self.principal(token)
        for authenticator in self.each:
            if principal is not None:
                break
            if getattr(authenticator, "blocking", False):
                import anyio.to_thread  # noqa: PLC0415 (not on a stdio server's start: it never asks)

                principal = await anyio.to_thread.run_sync(authenticator.authenticate, token)
        return principal

    async def still_valid(self, token: str) -> bool:
        """Whether `token` still stands for a principal (no: revoked, expired, or the tokens
        cannot be read now)."""
        try:
            return await self.authenticated(token) is not None
        except Exception:  # noqa: BLE001 (tokens that cannot be read vouch for nobody)
            return False
