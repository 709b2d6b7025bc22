"""The stdio front: a session's everyday requests answered before the MCP SDK is imported.

Importing the SDK takes most of a second (its protocol types are pydantic models built at
import), and most clients spawn a server per session: that second was most of the wait
for a first answer. The front reads the wire itself and answers what a session mostly
asks, the same way the SDK would:

- `initialize` and `tools/list` with the SDK's own answer, kept in the store by an
  earlier session for the same code and settings (`ReplyCache`);
- `ping`, `notifications/initialized`;
- `tools/call` of the profile's tools, through the same `Runtime.run` the SDK's handler
  calls, as the same result JSON.

Anything else (another method, a kept answer missing, a line that is not a plain
JSON-RPC request, a call the SDK would refuse before our handler) hands the session over:
the SDK is imported, hears the handshake again under an id of our own (its answer is
dropped, the client already has one) and serves the rest of the wire from the line that
needed it. Nothing is answered twice, nothing is lost.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, NamedTuple

import msgspec
from chronograph.application import ChronographError, profile
from chronograph.server.lines import CHUNK, Lines, Oversized
from chronograph.server.replies import ReplyCache
from chronograph.server.results import plain
from chronograph.server.runtime import Runtime

__all__ = ["REPLAYED", "Front", "Handover"]

REPLAYED = "chronograph-front-initialize"
"""The id under which the SDK hears a handshake the front already answered."""
_ENVELOPE = frozenset({"jsonrpc", "id", "method", "params"})
_CALL_PARAMS = frozenset({"name", "arguments", "_meta"})
_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class Handover(NamedTuple):
    """Where the SDK takes over the wire."""

    replay: list[bytes]
    """The handshake the front answered, for the SDK to hear first."""
    lines: list[bytes]
    """Lines read and not answered, first the one that needs the SDK."""
    rest: Lines
    """The wire goes on from here."""
    ended: bool
    """stdin is closed: nothing follows `lines`."""


class Front:
    """Serves one stdio session on `runtime` until it needs the SDK."""

    def __init__(self, runtime: Runtime, cache: ReplyCache, stdin: int, stdout: int, limit: int) -> None:
        self.runtime = runtime
        self.cache = cache
        self.stdin, self.stdout = stdin, stdout
        self.limit = limit
        self.tools = {tool.name: tool for tool in profile(runtime.settings.profile).tools}
        self._handshake: list[bytes] = []
        self._protocol: str | None = None
        self._client: str | None = None
        self._ready = False

    def serve(self) -> Handover | None:
        """Answer until stdin closes (None) or a line needs the SDK (where it takes over)."""
        lines = Lines(self.limit)
        while True:
            chunk = os.read(self.stdin, CHUNK)
            batch = lines.feed(chunk) if chunk else lines.end()
            for at, line in enumerate(batch):
                if not self._answer(line):
                    return Handover(self._handshake, batch[at:], lines, ended=not chunk)
            if not chunk:
                return None

    def _answer(self, line: bytes) -> bool:
        """Answer `line` (True), or leave it to the SDK (False)."""
        if not line.strip():
            return True  # a blank line says nothing
        if isinstance(line, Oversized):
            return False
        try:
            message = _decoder.decode(line)
        except msgspec.DecodeError:
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not message.keys() <= _ENVELOPE:
            return False
        method, params = message.get("method"), message.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            return False
        if "id" not in message:
            if method == "notifications/initialized" and self._protocol is not None and not self._ready:
                self._handshake.append(line)
                self._ready = True
                return True
            return False
        ident = message["id"]
        if not isinstance(ident, str | int) or isinstance(ident, bool):
            return False
        if method == "initialize":
            return self._initialize(ident, params)
        if method == "ping" and not params.keys() - {"_meta"}:
            self._send(ident, b"{}")
            return True
        if not self._ready:
            return False
        if method == "tools/list" and not params.keys() - {"_meta"}:
            assert self._protocol is not None
            kept = self.cache.get("tools/list", self._protocol)
            if kept is not None:
                self._send(ident, kept)
            return kept is not None
        if method == "tools/call":
            return self._call(ident, params)
        return False

    def _initialize(self, ident: str | int, params: dict[str, Any]) -> bool:
        version, client = params.get("protocolVersion"), params.get("clientInfo")
        if (self._protocol is not None or not isinstance(version, str) or not isinstance(client, dict)
                or not isinstance(params.get("capabilities"), dict)
                or not isinstance(client.get("name"), str) or not isinstance(client.get("version"), str)):
            return False  # the SDK judges anything unusual
        kept = self.cache.get("initialize", version)
        if kept is None:
            return False
        self._protocol, self._client = version, client["name"]
        replayed = {"jsonrpc": "2.0", "id": REPLAYED, "method": "initialize", "params": params}
        self._handshake.append(_encoder.encode(replayed))
        self._send(ident, kept)
        return True

    def _call(self, ident: str | int, params: dict[str, Any]) -> bool:
        tool = self.tools.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments", {})
        if tool is None or not isinstance(arguments, dict) or params.keys() - _CALL_PARAMS:
            return False  # the SDK's own refusals (unknown tool, malformed call)
        runtime = self.runtime
        try:
            (text, structured), _ = runtime.run(tool, arguments, runtime.actor(self._client))
            result = plain(text, structured)
        except ChronographError as error:
            result = plain(str(error), error=True)
        except Exception:  # what the SDK does with a failure that is not ours: log it, say little
            traceback.print_exc(file=sys.stderr)
            result = plain(f"Error executing tool {tool.name}", error=True)
        self._send(ident, _encoded(result))
        return True

    def _send(self, ident: str | int, result: bytes) -> None:
        line = b'{"jsonrpc":"2.0","id":' + _encoder.encode(ident) + b',"result":' + result + b"}\n"
        view = memoryview(line)
        while view:
            view = view[os.write(self.stdout, view):]


def _encoded(result: dict[str, Any]) -> bytes:
    try:
        return _encoder.encode(result)
    except UnicodeEncodeError:  # a lone surrogate: escape it, as the SDK transport does
        import json  # noqa: PLC0415

        return json.dumps(result, ensure_ascii=True, separators=(",", ":")).encode("ascii")
