"""The stdio front: a session's everyday requests answered before the MCP SDK is imported.

Importing the SDK takes most of a second (its protocol types are pydantic models built at
import), and most clients spawn a server per session: that second was most of the wait
for a first answer. The front reads the wire itself and answers what a session mostly
asks, the same way the SDK would:

- `initialize`, `server/discover`, `ping` and `tools/list` with the SDK's own answer,
  kept in the store by an earlier session for the same code, settings and protocol
  version (`ReplyCache`); `notifications/initialized`;
- `tools/call` of the profile's tools, through the same `Runtime.run` the SDK's handler
  calls, as the same result JSON (with the fields the SDK adds at that protocol version,
  `resultType` and `_meta` at 2026-07-28, learned from its own answers the same way).

Both generations of the protocol: a handshake (`initialize`, then requests), and the
stateless 2026-07-28 one, where each request names its protocol version and client in
`_meta` (the MCP Python SDK 2.x client speaks it).

Anything else (another method, a kept answer missing, a line that is not a plain
JSON-RPC request, a call the SDK would refuse before our handler) hands the session over:
the SDK is imported, hears the handshake again under an id of our own (its answer is
dropped, the client already has one) and serves the rest of the wire from the line that
needed it. Nothing is answered twice, nothing is lost.
"""

from __future__ import annotations

import os
import secrets
import sys
import traceback
from typing import Any, NamedTuple

import msgspec
from chronograph.application import ChronographError, profile
from chronograph.server.lines import CHUNK, Lines, Oversized
from chronograph.server.replies import ReplyCache
from chronograph.server.results import failure, plain
from chronograph.server.runtime import LOCAL, Runtime

__all__ = ["CLIENT", "HANDSHAKE", "KEPT", "PROTOCOL", "REPLAYED", "STATELESS", "Front", "Handover",
           "tool_result_extras"]

REPLAYED = f"chronograph-front-{secrets.token_hex(8)}"
"""The id under which the SDK hears a handshake the front already answered (no client's)."""
HANDSHAKE, STATELESS = "handshake", "stateless"
"""The protocol generations: `initialize` first, or each request naming its version (2026-07-28)."""
_ENVELOPE = frozenset({"jsonrpc", "id", "method", "params"})
KEPT = frozenset({"server/discover", "ping", "tools/list"})
"""Methods answered with the SDK's kept answer (when asked with no parameter but `_meta`)."""
PROTOCOL, CLIENT, CAPABILITIES = (f"io.modelcontextprotocol/{name}"
                                  for name in ("protocolVersion", "clientInfo", "clientCapabilities"))
