"""The authenticators of Chronograph's own bearer tokens: those issued in the store
(`chronograph token create`), and `$CHRONOGRAPH_TOKEN`, one admin principal.

A token's "last used" is kept by the server that saw it, in memory, and written at most once a
minute to `token-use.json` beside its views (the store folder; a database store's cache folder):
an event per request would grow the log with every call and make each read a write.
`chronograph token list` shows what that file says (for a database store: what the servers that
share the cache folder it is given saw; else nothing).
"""

from __future__ import annotations

import hmac
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from chronograph.application.engine.principal import ANY_WORKSPACE, ENV_PRINCIPAL, Principal
from chronograph.application.engine.tokens import Tokens
from chronograph.eventstore import clock

if TYPE_CHECKING:
    from chronograph.server.runtime import Runtime

__all__ = ["ENV_PRINCIPAL", "USE_FILE", "EnvToken", "StoreTokens", "last_used", "store_tokens"]

USE_FILE = "token-use.json"
"""Where a server keeps when each token was last used (name -> µs)."""
USE_EVERY = 60.0
"""Seconds between writes of the use file."""


class EnvToken:
    """`$CHRONOGRAPH_TOKEN`: one principal, `token`, with every grant (today's setups keep working)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()
        self.principal = Principal(ENV_PRINCIPAL, {ANY_WORKSPACE: "admin"})

    def authenticate(self, token: str) -> Principal | None:
        """The admin principal if `token` is the configured one (compared in constant time)."""
        return self.principal if hmac.compare_digest(token.encode("utf-8", "surrogatepass"), self._token) else None


class StoreTokens:
    """The tokens issued in the store: a token's principal while it is neither revoked nor expired.

    `tokens` and `folder` (where "last used" is kept) are the store's; or `opened` gives them when
    first needed (a server's store is opened after its app is made).
    """

    def __init__(self, tokens: Tokens | None = None, folder: Path | None = None, *,
                 opened: Callable[[], tuple[Tokens, Path | None]] | None = None) -> None:
        self._tokens = tokens
        self._folder = folder
        self._opened = opened
        self._used: dict[str, int] = {}
        self._written = time.monotonic()
        self._lock = threading.Lock()

    @property
    def tokens(self) -> Tokens:
        """The store's tokens."""
        if self._tokens is None:
            if self._opened is None:
                raise RuntimeError("no store to find tokens in")
            self._tokens, self._folder = self._opened()
        return self._tokens

    def any(self) -> bool:
        """Whether the store has any token (issued, even if revoked or expired since)."""
        return self.tokens.any()

    def authenticate(self, token: str) -> Principal | None:
        """The principal of `token`, None if it is unknown, revoked or expired."""
        principal = self.tokens.principal(token)
        if principal is not None:
            self._note(principal.name)
        return principal

    def _note(self, name: str) -> None:
        with self._lock:
            self._used[name] = clock.now_us()
            if time.monotonic() - self._written >= USE_EVERY:
                self.save()

    def save(self) -> None:
        """Write the use file now (a server does at most once a minute, and when it stops)."""
        if self._folder is None or not self._used:
            return
        self._written = time.monotonic()
        path = self._folder / USE_FILE
        known = last_used(self._folder)  # what other servers sharing the folder saw: the later time wins
        for name, when in self._used.items():
            known[name] = max(when, known.get(name, 0))
        # a name of its own (servers sharing the folder write at once), never through a link
        temporary = path.with_name(f".{USE_FILE}.{os.getpid()}.{os.urandom(4).hex()}")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(json.dumps(known, sort_keys=True))
            os.replace(temporary, path)
        except OSError:
            temporary.unlink(missing_ok=True)  # "last used" is a convenience: a read-only folder keeps none


def last_used(folder: Path | None) -> dict[str, int]:
    """name -> when (µs) a server that keeps its views in `folder` last saw the token used."""
    if folder is None:
        return {}
    try:
        data = json.loads((folder / USE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}


def store_tokens(runtime: Runtime) -> StoreTokens:
    """The authenticator of the tokens issued in `runtime`'s store, found when first asked (the
    store is open by then): a database store's are folded as far as the follower has brought the
    views. "Last used" is written when the runtime closes, too."""

    def opened() -> tuple[Tokens, Path | None]:
        return Tokens.of(runtime.memory), Path(runtime.memory.views.env.path)

    authenticator = StoreTokens(opened=opened)
    runtime.closing.append(authenticator.save)
    return authenticator
