"""The events of access tokens: a token was issued to a principal with its grants, or revoked.

Each token has its own stream, ``token:<name>``; its name is the principal's, recorded on every
event written with it. The secret is never an event's: only its SHA-256 digest is (a random
32-byte secret needs no slow hash; nothing short of the secret opens the digest). The same
rules as `eventstore.events` keep them readable forever.
"""

from __future__ import annotations

from chronograph.eventstore.events import Event

__all__ = ["TOKEN_EVENTS", "TOKEN_STREAM", "TokenIssued", "TokenRevoked", "token_stream"]

TOKEN_STREAM = "token:"
"""The prefix of a token's stream."""


def token_stream(name: str) -> str:
    """The stream of the token `name`."""
    return TOKEN_STREAM + name


class TokenIssued(Event, frozen=True, tag="token_issued"):
    """A token was issued to the principal `name`: `digest` is the SHA-256 (hex) of its secret,
    `grants` maps a workspace (or `*`) to `read`, `write` or `admin`; it works until `expires_at`
    (µs), if given. It was issued at its envelope's `recorded_at`."""

    name: str
    digest: str
    grants: dict[str, str]
    expires_at: int | None = None


class TokenRevoked(Event, frozen=True, tag="token_revoked"):
    """The token `name` was revoked: it stops working everywhere as soon as a server folds this."""

    name: str


TOKEN_EVENTS: tuple[type[Event], ...] = (TokenIssued, TokenRevoked)
"""The token events, in the order they were introduced."""
