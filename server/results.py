"""Tool results: outputs as structured content and as the official text block.

The text is the JSON pretty-printed with two-space indent, byte for byte what the
official server's `JSON.stringify(x, null, 2)` prints; msgspec formats it in C, which
matters for a read_graph of fifty thousand entities. Chronograph's own profiles print the
same JSON compact (`Profile.compact`): a third fewer tokens for the model that reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec
from chronograph.application import ReplyTooLargeError
from chronograph.application.core.entities import AddObservationsOut
from chronograph.application.engine.budget import entities_of, page_fit
from chronograph.application.engine.outputs import DeletedOut, EntitiesOut, ObjectOut, RelationsOut, official_shape
from chronograph.application.engine.turns import encoded, formatted
from chronograph.application.errors import ChronographError

if TYPE_CHECKING:
    from mcp_types import CallToolResult

__all__ = ["Reply", "check_text_size", "error_reply", "plain", "pretty", "reply", "result", "text_of"]



class Reply:
    """A successful call's text block, structured content and `_meta` (None: none), iterable as
    those three; with the JSON of the first two, encoded once to check the reply's size, for a
    transport that writes the wire itself to send as they are (`wire`)."""

    __slots__ = ("_structured", "_value", "meta", "raw", "text", "text_json")

    def __init__(self, text: str, value: Any, meta: dict[str, Any] | None, text_json: bytes, raw: bytes) -> None:
        self.text = text
        self._value = value
        self._structured: Any = _PENDING
        self.meta = meta
        self.text_json = text_json
        """The text as a JSON string."""
        self.raw = raw
        """The structured content as JSON."""

    @property
    def structured(self) -> Any:
        """The structured content as plain data (made when first asked for: the SDK's path)."""
        if self._structured is _PENDING:
            self._structured = msgspec.to_builtins(self._value)
        return self._structured

    def __iter__(self) -> Iterator[Any]:
        return iter((self.text, self.structured, self.meta))

    def wire(self) -> tuple[msgspec.Raw, msgspec.Raw]:
        """(text, structured content) as they go in a result that `msgspec` encodes: their JSON."""
        return msgspec.Raw(self.text_json), msgspec.Raw(self.raw)


_PENDING = object()

ASIDE_META = "chronograph/{}"
"""The `_meta` key of an output field a reference-shaped profile sets aside (`chronograph/gone`)."""

OFFICIAL_DELETED = {
    "delete_entities": "Entities deleted successfully",
    "delete_observations": "Observations deleted successfully",
    "delete_relations": "Relations deleted successfully",
}
"""What the official server says after each deletion, whatever it deleted."""

_encoder = msgspec.json.Encoder()


def pretty(value: Any) -> str:
    """JSON with two-space indent, non-ASCII kept: what JSON.stringify(value, null, 2) prints."""
    return formatted(value)  # in turns: a whole graph's text would hold the GIL ~40 ms


def text_of(output: msgspec.Struct) -> str:
    """The text block the official server prints for an output of this shape."""
    if isinstance(output, DeletedOut):
        return output.message
    return pretty(_printed(output))


def _printed(output: msgspec.Struct) -> Any:
    """What of `output` the text block prints (as JSON)."""
    if isinstance(output, EntitiesOut):
        return output.entities
    if isinstance(output, RelationsOut):
        return output.relations
    if isinstance(output, AddObservationsOut):
        return output.results
    if isinstance(output, ObjectOut):
        return output.reply
    return output


def error_reply(error: ChronographError, style: str = "text") -> tuple[str, dict[str, Any]]:
    """A refused call's text and the object that says it with its machine-readable code.

    "text" keeps the error's own words as the text (what the official server prints); the
    other styles print the JSON object of the server a profile mirrors: Agent Memory's
    {"error"}, the workspace server's {"success": false, "message"}, Kuzu's and n2n's
    {"status": "error", "message"}, each with our `code` and any details (a lock's holder).
    """
    message, details = str(error), getattr(error, "details", {})
    if style == "agent-memory":
        shaped = {"error": message, "code": error.code, **details}
    elif style == "workspace":
        shaped = {"success": False, "message": message, "code": error.code, **details}
    elif style in ("kuzu", "n2n"):
        shaped = {"status": "error", "message": message, "code": error.code, **details}
    else:
        return message, {"code": error.code, "message": message, **details}
    return pretty(shaped), shaped


def reply(output: msgspec.Struct, *, tool: str = "", limit: int | None = None, exact: bool = False,
          compact: bool = False) -> Reply:
    """`output` as the official text block and as structured content.

    With `exact` (a profile that keeps the reference server's shape), entities and relations
    are in the official shape (`official_shape`), a deletion says what the official server
    says, and the fields the output sets aside (its `ASIDE`; a deletion's `notFound`) go to
    `_meta` instead. With `compact` (Chronograph's own profiles), the text block is the JSON
    the official server prints, without its two-space indentation.

    Raises:
        ReplyTooLargeError: If the two would take more than `limit` bytes on the wire.
    """
    meta: dict[str, Any] | None = None
    if exact:
        aside = {name: value for name in getattr(output, "ASIDE", ())
                 if (value := getattr(output, name)) is not msgspec.UNSET}
        if isinstance(output, DeletedOut) and tool in OFFICIAL_DELETED:
            aside = {} if output.not_found is msgspec.UNSET else {"not_found": output.not_found}
            output = DeletedOut(success=output.success, message=OFFICIAL_DELETED[tool])
        elif aside:
            output = msgspec.structs.replace(output, **dict.fromkeys(aside, msgspec.UNSET))
        if aside:
            meta = {ASIDE_META.format(_camel(name)): msgspec.to_builtins(value) for name, value in aside.items()}
        output = official_shape(output)
    value = output.reply if isinstance(output, ObjectOut) else output
    raw = encoded(value)  # each form encoded once: the size is theirs, and a transport sends them
    printed = _printed(output)  # (each in turns, so that other threads' calls get the GIL between slices)
    if isinstance(output, DeletedOut):
        text = output.message
    elif compact:
        text = (raw if printed is value else encoded(printed)).decode()
    elif printed is value:
        text = formatted(value, raw)
    else:
        text = pretty(printed)
    text_json = encoded(text)
    if limit is not None:
        size = len(text_json) + len(raw)
        if size > limit:
            raise ReplyTooLargeError(tool, size, limit, _hint(tool, output, size, limit))
    return Reply(text, value, meta, text_json, raw)


def _camel(name: str) -> str:
    """A field's name as the wire spells it (not_found: notFound)."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def result(text: str, structured: Any, meta: dict[str, Any] | None = None) -> CallToolResult:
    """The SDK's tool result for a reply."""
    from mcp_types import CallToolResult, TextContent  # noqa: PLC0415 (the SDK loads only where it serves)

    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                          _meta=meta)


