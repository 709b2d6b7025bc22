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
import math
import os
import re
import signal
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


async def framed(chunks: AsyncIterator[bytes], limit: int, lines: Lines | None = None) -> AsyncIterator[bytes]:
    """The lines of a byte stream (see `Lines`), going on from `lines` if given."""
    lines = lines or Lines(limit)
    async for chunk in chunks:
        for line in lines.feed(chunk):
            yield line
    for line in lines.end():
        yield line


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[{]+|[\]}]+|[:,]|[^\s"\[\]{}:,]+')
"""JSON's tokens, a run of brackets as one (so a deep nesting is one token, not millions)."""
_UNREAD = object()


def top_level_id(text: str) -> Any:
    """The `id` of the JSON object `text` begins, read without parsing what it nests (too deep for
    the parser, or cut short); `_UNREAD` unless it is there, whole, and a string, number or null.

    Linear in the text, without recursion. Only a value followed by `,` or `}` counts, so that
    an id cut off by the end of the text (`"id": 7` of `"id": 78`) is never taken for another.
    """
    found: Any = _UNREAD
    depth, key, value, expect = 0, None, _UNREAD, "{"
    for match in _TOKEN.finditer(text):
        token = match.group()
        head = token[0]
        if depth == 0:
            if token != "{" and not token.startswith("{"):
                return found
            depth, expect = len(token), "key"
            if depth > 1:
                return found  # `{[`: not an object with keys
            continue
        if head in "[{":
            if depth == 1 and expect == "value":
                value, expect = _UNREAD, "comma"  # an object or array: no id of JSON-RPC's
            depth += len(token)
        elif head in "]}":
            depth -= len(token)
            if depth <= 1 and expect == "comma" and key == "id" and value is not _UNREAD:
                found = value
            if depth <= 0:
                return found
        elif depth > 1:
            continue
        elif token == ":":
            expect = "value" if expect == "colon" else "bad"
        elif token == ",":
            if expect == "comma" and key == "id" and value is not _UNREAD:
                found = value
            key, value, expect = None, _UNREAD, "key"
        elif expect == "key" and head == '"':
            key, expect = _json(token), "colon"
        elif expect == "value":
            value, expect = _json(token), "comma"
            if isinstance(value, bool) or not isinstance(value, str | int | float | None):
                value = _UNREAD
        else:
            expect = "bad"
    return found


def _json(token: str) -> Any:
    try:
        return json.loads(token)
    except ValueError:
        return _UNREAD


def _valid_id(request_id: Any) -> bool:
    """An id MCP allows (a string or an integer); JSON-RPC also allows null and fractions."""
    return isinstance(request_id, str | int) and not isinstance(request_id, bool)


def _echoable(request_id: Any) -> Any:
    """The id an answer repeats: the request's, if JSON-RPC lets it be one, else null."""
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | float):
        return None
    return None if isinstance(request_id, float) and not math.isfinite(request_id) else request_id


