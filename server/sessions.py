"""The MCP sessions open over HTTP, counted per client address, the least recently used
idle one closed to make room.

Sessions are seen from outside the SDK: an opening (`initialize` without a session id)
is admitted, and its place reserved, before it reaches the SDK, in one step with no
`await` between the count and the reservation, so that openings arriving together are
counted together; the session id is learnt from the response, and the session belongs to
the principal that opened it: a request naming it with another principal's token is answered
as one naming no session it knows (404). Every request naming a session marks it busy until
answered (an open GET stream keeps it busy), and moves it
to the back of the line. When an address holds its share, or the server its total, a
new session takes the place of the least recently used session that is idle (of that
address first), which is closed as its client would close it (DELETE /mcp). Only when
every one is busy is the opening refused. One client that opens session after session
therefore costs the others on its address their idle sessions at worst (MCP clients
open a new one on 404), never their ability to connect.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

__all__ = ["Admission", "Sessions"]


@dataclass
class _Session:
    address: str
    owner: str = ""
    """The principal that opened it: the only one whose requests it answers."""
    busy: int = 0
    """Requests of the session being answered now."""
    seen: float = 0.0
    """When a request of it last began or ended (monotonic)."""


@dataclass(frozen=True)
class Admission:
    """What `Sessions.admit` decided."""

    admitted: bool
    evict: tuple[str, ...] = ()
    """Sessions to close before the new one opens."""
    reason: str = ""
    """Why not, when not admitted."""


class Sessions:
    """The sessions each address holds, in least recently used order."""

    def __init__(self, per_address: int, total: int, idle: float) -> None:
        self.per_address = per_address
        self.total = total
        self.idle = idle
        self._held: dict[str, _Session] = {}
        """Open sessions, least recently used first (dicts keep insertion order)."""
        self._count: Counter[str] = Counter()
        self._pending: Counter[str] = Counter()
        """Openings admitted whose session id is not known yet, per address."""

    def admit(self, address: str) -> Admission:
        """Reserve a place for a new session from `address`, naming the idle sessions to close for it."""
        self._expire()
        evict: list[str] = []
        if self._count[address] + self._pending[address] >= self.per_address:
            victim = self._least_recent(address)
            if victim is None:
                return Admission(False, reason=f"this address holds {self.per_address} MCP sessions, all busy")
            evict.append(victim)
        if len(self._held) + self._pending.total() >= self.total:
            victim = self._least_recent(None)
            if victim is None:
                for session in evict:  # undo: nothing is closed for an opening that is refused
                    self._held[session].busy -= 1
                return Admission(False, reason=f"the server holds {self.total} MCP sessions, all busy")
            evict.append(victim)
        for session in evict:
            self._forget(session)
        self._pending[address] += 1
        return Admission(True, tuple(evict))

    def opened(self, address: str, session: str, owner: str = "") -> None:
        """The opening admitted for `address` became `session`, opened by the principal `owner`
        (busy until its answer is sent)."""
        self._release(address)
        self._held[session] = _Session(address, owner, busy=1, seen=time.monotonic())
        self._count[address] += 1

    def owned_by(self, session: str, owner: str) -> bool:
        """Whether `owner` may use `session`: the principal that opened it (one not open here is
        left to the SDK, which does not know it either)."""
        held = self._held.get(session)
        return held is None or held.owner == owner

    def abandoned(self, address: str) -> None:
        """The opening admitted for `address` opened nothing."""
        self._release(address)

    def began(self, session: str) -> None:
        """A request of `session` is being answered."""
        held = self._held.pop(session, None)
        if held is not None:
            held.busy += 1
            held.seen = time.monotonic()
            self._held[session] = held  # now the most recently used

    def ended(self, session: str) -> None:
        """A request of `session` was answered."""
        held = self._held.get(session)
        if held is not None:
            held.busy = max(0, held.busy - 1)
            held.seen = time.monotonic()

    def closed(self, session: str) -> None:
        """`session` ended (its client's DELETE)."""
        if session in self._held:
            self._forget(session)

    def held(self, address: str) -> int:
        """Sessions `address` holds or is opening."""
        return self._count[address] + self._pending[address]

    def _least_recent(self, address: str | None) -> str | None:
        """The least recently used idle session (of `address`, if given), marked busy so that
        no other admission picks it too; None if there is none."""
        for session, held in self._held.items():
            if held.busy == 0 and (address is None or held.address == address):
                held.busy += 1
                return session
        return None

    def _forget(self, session: str) -> None:
        held = self._held.pop(session)
        self._count[held.address] -= 1
        if not self._count[held.address]:
            del self._count[held.address]

    def _release(self, address: str) -> None:
        self._pending[address] -= 1
        if self._pending[address] <= 0:
            del self._pending[address]

    def _expire(self) -> None:
        """Forget sessions idle past the SDK's idle timeout: it has closed them itself."""
        cutoff = time.monotonic() - self.idle
        for session in [s for s, held in self._held.items() if not held.busy and held.seen < cutoff]:
            self._forget(session)
