"""Access tokens: issued, listed and revoked as events; the live ones folded into a view that
answers "which principal does this bearer token stand for?".

A token is `chg_` and 43 characters of URL-safe base64 (32 random bytes). It is shown once,
when issued; the log keeps only its SHA-256 digest (`TokenIssued.digest`). A token is looked
up by its digest, and the digest compared in constant time: the secret itself is never held
after the request that presented it. Each token has its own stream (`token:NAME`), so issuing
a name twice is refused by the append itself, on every backend.

The view is folded from the log the way the team memory is, in the process that asks: at each
use it folds what is new (a raw scan for the two tags, decoding only what it finds). A store
folder's head is read each time (a revocation by any process counts at the next request); a
database store's views are kept current by the follower, so the view folds as far as the
follower has come (within a second of the revocation on any server), asking the database
nothing in between.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import msgspec
from chronograph.application.engine.principal import ANY_WORKSPACE, BUILT_IN, LEVELS, Level, Principal
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, NotFoundError
from chronograph.eventstore import NO_STREAM, ConcurrencyError, Envelope, EventLog, StreamWrite, clock
from chronograph.eventstore.tokenevents import TOKEN_STREAM, TokenIssued, TokenRevoked, token_stream
from chronograph.projections import Views

if TYPE_CHECKING:
    from chronograph.application.engine.service import Memory

__all__ = [
    "PREFIX", "TokenRecord", "TokenView", "Tokens", "digest_of", "new_secret", "parse_duration", "parse_grants",
]

PREFIX = "chg_"
"""How every token begins (a secret scanner can know it)."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
"""A token's name (its principal's): printable, short, no spaces."""
_NEEDLES = (TOKEN_STREAM.encode(),)
"""What every token event's stored record holds, whichever codec wrote it: its stream's text (a
record of codec 3 stores its tag as a number)."""
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class TokenRecord(msgspec.Struct, kw_only=True):
    """A token as the view holds it (never its secret)."""

    name: str
    digest: str
    grants: dict[str, str]
    created: int
    """µs: when it was issued"""
    expires: int | None = None
    """µs: when it stops working (None: never)"""
    revoked: int | None = None
    """µs: when it was revoked (None: it was not)"""

    def live(self, now: int) -> bool:
        """Whether it works at `now` (µs): not revoked, not expired."""
        return self.revoked is None and (self.expires is None or now < self.expires)

    def principal(self) -> Principal:
        """The principal it stands for."""
        grants: dict[str, Level] = {workspace: level for workspace, level in self.grants.items() if level in LEVELS}
        return Principal(self.name, grants)


class TokenView:
    """The tokens of one log, folded from their events."""

    def __init__(self) -> None:
        self.position = 0
        """The log position folded up to."""
        self.by_name: dict[str, TokenRecord] = {}
        self.by_digest: dict[str, TokenRecord] = {}

    def fold(self, envelope: Envelope) -> None:
        """Fold one event (any other than a token's changes nothing)."""
        event = envelope.event
        if isinstance(event, TokenIssued):
            record = TokenRecord(name=event.name, digest=event.digest, grants=dict(event.grants),
                                 created=envelope.recorded_at, expires=event.expires_at)
            self.by_name[event.name] = record
            self.by_digest[event.digest] = record
        elif isinstance(event, TokenRevoked) and event.name in self.by_name:
            self.by_name[event.name].revoked = envelope.recorded_at


def new_secret() -> str:
    """A new token: `chg_` and 32 random bytes, URL-safe base64."""
    return PREFIX + base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()