def refusal(code: int, message: str, request_id: Any = None) -> bytes:
    """The line answering a message the server never sees, under `request_id` (any JSON-RPC
    id, which the SDK's types cannot all hold: 2.5 and null among them)."""
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(error, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def parse_line(line: bytes, limit: int = MAX_LINE) -> SessionMessage | bytes:
    """A line as a message for the server, or as the line that answers it (an error).

    Every request is answered, under its id whenever the id can be read (JSON-RPC 2.0 asks
    for null only when it cannot): a line too long or too deeply nested to parse keeps the
    id its start carries; a request whose id MCP does not allow (null, 2.5) is refused
    under that id, where the SDK would have taken it for a notification and said nothing.
    """
    text = line.decode("utf-8", "surrogateescape")  # undecodable bytes reach the argument check
    if isinstance(line, Oversized):
        message = f"Invalid request: the message is longer than {limit:,} bytes (see --max-message)"
        return refusal(types.INVALID_REQUEST, message, _echoable(top_level_id(text)))
    try:
        data = json.loads(text)
    except RecursionError:
        message = "Parse error: the message nests deeper than the server reads"
        return refusal(types.PARSE_ERROR, message, _echoable(top_level_id(text)))
    except ValueError as error:  # the id counts only if it came whole before what broke
        read = top_level_id(text[: error.pos]) if isinstance(error, json.JSONDecodeError) else _UNREAD
        return refusal(types.PARSE_ERROR, f"Parse error: {str(error)[:200]}", _echoable(read))
    if isinstance(data, dict) and "method" in data and "id" in data and not _valid_id(data["id"]):
        message = "Invalid request: an id must be a string or an integer (MCP); a request with none is a notification"
        return refusal(types.INVALID_REQUEST, message, _echoable(data["id"]))
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(data, by_name=False))
    except (ValidationError, RecursionError):
        request_id = _echoable(data.get("id")) if isinstance(data, dict) else None
        return refusal(types.INVALID_REQUEST,
                       "Invalid request: not a JSON-RPC 2.0 request, notification or response", request_id)


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
    out = os.fdopen(stdout, "wb", buffering=1 << 16, closefd=False)
    """Written by the writer, and by the reader for the lines it refuses (each write whole, on
    the one event loop, so lines never interleave)."""
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
        async with read_in:
            async for line in source():
                if not line.strip():
                    continue  # a blank line says nothing
                message = parse_line(line, limit)
                if isinstance(message, bytes):  # the transport answers what it refuses
                    out.write(message)
                    out.flush()
                    continue
                request = message.message
                if isinstance(request, types.JSONRPCRequest):
                    unanswered.add(request.id)
                    if cache is not None:
                        note(request)
                await read_in.send(message)
            with anyio.move_on_after(DRAIN):  # stdin closed: answer what was asked, then stop
                while unanswered:
                    answered = anyio.Event()
                    await answered.wait()

    def keep(response: types.JSONRPCResponse | types.JSONRPCError) -> None:
        """Keep the SDK's answer in the cache before the client has it: a client that kills the
        server as soon as it has its answer (many do) must not leave the next spawn without it."""
        nonlocal settled
        asked = kept.pop(response.id, None)
        if asked is None or cache is None or not isinstance(response, types.JSONRPCResponse):
            return
        method, protocol = asked
        result = response.result
        if method == "initialize" and isinstance(result.get("protocolVersion"), str):
            settled = result["protocolVersion"]
        if protocol == HANDSHAKE:
            if not settled:
                return  # answered before any handshake: nothing to key it by
            protocol = f"{HANDSHAKE}:{settled}"
        if method == "tools/call":  # the front makes the result; it learns what the SDK adds
            extras = tool_result_extras(result)
            if extras is None:
                return  # a refusal says nothing about the protocol, only about its call
            result = extras
        cache.put(method, protocol, msgspec.json.encode(result))

    async def writer() -> None:
        async with write_out:
            async for message in write_out:
                response = message.message
                if not isinstance(response, types.JSONRPCResponse | types.JSONRPCError):
                    out.write(encode(message))
                    out.flush()
                    continue
                keep(response)
                if response.id != REPLAYED:  # the front answered that one already
                    out.write(encode(message))
                    out.flush()
                unanswered.discard(response.id)
                answered.set()

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_out, write_in
        finally:
            group.cancel_scope.cancel()


async def run_stdio(
    server: MCPServer, limit: int = MAX_LINE, *, fds: tuple[int, int] | None = None,
    handover: Handover | None = None, cache: ReplyCache | None = None, stop_on_signals: bool = False,
) -> None:
    """Serve `server` over the wire until the client closes stdin (see `stdio_streams`), or, with
    `stop_on_signals` (the main thread only), until SIGTERM or SIGINT asks it to stop: the
    session is cancelled in an orderly way, wherever it was."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (MCPServer.run_stdio_async with our transport)
    async with anyio.create_task_group() as group:
        if stop_on_signals:
            group.start_soon(_cancel_on_signals, group.cancel_scope)
        async with stdio_streams(limit, fds=fds, handover=handover, cache=cache) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()


async def _cancel_on_signals(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return
