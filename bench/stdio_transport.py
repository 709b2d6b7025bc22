"""A stdio client transport for benchmarks and harnesses: the SDK's, without its quadratic reader.

The SDK's stdio client joins every 64 KiB chunk to the whole pending line before
splitting it, so a reply of N bytes costs O(N^2 / 64 KiB): a 25 MB read_graph takes
tens of seconds in the client alone. This transport spawns the server the same way
and splits lines in linear time; the `mcp.Client` session on top is unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import Process
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

__all__ = ["linear_stdio_client"]


@asynccontextmanager
async def linear_stdio_client(
    server: StdioServerParameters, spawned: Callable[[Process], None] | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """Spawn `server` and yield (read_stream, write_stream) for an `mcp.Client`.

    `spawned(process)` is called with the server process (harnesses kill it).
    """
    process = await anyio.open_process(
        [server.command, *server.args],
        env=get_default_environment() | (server.env or {}),
        cwd=server.cwd,
        stderr=None,
        start_new_session=True,
    )
    if spawned is not None:
        spawned(process)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        assert process.stdout is not None
        pending = bytearray()
        async with read_writer:
            try:
                async for chunk in process.stdout:
                    start = len(pending)
                    pending += chunk
                    cut = 0
                    while (end := pending.find(b"\n", start)) != -1:
                        line = bytes(pending[cut:end])
                        try:
                            message: SessionMessage | Exception = SessionMessage(
                                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                            )
                        except Exception as error:  # a bad line is the session's to report
                            message = error
                        await read_writer.send(message)
                        cut = start = end + 1
                    del pending[:cut]
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    async def writer() -> None:
        assert process.stdin is not None
        async with write_reader:
            try:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                if process.stdin is not None:
                    await process.stdin.aclose()
                with anyio.move_on_after(5):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
                group.cancel_scope.cancel()
                await read_stream.aclose()
                await write_stream.aclose()

