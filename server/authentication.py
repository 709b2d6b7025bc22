"""Who an HTTP request is made for: the authenticators a server's guard asks, in turn.

The guard (server/http.py) takes the bearer token of a request (the header, or the
explorer's cookie or link) and asks each `Authenticator` for the principal it stands for:
Chronograph's own tokens, `$CHRONOGRAPH_TOKEN` (one admin principal), an OAuth issuer's
access tokens. The first that knows the token answers; none knowing it is a 401. The
principal rides the request's ASGI scope under `PRINCIPAL_KEY` to the tool call, which
hands it to the core (the core decides what it may do; nothing here does).
"""

from __future__ import annotations

from typing import Protocol

from chronograph.application.engine.principal import Principal

__all__ = ["PRINCIPAL_KEY", "Authenticator"]

PRINCIPAL_KEY = "chronograph.principal"
"""The ASGI scope's key for the request's authenticated `Principal`."""


class Authenticator(Protocol):
    """Knows some bearer tokens and the principals they stand for. One whose `authenticate` may
    block (fetch keys over the network) says so with a true class attribute `blocking`: the
    guard then asks it in a worker thread, and the listener's flood triage does not ask it."""

    def authenticate(self, token: str) -> Principal | None:
        """The principal `token` stands for, or None if this authenticator does not know it
        (or it is revoked or expired). Compares secrets in constant time; never logs them."""
        ...