_TOOL_RESULT = frozenset({"content", "structuredContent", "isError"})
OURS = "chronograph/"
"""The prefix of the `_meta` keys Chronograph sets on a tool result (an error's code)."""
_CALL_PARAMS = frozenset({"name", "arguments", "_meta"})
_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class Handover(NamedTuple):
    """Where the SDK takes over the wire."""

    replay: list[bytes]
    """What fixed the session's generation (the handshake, or a `server/discover` for the
    stateless protocol), for the SDK to hear first."""
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
        surface = profile(runtime.settings.profile)
        self.tools = {tool.name: tool for tool in surface.tools}
        self.errors = surface.errors
        self.schemas = surface.name == "official"
        """Whether the profile's tools declare output schemas (the official profile's do)."""
        self._handshake: list[bytes] = []
        self._generation: str | None = None
        """Fixed by the session's first request, as the SDK fixes it."""
        self._protocol: str | None = None
        """The version the handshake settled on."""
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
        except (msgspec.DecodeError, RecursionError):  # the transport answers what it cannot read
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not message.keys() <= _ENVELOPE:
            return False
        method, params = message.get("method"), message.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            return False
        if "_meta" in params and not isinstance(params["_meta"], dict):
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
        protocol, client = self._asker(params)
        if protocol is None:
            return False
        if method in KEPT and not params.keys() - {"_meta"}:
            kept = self.cache.get(method, protocol)
            if kept is not None:
                self._send(ident, kept)
            return kept is not None
        if method == "tools/call":
            return self._call(ident, params, protocol, client)
        return False

    def _asker(self, params: dict[str, Any]) -> tuple[str | None, str | None]:
        """("generation:version", client name) of a request: from its `_meta` (2026-07-28),
        else from the handshake once it is complete; (None, None) when the front cannot tell
        or the request is not of the session's generation (the SDK refuses those)."""
        meta = params.get("_meta")
        if isinstance(meta, dict) and PROTOCOL in meta:
            version, client = meta.get(PROTOCOL), meta.get(CLIENT)
            if (self._generation not in (None, STATELESS) or not isinstance(version, str) or not _is_client(client)
                    or not isinstance(meta.get(CAPABILITIES), dict)):
                return None, None
            if self._generation is None:  # should the SDK take over, it must serve this generation too
                self._generation = STATELESS
                discover = {"jsonrpc": "2.0", "id": REPLAYED, "method": "server/discover", "params": {"_meta": meta}}
                self._handshake.append(_encoder.encode(discover))
            assert isinstance(client, dict)
            return f"{STATELESS}:{version}", client["name"]
        if self._generation == HANDSHAKE and self._ready:
            return f"{HANDSHAKE}:{self._protocol}", self._client
        return None, None

    def _initialize(self, ident: str | int, params: dict[str, Any]) -> bool:
        version, client = params.get("protocolVersion"), params.get("clientInfo")
        if (self._generation is not None or not isinstance(version, str) or not _is_client(client)
                or not isinstance(params.get("capabilities"), dict)):
            return False  # the SDK judges anything unusual
        assert isinstance(client, dict)
        kept = self.cache.get("initialize", f"{HANDSHAKE}:{version}")  # by the version asked for
        settled = None if kept is None else _decoder.decode(kept).get("protocolVersion")
        if kept is None or not isinstance(settled, str):
            return False
        self._generation, self._protocol, self._client = HANDSHAKE, settled, client["name"]
        replayed = {"jsonrpc": "2.0", "id": REPLAYED, "method": "initialize", "params": params}
        self._handshake.append(_encoder.encode(replayed))
        self._send(ident, kept)
        return True

    def _call(self, ident: str | int, params: dict[str, Any], protocol: str, client: str | None) -> bool:
        name, arguments = params.get("name"), params.get("arguments", {})
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None or not isinstance(arguments, dict) or params.keys() - _CALL_PARAMS:
            return False  # the SDK's own refusals (unknown tool, malformed call)
        extras = self.cache.get("tools/call", protocol)
        if extras is None:
            return False  # what the SDK adds to a result at this version is not known yet
        runtime = self.runtime
        try:
            answer, _ = runtime.run(tool, arguments, runtime.actor(client), LOCAL, principal=runtime.principal)
            result = plain(*answer.wire(), meta=answer.meta)  # the JSON the size was checked on, as it is
        except ChronographError as error:
            text, structured, meta = failure(error, self.errors, schema=self.schemas)
            result = plain(text, structured, error=True, meta=meta)
        except Exception:  # what the SDK does with a failure that is not ours: log it, say little
            traceback.print_exc(file=sys.stderr)
            result = plain(f"Error executing tool {tool.name}", error=True)
        added = _without_ours(_decoder.decode(extras))  # what the SDK adds, never an answer of ours
        if "_meta" in result and "_meta" in added:  # ours (an error's code) beside the SDK's
            added["_meta"] = {**added["_meta"], **result["_meta"]}
        result.update(added)
        self._send(ident, _encoded(result))
        return True

    def _send(self, ident: str | int, result: bytes) -> None:
        line = b'{"jsonrpc":"2.0","id":' + _encoder.encode(ident) + b',"result":' + result + b"}\n"
        view = memoryview(line)
        while view:
            view = view[os.write(self.stdout, view):]


def tool_result_extras(result: dict[str, Any]) -> dict[str, Any] | None:
    """What the SDK adds to a successful tool result besides content, structured content and
    isError, without anything of ours; None for a refused call (its `_meta` is the error's: an
    answer to that call alone, which may quote what the store held)."""
    if result.get("isError") is not False:
        return None
    return _without_ours({key: value for key, value in result.items() if key not in _TOOL_RESULT})


def _without_ours(extras: dict[str, Any]) -> dict[str, Any]:
    """`extras` without the `_meta` keys Chronograph itself sets (`chronograph/...`)."""
    meta = extras.get("_meta")
    if isinstance(meta, dict) and any(key.startswith(OURS) for key in meta):
        extras = {**extras, "_meta": {key: value for key, value in meta.items() if not key.startswith(OURS)}}
    return extras


def _is_client(client: Any) -> bool:
    return isinstance(client, dict) and isinstance(client.get("name"), str) and isinstance(client.get("version"), str)


def _encoded(result: dict[str, Any]) -> bytes:
    try:
        return _encoder.encode(result)
    except UnicodeEncodeError:  # a lone surrogate: escape it, as the SDK transport does
        import json  # noqa: PLC0415

        return json.dumps(result, ensure_ascii=True, separators=(",", ":"), default=_raw).encode("ascii")


def _raw(value: Any) -> Any:
    """A reply's JSON kept as it is (`msgspec.Raw`), as plain data again."""
    if isinstance(value, msgspec.Raw):
        return _decoder.decode(value)
    raise TypeError(f"{type(value).__name__} is not JSON")
