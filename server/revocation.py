"""Response streams that end when the token they were opened with stops being valid.

A request is authenticated when it arrives; a stream it opens (a `subscriptions/listen`, a
session's GET stream) may outlive its token's revocation or expiry, and so may a long call. Each
chunk such a stream sends after the first is let through only while the token is still valid (a
digest looked up in memory, ~13 µs); once it is not, the stream is closed in order and whatever
the server would have sent next is dropped. An answer sent whole (a tool call's JSON body) is
looked at as it starts: a token that stopped being valid while the call ran gets a 401 instead.
"""

from __future__ import annotations

import json
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
        if message["type"] == "http.response.start" and not await valid():
            closed = True
            body = json.dumps({"error": "the bearer token was revoked or expired while the request ran; its answer "
                                        "was withheld", "code": "unauthorized"}).encode()
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            raise Revoked("the request's token was revoked or expired")
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
