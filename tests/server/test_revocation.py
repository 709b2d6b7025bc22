"""A response stream lets a chunk through only while its token is valid, and then closes in order."""

from __future__ import annotations

from typing import Any

import pytest
from chronograph.server.revocation import Revoked, cut_when_invalid, revoked

pytestmark = pytest.mark.anyio


def sink() -> tuple[list[dict[str, Any]], Any]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    return sent, send


async def test_an_answer_sent_whole_goes_out_while_its_token_holds_and_is_a_401_once_it_does_not() -> None:
    for holds in (True, False):  # a long call's JSON body: the token was revoked while it ran, or not
        sent, send = sink()
        guarded = cut_when_invalid(send, lambda holds=holds: _answer(holds))
        start = {"type": "http.response.start", "status": 200, "headers": []}
        body = {"type": "http.response.body", "body": b'{"result": "the whole graph"}', "more_body": False}
        if holds:
            await guarded(start)
            await guarded(body)
            assert sent == [start, body]
            continue
        with pytest.raises(Revoked):
            await guarded(start)
        with pytest.raises(Revoked):  # the answer goes nowhere
            await guarded(body)
        assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
        assert sent[0]["status"] == 401 and b'"code": "unauthorized"' in sent[1]["body"]
        assert b"the whole graph" not in b"".join(m.get("body", b"") for m in sent)


async def _answer(value: bool) -> bool:
    return value


async def test_a_stream_is_closed_in_order_once_its_token_is_no_longer_valid() -> None:
    sent, send = sink()
    still = [True, True, True, False]  # the start, then each chunk after the first

    async def valid() -> bool:
        return still.pop(0)

    guarded = cut_when_invalid(send, valid)
    await guarded({"type": "http.response.start", "status": 200, "headers": []})
    await guarded({"type": "http.response.body", "body": b"event: 1\n\n", "more_body": True})
    await guarded({"type": "http.response.body", "body": b"event: 2\n\n", "more_body": True})
    with pytest.raises(Revoked):
        await guarded({"type": "http.response.body", "body": b"event: 3\n\n", "more_body": True})
    with pytest.raises(Revoked):  # whatever the application tries next goes nowhere
        await guarded({"type": "http.response.body", "body": b"event: 4\n\n", "more_body": True})
    assert [m.get("body") for m in sent[1:]] == [b"event: 1\n\n", b"event: 2\n\n", b""]
    assert sent[-1]["more_body"] is False


def test_revoked_is_told_alone_or_gathered_by_a_task_group_but_not_beside_another_failure() -> None:
    assert revoked(Revoked("x"))
    assert revoked(BaseExceptionGroup("tasks", [Revoked("x"), ExceptionGroup("inner", [Revoked("y")])]))
    assert not revoked(BaseExceptionGroup("tasks", [Revoked("x"), ValueError("a real failure")]))
    assert not revoked(RuntimeError("other"))
