"""Big answers turned into plain data and JSON a slice at a time, so that other threads get turns.

Over HTTP, reads run in threads beside each other and the event loop; the GIL passes between
them every millisecond (`sys.setswitchinterval`), but only between bytecodes: one call into C
keeps it to the end. msgspec's `to_builtins` over the 50,000 entities of an export, its
encoding of the whole-graph answer (tens of MB) and the formatting of its text block each
held the interpreter 35-40 ms, and every short call beside it waited that long, at each of
its hops between the event loop and a worker thread. The
functions here give the same result as the one call, made of calls over `TURN` items (or
`TURN_CHARS` characters) each, so that no stretch of C outlasts a few milliseconds.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["TURN", "TURN_CHARS", "builtins_in_turns", "encoded", "formatted"]

TURN = 500
"""Items of a list converted or encoded in one call into C (about a millisecond of entities)."""
TURN_CHARS = 1 << 20
"""Characters of a string encoded in one call."""

_encoder = msgspec.json.Encoder()
_MARK = "\x00chronograph-turn-{}\x00"
"""A placeholder for a big field while the rest of its object is encoded (a string no answer holds)."""


def builtins_in_turns(items: list[Any]) -> list[Any]:
    """`msgspec.to_builtins(items)`, converted `TURN` items at a time."""
    if len(items) <= TURN:
        return msgspec.to_builtins(items)
    out: list[Any] = []
    for start in range(0, len(items), TURN):
        out.extend(msgspec.to_builtins(items[start:start + TURN]))
    return out


def encoded(value: Any) -> bytes:
    """The JSON of `value`, byte for byte what `msgspec.json.encode` gives, built in turns when
    `value` is a big list or string, or an object (a Struct, a dict) holding some."""
    if _big(value):
        return _encoded_big(value)
    template, big = _split(value)
    if not big:
        return _encoder.encode(value)
    return _spliced(_encoder.encode(template), {mark: _encoded_big(item) for mark, item in big.items()})


def formatted(value: Any, raw: bytes | None = None) -> str:
    """`msgspec.json.format(msgspec.json.encode(value), indent=2)`, as text, built in turns
    (`raw`: the JSON of `value` when the caller has it, formatted whole if `value` has no big part)."""
    if _big(value):
        return _formatted_big(value, 0)
    template, big = _split(value)
    if not big:
        return msgspec.json.format(_encoder.encode(value) if raw is None else raw, indent=2).decode()
    text = msgspec.json.format(_encoder.encode(template), indent=2)
    return _spliced(text, {mark: _formatted_big(item, 1).encode() for mark, item in big.items()}).decode()


def _big(value: Any) -> bool:
    return (isinstance(value, list) and len(value) > TURN) or (isinstance(value, str) and len(value) > TURN_CHARS)


def _split(value: Any) -> tuple[Any, dict[bytes, Any]]:
    """`value` with each big field replaced by a mark, and the fields by their marks' JSON."""
    if isinstance(value, msgspec.Struct):
        fields = {name: getattr(value, name) for name in value.__struct_fields__}
    elif isinstance(value, dict) and all(isinstance(key, str) for key in value):
        fields = value
    else:
        return value, {}
    marked = {name: _MARK.format(i) for i, (name, item) in enumerate(fields.items()) if _big(item)}
    if not marked:
        return value, {}
    big = {_encoder.encode(mark): fields[name] for name, mark in marked.items()}
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(value, **marked), big
    return {**value, **marked}, big


def _spliced(whole: bytes, parts: dict[bytes, bytes]) -> bytes:
    for mark, part in parts.items():
        before, found, after = whole.partition(mark)
        if not found:  # pragma: no cover - a mark is always encoded where its field was
            raise AssertionError("a placeholder went missing")
        whole = before + part + after
    return whole


def _encoded_big(value: list[Any] | str) -> bytes:
    if isinstance(value, str):
        return b'"' + b"".join(_encoder.encode(value[start:start + TURN_CHARS])[1:-1]
                               for start in range(0, len(value), TURN_CHARS)) + b'"'
    return b"[" + b",".join(_encoder.encode(value[start:start + TURN])[1:-1]
                            for start in range(0, len(value), TURN)) + b"]"


def _formatted_big(value: list[Any] | str, depth: int) -> str:
    """`value` formatted with two-space indent, as it reads `depth` levels into its object."""
    if isinstance(value, str):
        return _encoded_big(value).decode()  # formatting leaves a string as it was encoded
    inner = ",\n".join(msgspec.json.format(_encoder.encode(value[start:start + TURN]), indent=2)[2:-2].decode()
                       for start in range(0, len(value), TURN))
    text = "[\n" + inner + "\n]"
    return text.replace("\n", "\n" + "  " * depth) if depth else text  # JSON strings hold no raw line break
