"""A small MCP client over streamable HTTP for load benchmarks: raw HTTP/1.1 on one kept-alive
connection per session, so that the client costs the 2-core machine as little as it can.

The SDK's client (httpx, pydantic, anyio) would spend more CPU per call than the server,
which shares the machine: measured through it, the server looks slower than it is.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

PROTOCOL = "2025-06-18"


class Refused(Exception):
    """The server answered an HTTP status other than 200/202."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:200]!r}")
        self.status = status


class Connection:
    """One kept-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of one POST; the request goes out in one write."""
        if self.writer is None:
            await self.open()
        assert self.reader is not None and self.writer is not None
        lines = [f"POST {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(body)}",
                 "Content-Type: application/json", "Accept: application/json, text/event-stream",
                 *(f"{name}: {value}" for name, value in headers.items())]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        got = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                got[name.strip().lower()] = value.strip()
        if got.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            data = b"".join(parts)
        else:
            data = await self.reader.readexactly(int(got.get("content-length", "0")))
        if got.get("connection", "").lower() == "close":
            self.close()
        return status, got, data


def message_of(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The JSON-RPC answer in a reply: its JSON body, or the last `data:` of its event stream."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in body.decode().splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return json.loads(body)


class Session:
    """One MCP session (handshake protocol) on its own kept-alive connection."""

    def __init__(self, host: str, port: int, name: str = "bench") -> None:
        self.connection = Connection(host, port)
        self.name = name
        self.id: str | None = None
        self._next = 1

    async def initialize(self) -> None:
        """Open the session (`initialize`, then `notifications/initialized`).

        Raises:
            Refused: If the server refused the session (429 at the address's share).
        """
        status, headers, body = await self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": self.name, "version": "1"}}})
        if status != 200:
            raise Refused(status, body)
        self.id = headers["mcp-session-id"]
        status, _, body = await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if status not in (200, 202):
            raise Refused(status, body)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The result of one tools/call (an error result is returned, not raised).

        Raises:
            Refused: If the HTTP exchange failed.
        """
        self._next += 1
        status, headers, body = await self._post({"jsonrpc": "2.0", "id": self._next, "method": "tools/call",
                                                  "params": {"name": tool, "arguments": arguments}})
        if status != 200:
            raise Refused(status, body)
        message = message_of(headers, body)
        if "result" not in message:
            raise Refused(status, body)
        return message["result"]  # type: ignore[no-any-return]

    async def alive(self) -> bool:
        """Whether the session is still open (a ping in it is answered)."""
        status, _, _ = await self._post({"jsonrpc": "2.0", "id": -1, "method": "ping"})
        return status == 200

    async def _post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        headers = {"mcp-protocol-version": PROTOCOL}
        if self.id is not None:
            headers["mcp-session-id"] = self.id
        return await self.connection.post("/mcp", json.dumps(message).encode(), headers)

    def close(self) -> None:
        self.connection.close()