def digest_of(token: str) -> str:
    """The SHA-256 (hex) of a token: what the log keeps of it."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def parse_grants(given: list[str]) -> dict[str, str]:
    """`WORKSPACE=LEVEL` pairs as grants (`*` for every workspace).

    Raises:
        InvalidArgumentsError: If one is not such a pair, or names a workspace twice.
    """
    grants: dict[str, str] = {}
    for text in given:
        workspace, sign, level = text.partition("=")
        workspace, level = workspace.strip(), level.strip()
        if not sign or not workspace or level not in LEVELS:
            raise InvalidArgumentsError("token", f"--grant {text!r}: say WORKSPACE=LEVEL, LEVEL one of "
                                        f"{', '.join(LEVELS)} (WORKSPACE * grants every workspace)")
        if workspace in grants:
            raise InvalidArgumentsError("token", f"--grant {text!r}: workspace {workspace!r} is granted twice")
        grants[workspace] = level
    if not grants:
        raise InvalidArgumentsError("token", f"a token needs at least one --grant WORKSPACE=LEVEL "
                                    f"(e.g. --grant {ANY_WORKSPACE}=read)")
    return grants


LONGEST = 36_500 * 86_400
"""The longest --expires, in seconds: a century (a date past year 9999 cannot be written or read)."""


def parse_duration(text: str) -> int:
    """A duration such as `90d`, `12h`, `30m`, `2w` or `3600s`, in µs.

    Raises:
        InvalidArgumentsError: If it is not one, or not positive.
    """
    match = re.fullmatch(r"\s*(\d{1,9})\s*([smhdw])\s*", text)
    if match is None or int(match[1]) == 0:
        raise InvalidArgumentsError("token", f"--expires {text!r}: say a positive number and a unit: s, m, h, d "
                                    "or w (e.g. 90d)")
    seconds = int(match[1]) * _UNITS[match[2]]
    if seconds > LONGEST:
        raise InvalidArgumentsError("token", f"--expires {text!r}: at most {LONGEST // 86_400}d (a century); leave "
                                    "--expires out for a token that does not expire")
    return seconds * 1_000_000


class Tokens:
    """The tokens of a log: issue, revoke, list, and find the principal of a bearer token.

    `folded`, when given, says how far this process's views of a database log have come (the
    follower keeps them): the view folds that far and asks the log for nothing else.
    """

    def __init__(self, log: EventLog, *, folded: Callable[[], int] | None = None,
                 views: Views | None = None, lock: AbstractContextManager[Any] | None = None) -> None:
        self.log = log
        self._folded = folded
        self._views = views
        """The log's views, when it has them: appends go through them (they fold inline)."""
        self._writing = lock or nullcontext()
        self._view = TokenView()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, memory: Memory) -> Tokens:
        """The tokens of an open memory: written through its views under its lock; for a database
        store, folded as far as its views have come (caught up at the open, then by the follower),
        so that a request asks the database only when there is something new, and nothing while
        it cannot be reached."""
        folded = None
        if memory.cache is not None:
            with memory.lock, memory.views.env.read() as txn:
                opened = memory.views.tables.checkpoint(txn)
            folded = lambda: max(memory.followed, opened)  # noqa: E731
        return cls(memory.log, folded=folded, views=memory.views, lock=memory.lock)

    def _append(self, write: StreamWrite, actor: str) -> None:
        if self._views is None:
            self.log.append([write], actor=actor)
            return
        with self._writing:
            self._views.transact(lambda tx, _: tx.append([write], actor=actor))

    def view(self) -> TokenView:
        """The view, with whatever is new folded in."""
        with self._lock:
            view = self._view
            target = self._folded() if self._folded is not None else None
            if target is not None and target <= view.position:
                return view
            with self.log.read() as reader:
                head = reader.head() if target is None else target  # the views hold no more than the log
                if head > view.position:
                    for envelope in reader.mentions(_NEEDLES, view.position + 1):
                        if envelope.position > head:
                            break
                        view.fold(envelope)
                    view.position = head
            return view

    def any(self) -> bool:
        """Whether the log has any token (then every HTTP request must present a valid one)."""
        return bool(self.view().by_name)

    def principal(self, token: str, now: int | None = None) -> Principal | None:
        """The principal `token` stands for, None if it is unknown, revoked or expired."""
        if not token.startswith(PREFIX):
            return None
        digest = digest_of(token)
        record = self.view().by_digest.get(digest)
        if record is None or not hmac.compare_digest(record.digest, digest):
            return None
        return record.principal() if record.live(clock.now_us() if now is None else now) else None

    def records(self) -> list[TokenRecord]:
        """Every token ever issued, in name order (revoked and expired ones too)."""
        return sorted(self.view().by_name.values(), key=lambda record: record.name)

    def issue(self, name: str, grants: Mapping[str, str], *, expires_in: int | None = None,
              actor: str = "chronograph-token") -> str:
        """Issue a token to the principal `name`; return it (the only time it is seen).

        Raises:
            InvalidArgumentsError: If the name is not one (letters, digits, `._@-`; 64 at most), or is
                a built-in principal's (`principal.BUILT_IN`).
            DuplicateError: If a token of that name was ever issued (revoked ones keep their name,
                so that the audit's principal always means one token).
        """
        if NAME.fullmatch(name) is None:
            raise InvalidArgumentsError("token", f"name {name!r}: letters, digits and . _ @ -, starting with a "
                                        "letter or digit, 64 at most")
        if name.lower() in BUILT_IN:
            raise InvalidArgumentsError("token", f"name {name!r} is a built-in principal's (the local user's, or "
                                        "$CHRONOGRAPH_TOKEN's): the audit would not tell them apart; choose another")
        secret = new_secret()
        expires = None if expires_in is None else clock.now_us() + expires_in
        event = TokenIssued(name=name, digest=digest_of(secret), grants=dict(grants), expires_at=expires)
        try:
            self._append(StreamWrite(token_stream(name), [event], NO_STREAM), actor)
        except ConcurrencyError:
            raise DuplicateError(f"a token named {name!r} exists (or existed: a revoked token keeps its "
                                 "name); choose another name") from None
        return secret

    def revoke(self, name: str, *, actor: str = "chronograph-token") -> None:
        """Revoke the token `name`: it stops working on every server as soon as it folds this.

        Raises:
            NotFoundError: If no token of that name was issued.
            DuplicateError: If it was revoked already (nothing is written).
        """
        record = self.view().by_name.get(name)
        if record is None:
            raise NotFoundError(f"no token is named {name!r}; `chronograph token list` names them")
        if record.revoked is not None:
            raise DuplicateError(f"the token {name!r} was revoked already")
        version = 0
        with self.log.read() as reader:
            version = reader.stream_version(token_stream(name))
        self._append(StreamWrite(token_stream(name), [TokenRevoked(name=name)], version), actor)
