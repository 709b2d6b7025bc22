"""The HTTP listener below the MCP endpoint: what it does with each connection it accepts."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from chronograph.server.listener import bind, server
from uvicorn import Server


async def streamed(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers as an MCP event stream does: the headers, then the body, then its end, each sent alone."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": b'event: message\r\ndata: {"ok":true}\r\n\r\n',
                "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


@pytest.fixture
def listening() -> Iterator[tuple[Server, int]]:
    sock = bind("127.0.0.1", 0)
    served = server(streamed)
    thread = threading.Thread(target=served.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not served.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the listener did not start"
        time.sleep(0.01)
    try:
        yield served, sock.getsockname()[1]
    finally:
        served.should_exit = True
        thread.join(30)
        sock.close()


def test_a_kept_alive_connection_answers_every_call_without_nagle_s_delay(listening: tuple[Server, int]) -> None:
    served, port = listening
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(20):  # sequential calls on one kept-alive connection
        client.request("POST", "/mcp", body=b"{}")
        reply = client.getresponse()
        assert reply.status == 200 and b'"ok":true' in reply.read()
    connections = list(served.server_state.connections)
    assert len(connections) == 1  # all twenty went over the one connection
    accepted = connections[0].transport.get_extra_info("socket")
    assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    client.close()