def plain(text: Any, structured: Any = None, *, error: bool = False, meta: Any = None) -> dict[str, Any]:
    """The JSON of a tool result, as the SDK writes `result` (or an error result) on the wire."""
    content: dict[str, Any] = {"content": [{"text": text, "type": "text"}], "isError": error}
    if structured is not None:
        content["structuredContent"] = structured
    if meta is not None:
        content["_meta"] = meta
    return content


ERROR_META = "chronograph/error"
"""The `_meta` key of a refused call's {"code", "message"}, in every profile."""


def failure(error: ChronographError, style: str, *, schema: bool) -> tuple[str, dict[str, Any] | None, dict[str, Any]]:
    """A refused call as (text, structured content, _meta). The code rides in `_meta` always
    and in the structured content unless the tool declares an output schema: the TypeScript
    SDK client validates an error's structured content against it too."""
    text, shaped = error_reply(error, style)
    meta = {ERROR_META: {"code": error.code, "message": str(error)}}
    return text, None if schema else shaped, meta


def check_text_size(what: str, text: str, limit: int | None, hint: str) -> str:
    """`text` if its JSON string fits in `limit` bytes.

    Raises:
        ReplyTooLargeError: If it does not.
    """
    if limit is not None:
        size = len(_encoder.encode(text))
        if size > limit:
            raise ReplyTooLargeError(what, size, limit, hint)
    return text


def _hint(tool: str, output: Any, size: int, limit: int) -> str:
    """What to ask instead: a page size measured on the answer itself (see `page_fit`), or, when
    not even its first entity fits alone, a smaller shape of each entity."""
    if tool == "export_graph":
        return "Export with the CLI instead: chronograph export --format ... -o FILE."
    if not entities_of(output):
        return "Ask for less (a smaller limit, a narrower filter)."
    fit = page_fit(output, size, limit)
    if fit < 1:
        shapes = "summaryMode true gives names and types only" + (
            "" if tool == "search_nodes" else ", and search_nodes with its name as the query and observationsLimit "
            "some of its observations")
        if tool == "search_nodes":
            return ("Not even the first entity of this answer fits on its own: observationsLimit keeps the best "
                    f"matching observations of each entity (a smaller one, if it was set); {shapes}.")
        if tool in ("read_graph", "open_nodes"):
            return f"Not even the first entity of this answer fits on its own: {tool} with {shapes}."
        return ("Not even the first entity of this answer fits on its own: ask for names and types only, or fewer "
                "observations of each (summaryMode, observationsLimit), where the tool takes them.")
    at = _offset_of(output)
    if tool == "read_graph":
        return (f"Page through it: read_graph with limit {fit} and {at}, then each answer's nextOffset; or "
                "summaryMode true for names and types only.")
    if tool == "open_nodes":
        return (f"Open fewer names at a time (about {fit} of these fit), or set summaryMode true for names and "
                "types only.")
    if tool == "search_nodes":
        return (f"Page through it: search_nodes with limit {fit} and {at}, then each answer's "
                "nextOffset; or observationsLimit to keep the best matching observations of each; or summaryMode "
                "true for names and types only; or narrow it with entityTypes, relationTypes or metadata.")
    return f"Ask for fewer entities at a time (the first {fit} of this answer fit): a smaller limit or fewer names."


def _offset_of(output: Any) -> str:
    """The offset of the page `output` answers, as a refusal's advice says it."""
    entities = len(entities_of(output))
    fields = output if isinstance(output, dict) else None
    following = fields.get("nextOffset") if fields is not None else getattr(output, "next_offset", None)
    total = fields.get("total", fields.get("totalEntities")) if fields is not None else \
        getattr(output, "total", getattr(output, "total_entities", None))
    if isinstance(following, int):
        return f"offset {following - entities}"
    if isinstance(total, int):  # a page that reached the end (an unpaged answer says no total)
        return f"offset {max(0, total - entities)}"
    return "the same offset" if fields is not None else "offset 0"
