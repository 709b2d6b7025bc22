"""Tool arguments: the Structs they parse into, the fields every tool shares, the limits.

Arguments are parsed strictly by msgspec and checked against the limits before any
write. Every problem becomes one `InvalidArgumentsError` naming the field, e.g.
``Invalid arguments for tool create_entities: entities[0].name: expected `str` of length >= 1``.
Unknown fields are refused rather than ignored: a misspelt `expectedVersion` must not
silently turn a guarded write into an unguarded one. The same Structs publish the tools' JSON schemas.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator
from typing import Annotated, Any, TypeVar, get_args, get_origin, get_type_hints

import msgspec
from chronograph.application.errors import InvalidArgumentsError
from msgspec import UNSET, Meta, UnsetType

__all__ = [
    "Args",
    "AsOf",
    "D",
    "INT64",
    "Limits",
    "Metadata",
    "Name",
    "Observation",
    "ObservationList",
    "Query",
    "ReadArgs",
    "OfficialRelationKey",
    "RelationKey",
    "RequestId",
    "TypeName",
    "Version",
    "Items",
    "Workspace",
    "WriteArgs",
    "described",
    "metadata_problem",
    "parse",
    "parse_checked",
]

T = TypeVar("T", bound=msgspec.Struct)


class Limits:
    """The input limits, in characters unless said otherwise."""

    NAME = 512
    TYPE = 256
    OBSERVATION = 16_384
    ITEMS = 1_000
    """items (entities, relations, names...) per call"""
    OBSERVATIONS = 1_000
    """observations per item"""
    QUERY = 2_048
    WORKSPACE = 128
    REQUEST_ID = 256
    METADATA_BYTES = 16_384
    METADATA_DEPTH = 16


Name = Annotated[str, Meta(min_length=1, max_length=Limits.NAME)]
TypeName = Annotated[str, Meta(min_length=1, max_length=Limits.TYPE)]
Observation = Annotated[str, Meta(max_length=Limits.OBSERVATION)]
Observations = Annotated[list[Observation], Meta(max_length=Limits.OBSERVATIONS)]
Query = Annotated[str, Meta(max_length=Limits.QUERY)]
Workspace = Annotated[str, Meta(min_length=1, max_length=Limits.WORKSPACE)]
RequestId = Annotated[str, Meta(min_length=1, max_length=Limits.REQUEST_ID)]
Version = Annotated[int, Meta(ge=0)]
Metadata = dict[str, Any]
ObservationList = Annotated[list[Observation], Meta(max_length=Limits.OBSERVATIONS)]

D = Meta  # descriptions read better as D(description=...)


Item = TypeVar("Item")
Items = Annotated[list[Item], Meta(max_length=Limits.ITEMS)]
"""A bounded list: the items of one call (`Items[NewEntity]`)."""


class Args(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Base of tool arguments: camelCase on the wire, unknown fields refused."""

    def touches(self) -> tuple[str, ...]:
        """The workspaces a call with these arguments reads or writes, for the access check
        (`engine/access.py`): its `workspace`, if it has one. Free of side effects: it is asked
        before the call may do anything."""
        workspace = getattr(self, "workspace", None)
        return (workspace,) if isinstance(workspace, str) else ()


# The fields many tools share (workspace, requestId, expectedVersion, asOf) say what they
# mean once, in the server's instructions (`chronograph.application.profiles`), not in
# every tool's schema.
AsOf = str | Annotated[int, Meta(ge=0)]


class WriteArgs(Args, kw_only=True):
    """Arguments of a tool that writes: a workspace and an optional idempotency key."""

    workspace: Workspace = "default"
    request_id: RequestId | UnsetType = UNSET


class ReadArgs(Args, kw_only=True):
    """Arguments of a tool that reads one workspace."""

    workspace: Workspace = "default"


FROM = D(description="The name of the entity where the relation starts")
TO = D(description="The name of the entity where the relation ends")
RELATION_TYPE = D(description="The type of the relation")


class RelationKey(Args, kw_only=True):
    """What names a relation: from, to and relationType (its identity in a workspace). Published
    without descriptions (the names say it); the official tools' relations say them, as the
    official server does (`OfficialRelationKey`)."""

    source: Name = msgspec.field(name="from")
    target: Name = msgspec.field(name="to")
    relation_type: TypeName

    @property
    def label(self) -> str:
        """How messages name it: "from -[type]-> to"."""
        return f"{self.source} -[{self.relation_type}]-> {self.target}"


class OfficialRelationKey(RelationKey, kw_only=True):
    """A relation's key as the official server's tools describe it."""

    source: Annotated[Name, FROM] = msgspec.field(name="from")
    target: Annotated[Name, TO] = msgspec.field(name="to")
    relation_type: Annotated[TypeName, RELATION_TYPE]

