"""Response streams that end when the token they were opened with stops being valid.

A request is authenticated when it arrives; a stream it opens (a `subscriptions/listen`, a
session's GET stream, a tool call answered as server-sent events) may outlive its token's
revocation or expiry. Each chunk such a stream sends after the first is let through only
while the token is still valid (a digest looked up in memory, ~13 µs); once it is not, the
stream is closed in order and whatever the server would have sent next is dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import Message, Send

__all__ = ["Revoked", "cut_when_invalid", "revoked"]


class Revoked(Exception):  # noqa: N818 (an event, as the SDK's transports name a client gone away)
    """The token a response stream was opened with is no longer valid: the stream was closed."""


def cut_when_invalid(send: Send, valid: Callable[[], Awaitable[bool]]) -> Send:
    """`send`, closing the response instead of sending a further chunk once `valid()` says no.

    A chunk that would have gone out after that raises `Revoked` in the application, as a
    client that went away would (its stream's task ends)."""
    closed = False

    async def guarded(message: Message) -> None:
        nonlocal closed
        if closed:
            raise Revoked("the stream's token was revoked or expired")
        if message["type"] == "http.response.body" and message.get("more_body", False) and not await valid():
            closed = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            raise Revoked("the stream's token was revoked or expired")
        await send(message)

    return guarded


def revoked(error: BaseException) -> bool:
    """Whether `error` is, or only holds, `Revoked` (a task group gathers what its tasks raised)."""
    if isinstance(error, Revoked):
        return True
    if isinstance(error, BaseExceptionGroup):
        return all(revoked(inner) for inner in error.exceptions)
    return False
