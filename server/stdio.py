"""A faster stdio transport: stdin read from the event loop, stdout written directly.

The SDK's stdio transport hops to a worker thread for every line read and every line
written (six thread hops per tool call), which costs about as much as a durable LMDB
commit. Reading the pipe on the event loop and writing whole lines straight to the
descriptor keeps a tool call on one thread. Anything that is not a pipe (a file, a
terminal) falls back to the SDK's transport.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

__all__ = ["fast_stdio", "run_stdio"]

MAX_LINE = 256 * 1024 * 1024
"""Largest JSON-RPC message read from stdin."""


class _Lines:
    """The lines of a pipe, decoded as UTF-8, as the SDK reads them from a file."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


class _Out:
    """Whole lines written to a descriptor; a full pipe makes the writer wait, as it should."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(os.dup(fd), "wb", buffering=1 << 16)

    async def write(self, text: str) -> None:
        self._file.write(text.encode("utf-8"))

    async def flush(self) -> None:
        self._file.flush()


def _is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


@asynccontextmanager
async def fast_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """Like `mcp.server.stdio.stdio_server()`, on pipes without thread hops."""
    if not (_is_pipe(0) and _is_pipe(1)):
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(0), "rb", buffering=0)
    )
    out = _Out(1)
    # Stray writes to fd 1 would corrupt the wire: point it at stderr while we serve.
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        async with stdio_server(stdin=_Lines(reader), stdout=out) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        transport.close()
        os.dup2(saved, 1)
        os.close(saved)
        sys.stdout.flush()


async def run_stdio(server: MCPServer) -> None:
    """Serve `server` over stdin/stdout until the client closes them."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (MCPServer.run_stdio_async with our transport)
    async with fast_stdio() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