_PATH = re.compile(r" - at `\$(.*)`$")
_IDENTIFIERS = ("name", "entity_type", "source", "target", "relation_type", "workspace", "entity_name")


def parse(tool: str, arguments: dict[str, Any], into: type[T]) -> T:
    """Parse a tool call's `arguments` into `into`, or raise one clear error.

    Raises:
        InvalidArgumentsError: Naming the first bad field and what was expected.
    """
    arguments = _unquote_json_arguments(arguments, into)
    encodable = _encodable(arguments)
    problem = None if encodable else next(_unencodable(arguments, ""), None)  # msgspec cannot even report these
    if problem:
        raise InvalidArgumentsError(tool, problem)
    try:
        parsed = msgspec.convert(arguments, into, strict=True)
    except msgspec.ValidationError as error:
        raise InvalidArgumentsError(tool, described(str(error), into)) from None
    problem = None if encodable and _fine(parsed) else _check(parsed, "")
    if problem:
        raise InvalidArgumentsError(tool, problem)
    return parsed


def parse_checked(tool: str, arguments: dict[str, Any], into: type[T], checked: str) -> T:
    """`parse`, for arguments whose list `checked` is made of items `parse` accepted before, each
    in a call of its own (an import's: its survey checks every record with the tool's parser).
    The other arguments (the workspace) are parsed and checked in full; the items only for their
    types and limits (in C, by msgspec), not walked again in Python.

    Raises:
        InvalidArgumentsError: If they do not fit the tool's schema or limits after all.
    """
    parse(tool, {**arguments, checked: []}, into)
    try:
        return msgspec.convert(arguments, into, strict=True)
    except msgspec.ValidationError as error:
        raise InvalidArgumentsError(tool, described(str(error), into)) from None


_LONG_NUMBER = re.compile(rb"\d{19}")
"""19 digits in a row: an integer that may not fit 64 bits (or text that looks like one)."""


def _encodable(arguments: dict[str, Any]) -> bool:
    """Whether `_unencodable` surely finds nothing, in one pass in C: every text encodes (msgspec
    refuses unpaired surrogates, keys included) and no run of 19 digits, which every integer
    outside 64 bits has, appears. False sends the caller to the exact walk, which names the problem."""
    try:
        return _LONG_NUMBER.search(msgspec.json.encode(arguments)) is None
    except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
        return False


def _fine(value: Any) -> bool:
    """Whether `_problems` surely finds nothing in parsed arguments whose text is known to encode:
    only identifiers and metadata are left to look at, so text and lists of text are passed over."""
    if isinstance(value, msgspec.Struct):
        for field in value.__struct_fields__:
            item = getattr(value, field)
            kind = type(item)
            if item is None or item is msgspec.UNSET:
                continue
            if field == "metadata":
                if _metadata(item):
                    return False
            elif kind is str:
                if field in _IDENTIFIERS and _identifier(item):
                    return False
            elif kind in _ATOMS:
                continue
            elif not _fine(item):
                return False
        return True
    if isinstance(value, list):
        return set(map(type, value)) <= _ATOMS or all(_fine(item) for item in value)
    if isinstance(value, dict):
        return all(_fine(item) for item in value.values())
    return True


_ATOMS = frozenset({str, int, float, bool})


def _unquote_json_arguments(arguments: dict[str, Any], into: type[msgspec.Struct]) -> dict[str, Any]:
    """Some clients (Claude Desktop among them) send arrays and objects as JSON text."""
    hints = _container_fields(into)
    fixed = dict(arguments)
    for key, value in arguments.items():
        if key in hints and isinstance(value, str):
            try:
                decoded = json.loads(value)
            except (ValueError, RecursionError):
                continue
            if isinstance(decoded, list | dict):
                fixed[key] = decoded
    return fixed


@functools.cache
def _container_fields(into: type[msgspec.Struct]) -> frozenset[str]:
    names = set()
    hints = get_type_hints(into, include_extras=True)
    for field, encoded in zip(into.__struct_fields__, into.__struct_encode_fields__, strict=True):
        hint = hints[field]
        while get_origin(hint) is Annotated:
            hint = get_args(hint)[0]
        options = get_args(hint) if get_origin(hint) is not None and get_origin(hint) not in (list, dict) else (hint,)
        if any(get_origin(option) in (list, dict) or option in (list, dict) for option in options):
            names.add(encoded)
    return frozenset(names)


