"""Start-up state made ahead: the answers the stdio front serves, kept before any client asks.

The front (`server/front.py`) answers a session without importing the MCP SDK when the
store keeps the SDK's answers for the server's code, settings and protocol version
(`ReplyCache`). A store that has never served a session (just imported, copied, restored
or rebuilt) keeps none, so its first spawns paid for the SDK (half a second and more), and
so did every later one when a client killed its server before the answers were kept.
`prime` has the SDK answer, in this process, the requests a session begins with, at every
protocol version the SDK speaks (both generations), for the profiles most servers run; the
very same writer a session uses keeps them. What is kept is only ever the SDK's own answer,
keyed as the front looks it up, so it is never stale.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from collections.abc import Iterable
from functools import partial
from typing import Any

from chronograph.application import Memory
from chronograph.application.profiles import DEFAULT_PROFILE
from chronograph.server.config import Settings
from chronograph.server.front import CAPABILITIES, CLIENT, PROTOCOL
from chronograph.server.replies import ReplyCache

__all__ = ["PRIMED_PROFILES", "prime"]

PRIMED_PROFILES = (DEFAULT_PROFILE, "official")
"""The profiles whose answers a command that makes a store keeps (others are kept by their
first session, as before)."""
CLIENT_INFO = {"name": "chronograph-prime", "version": "1"}


def _line(ident: int | None, method: str, params: dict[str, Any]) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return json.dumps(message).encode() + b"\n"


def _sessions() -> list[bytes]:
    """One session per protocol version: its opening, tools/list, ping and a tool call that finds
    nothing (what the SDK adds to a successful result is kept from it)."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS  # noqa: PLC0415

    # open_nodes of a name no entity has: a search would load the whole word index (~1 GB at a
    # million entities) only to find nothing
    nothing = {"name": "open_nodes", "arguments": {"names": [f"chronograph-prime-{secrets.token_hex(8)}"]}}
    sessions = []
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        sessions.append(b"".join([
            _line(1, "initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO}),
            _line(None, "notifications/initialized", {}),
            _line(2, "tools/list", {}),
            _line(3, "ping", {}),
            _line(4, "tools/call", nothing),
        ]))
    for version in MODERN_PROTOCOL_VERSIONS:
        meta = {"_meta": {PROTOCOL: version, CLIENT: CLIENT_INFO, CAPABILITIES: {}}}
        sessions.append(b"".join([
            _line(1, "server/discover", meta),
            _line(2, "tools/list", meta),
            _line(3, "tools/call", {**nothing, **meta}),
        ]))
    return sessions


def prime(memory: Memory, profiles: Iterable[str] = PRIMED_PROFILES) -> int:
    """Keep the SDK's answers to a session's opening requests in `memory`'s store for `profiles`
    (without exports, as stdio servers mostly run); return how many sessions were answered.

    A read-only store, or an SDK whose version cannot be told, keeps nothing. Loads the MCP SDK.
    """
    import anyio  # noqa: PLC0415 (loaded with the SDK)
    from chronograph.server.app import create_server  # noqa: PLC0415 (the MCP SDK loads here)
    from chronograph.server.runtime import Runtime  # noqa: PLC0415

    if memory.log.readonly:
        return 0
    answered = 0
    for name in profiles:
        settings = Settings(store=memory.log.location, profile=name, embeddings="off")
        cache = ReplyCache(memory, settings)
        if cache.db is None:
            continue
        server = create_server(settings, Runtime.over(memory, settings))
        for wire in _sessions():
            _serve(server, wire, cache, anyio)
            answered += 1
    return answered


def _serve(server: Any, wire: bytes, cache: ReplyCache, anyio: Any) -> None:
    """Serve one session whose requests are `wire` (then stdin closes), its answers dropped."""
    from chronograph.server.stdio import run_stdio  # noqa: PLC0415

    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    drained = threading.Thread(target=_drain, args=(stdout_read,), daemon=True)
    drained.start()
    try:
        os.write(stdin_write, wire)  # a few KB: the pipe takes them whole
        os.close(stdin_write)
        stdin_write = -1
        anyio.run(partial(run_stdio, server, fds=(stdin_read, stdout_write), cache=cache))
    finally:
        for fd in (stdin_write, stdin_read, stdout_write):
            if fd >= 0:
                os.close(fd)
        drained.join()
        os.close(stdout_read)


def _drain(fd: int) -> None:
    while os.read(fd, 1 << 16):
        pass
