"""The stdio transport: JSON-RPC lines on stdin and stdout, every line answered.

Lines are read on the event loop (the SDK's transport hops to a worker thread for every
line read and written, six hops per tool call, which costs about as much as a durable
LMDB commit) and split here, so that no line goes unanswered: a line that is not JSON
gets a parse error with id null, a message that is not valid JSON-RPC an invalid-request
error with its id when it has one, a line over the size limit an error (and the server
reads on), bytes that are not UTF-8 reach the tools as text the argument check refuses,
naming the field. A client that sends a lone surrogate gets an answer it can decode.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from chronograph.server.config import MAX_MESSAGE
from chronograph.server.front import HANDSHAKE, KEPT, PROTOCOL, REPLAYED, STATELESS, Handover, tool_result_extras
from chronograph.server.lines import CHUNK, Lines, Oversized, wire
from chronograph.server.replies import ReplyCache
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["MAX_LINE", "Oversized", "framed", "parse_line", "run_stdio", "stdio_streams"]

MAX_LINE = MAX_MESSAGE
DRAIN = 60.0
"""Seconds the requests read before stdin closed may take to be answered before the server exits."""
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')


async def framed(chunks: AsyncIterator[bytes], limit: int, lines: Lines | None = None) -> AsyncIterator[bytes]:
    """The lines of a byte stream (see `Lines`), going on from `lines` if given."""
    lines = lines or Lines(limit)
    async for chunk in chunks:
        for line in lines.feed(chunk):
            yield line
    for line in lines.end():
        yield line


def _error(code: int, message: str, request_id: Any = None) -> SessionMessage:
    return SessionMessage(types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message),
    ))


def parse_line(line: bytes, limit: int = MAX_LINE) -> tuple[SessionMessage, bool]:
    """A line as (a message for the server, False), or as (the error reply it deserves, True)."""
    if isinstance(line, Oversized):
        found = _ID.search(line)
        request_id = json.loads(found.group(1)) if found else None
        message = f"Invalid request: the message is longer than {limit:,} bytes (see --max-message)"
        return _error(types.INVALID_REQUEST, message, request_id), True
    text = line.decode("utf-8", "surrogateescape")  # undecodable bytes reach the argument check
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        return _error(types.PARSE_ERROR, f"Parse error: {str(error)[:200]}"), True
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(data, by_name=False)), False
    except (ValidationError, RecursionError):
        request_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            request_id = None
        reply = _error(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or response",
                       request_id)
        return reply, True


def encode(message: SessionMessage) -> bytes:
    """The line that carries `message`, always valid UTF-8 (lone surrogates escaped)."""
    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        data = message.message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """What arrives on `fd`: read on the event loop from a pipe, in a thread from a file."""
    if _is_pipe(fd):
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=CHUNK)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0, closefd=False)
        )
        try:
            while chunk := await reader.read(CHUNK):
                yield chunk
        finally:
            transport.close()
    else:
        while chunk := await anyio.to_thread.run_sync(os.read, fd, CHUNK):
            yield chunk


Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
Kept = tuple[str, str]
"""(method, protocol version) of a request whose answer the reply cache keeps."""


@asynccontextmanager
async def stdio_streams(
    limit: int = MAX_LINE, *, fds: tuple[int, int] | None = None, handover: Handover | None = None,
    cache: ReplyCache | None = None,
) -> AsyncIterator[Streams]:
    """The server's read and write streams over the wire: this process's stdin and stdout, or
    `fds` (see `lines.wire`), going on from where the front handed over if it did.

    With a `cache`, the SDK's answers to `initialize` and `tools/list` are kept in it.
    """
    with ExitStack() as stack:
        stdin, stdout = fds if fds is not None else stack.enter_context(wire())
        async with _streams(stdin, stdout, limit, handover, cache) as streams:
            yield streams


@asynccontextmanager
async def _streams(
    stdin: int, stdout: int, limit: int, handover: Handover | None, cache: ReplyCache | None
) -> AsyncIterator[Streams]:
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    replies = write_in.clone()
    unanswered: set[Any] = set()
    kept: dict[Any, Kept] = {}
    settled = ""
    """The protocol version the handshake settled on (its answer precedes every other)."""
    answered = anyio.Event()

    async def source() -> AsyncIterator[bytes]:
        rest = None
        if handover is not None:
            for line in [*handover.replay, *handover.lines]:
                yield line
            if handover.ended:
                return
            rest = handover.rest
        async for line in framed(_chunks(stdin), limit, rest):
            yield line

    def note(request: types.JSONRPCRequest) -> None:
        """Remember which answers to keep for the front, and under which protocol."""
        params = request.params or {}
        meta = params.get("_meta")
        asked = meta.get(PROTOCOL) if isinstance(meta, dict) else None
        wanted = request.method == "tools/call" or (request.method in KEPT and not params.keys() - {"_meta"})
        if request.method == "initialize" and isinstance(params.get("protocolVersion"), str):
            kept[request.id] = ("initialize", f"{HANDSHAKE}:{params['protocolVersion']}")
        elif isinstance(asked, str):
            if wanted:
                kept[request.id] = (request.method, f"{STATELESS}:{asked}")
        elif wanted:  # a handshake's request: its version is the one the handshake settles on
            kept[request.id] = (request.method, HANDSHAKE)

    async def reader() -> None:
        nonlocal answered
        async with read_in, replies:
            async for line in source():
                if not line.strip():
                    continue  # a blank line says nothing
                message, reply = parse_line(line, limit)
                request = message.message
                if isinstance(request, types.JSONRPCRequest):
                    unanswered.add(request.id)
                    if cache is not None:
                        note(request)
                await (replies if reply else read_in).send(message)  # the transport answers what it refuses
            with anyio.move_on_after(DRAIN):  # stdin closed: answer what was asked, then stop
                while unanswered:
                    answered = anyio.Event()
                    await answered.wait()

    async def writer() -> None:
        nonlocal settled
        out = os.fdopen(stdout, "wb", buffering=1 << 16, closefd=False)
        async with write_out:
            async for message in write_out:
                response = message.message
                if not isinstance(response, types.JSONRPCResponse | types.JSONRPCError):
                    out.write(encode(message))
                    out.flush()
                    continue
                if response.id != REPLAYED:  # the front answered that one already
                    out.write(encode(message))
                    out.flush()
                unanswered.discard(response.id)
                answered.set()
                asked = kept.pop(response.id, None)
                if asked is not None and cache is not None and isinstance(response, types.JSONRPCResponse):
                    method, protocol = asked
                    result = response.result
                    if method == "initialize" and isinstance(result.get("protocolVersion"), str):
                        settled = result["protocolVersion"]
                    if protocol == HANDSHAKE:
                        if not settled:
                            continue  # answered before any handshake: nothing to key it by
                        protocol = f"{HANDSHAKE}:{settled}"
                    if method == "tools/call":  # the front makes the result; it learns what the SDK adds
                        extras = tool_result_extras(result)
                        if extras is None:
                            continue  # a refusal says nothing about the protocol, only about its call
                        result = extras
                    cache.put(method, protocol, msgspec.json.encode(result))

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_out, write_in
        finally:
            group.cancel_scope.cancel()


async def run_stdio(
    server: MCPServer, limit: int = MAX_LINE, *, fds: tuple[int, int] | None = None,
    handover: Handover | None = None, cache: ReplyCache | None = None,
) -> None:
    """Serve `server` over the wire until the client closes stdin (see `stdio_streams`)."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (MCPServer.run_stdio_async with our transport)
    async with stdio_streams(limit, fds=fds, handover=handover, cache=cache) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