def described(message: str, into: type[msgspec.Struct]) -> str:
    """msgspec's `message` about a value converted `into` a Struct, as its path and problem, an enum's
    choices named (`status: invalid enum value 'x'; choose one of "A", "B"`)."""
    match = _PATH.search(message)
    text = message[: match.start()] if match else message
    text = text[:1].lower() + text[1:]
    path = match.group(1).lstrip(".") if match else ""
    if text.startswith("invalid enum value"):
        choices = _choices(into, path)
        if choices:
            text += "; choose one of " + ", ".join(json.dumps(c) for c in choices)
    return f"{path}: {text}" if path else text


_STEP = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def _choices(into: type[msgspec.Struct], path: str) -> list[Any]:
    """The values an enum field at `path` (as msgspec names it: `a.b[0].c`) accepts."""
    document = _schema(into)
    node: Any = document
    definitions = document.get("$defs", {})
    for name, index in _STEP.findall(path):
        while isinstance(node, dict) and "$ref" in node:
            node = definitions[node["$ref"].rsplit("/", 1)[1]]
        if name:
            node = node.get("properties", {}).get(name, {}) if isinstance(node, dict) else {}
        elif index:
            node = node.get("items", {}) if isinstance(node, dict) else {}
    while isinstance(node, dict) and "$ref" in node:
        node = definitions[node["$ref"].rsplit("/", 1)[1]]
    if not isinstance(node, dict):
        return []
    options = [node, *node.get("anyOf", [])]
    return [value for option in options if isinstance(option, dict) for value in option.get("enum", [])]


@functools.cache
def _schema(into: type[msgspec.Struct]) -> dict[str, Any]:
    return msgspec.json.schema(into)


def _check(value: Any, path: str) -> str | None:
    """Limits msgspec cannot express: valid Unicode, no blank identifiers, bounded metadata."""
    return next(_problems(value, path), None)


INT64 = (-(2**63), 2**63 - 1)
"""Integers the store can keep (msgpack, LMDB keys): anything wider is refused at parse time."""


def _unencodable(value: Any, path: str) -> Iterator[str]:
    """What no field can hold, anywhere: text that is not valid Unicode (unpaired surrogates,
    undecodable bytes), integers wider than 64 bits."""
    if isinstance(value, str):
        if _text(value):
            yield f"{path or 'arguments'}: {_text(value)}"
    elif isinstance(value, int) and not isinstance(value, bool):
        if not INT64[0] <= value <= INT64[1]:
            yield f"{path or 'arguments'}: {value} is outside the 64-bit integers the store keeps (-2^63 to 2^63-1)"
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _text(key):
                yield f"{path or 'arguments'}: a field name contains an unpaired surrogate, which is not valid Unicode"
                return
            yield from _unencodable(item, _child(path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _unencodable(item, f"{path}[{index}]")


def _child(path: str, key: Any) -> str:
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path or 'arguments'}[{json.dumps(key, ensure_ascii=False)}]"


def _problems(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, str):
        problem = _text(value)
        if problem:
            yield f"{path}: {problem}"
    elif isinstance(value, msgspec.Struct):
        for field, encoded in zip(value.__struct_fields__, value.__struct_encode_fields__, strict=True):
            item = getattr(value, field)
            where = f"{path}.{encoded}" if path else encoded
            if field in _IDENTIFIERS and isinstance(item, str):
                problem = _identifier(item)
            elif field == "metadata" and item is not None and item is not msgspec.UNSET:
                problem = _metadata(item)
            else:
                yield from _problems(item, where)
                continue
            if problem:
                yield f"{where}: {problem}"
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _problems(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _problems(key, path)
            yield from _problems(item, _child(path, key))


def _text(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate (or bytes that are not UTF-8), which is not valid Unicode text"
    return None


def _identifier(text: str) -> str | None:
    if not text.strip():
        return "must not be blank"
    if "\x00" in text:
        return "must not contain NUL characters"
    return _text(text)


def _metadata(metadata: dict[str, Any]) -> str | None:
    try:
        encoded = msgspec.json.encode(metadata)
    except (TypeError, ValueError, OverflowError, UnicodeEncodeError) as error:
        return f"is not JSON-encodable: {error}"
    if len(encoded) > Limits.METADATA_BYTES:
        return f"is {len(encoded)} bytes as JSON; the limit is {Limits.METADATA_BYTES}"
    if _depth(metadata) > Limits.METADATA_DEPTH:
        return f"nests deeper than {Limits.METADATA_DEPTH} levels"
    if not _finite(metadata):
        return "holds a number that is not finite (NaN or Infinity), which JSON has no way to say"
    return None


def metadata_problem(metadata: dict[str, Any]) -> str | None:
    """What a metadata field would refuse in `metadata` (a surface's JSON text, decoded), or None."""
    problem = next(_unencodable(metadata, "metadata"), None)
    if problem is None and (found := _metadata(metadata)):
        problem = f"metadata: {found}"
    return problem


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    if isinstance(value, list):
        return all(_finite(item) for item in value)
    return True


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0
