"""What a commit announces on a log's NOTIFY channel, and how a follower reads it.

Every commit that appended announces the log's new head and its erasure count, as the text
"head erasures". Announcements of racing writers arrive in any order, several in one packet,
and both figures only grow: a follower takes the furthest of all it read, never the last.
"""

from __future__ import annotations

__all__ = ["State", "announcement", "announced", "furthest"]

State = tuple[int, int]
"""(head, erasure count)"""


def announcement(head: int, erasures: int) -> str:
    """The payload announcing `head` and `erasures`, as an SQL string literal."""
    return f"'{head} {erasures}'"


def announced(payload: str) -> State:
    """The (head, erasures) a payload announces (one without a count: 0 erasures)."""
    head, _, erasures = payload.partition(" ")
    return int(head), int(erasures or 0)


def furthest(*states: State | None) -> State | None:
    """The furthest head and highest erasure count of `states`, or None if none is known."""
    known = [state for state in states if state is not None]
    return (max(s[0] for s in known), max(s[1] for s in known)) if known else None
