"""The compact record (codec 2): the envelope as the log stores it since issue 35, in fewer bytes.

A record of codec 1 is the envelope as a msgpack array of 9, its event a map keyed by field
names (`{"type": "relation_created", "workspace": ..., "from": ..., "relationType": ...}`); a
record of codec 2 is an array of 10 whose first five items are the same (so a reader of the
position or the time reads both alike), then:

* the event of a class `LAYOUTS` names as an array, its tag first, then its fields in that
  layout's order, trailing fields that hold their default left out (the names cost 40-45 bytes
  an event in codec 1); any other event (or one with an unset field before a set one) as the
  map codec 1 stores;
* the correlation id as 16 bytes when it is the usual 32 hex digits (34 bytes in codec 1);
* no stream (nil) when the stream is the one the event's own fields name (a relation's:
  `relation_stream`), which repeated them;
* the codec number, 2;
* the principal (see `codec.Envelope`), last, unless it is the local user: an array of 11 then.

A record of codec 3 (written since store format 5, see `lmdb.log.FORMAT_VERSION`) is an array of
11 that ends in the byte 3, and differs from codec 2 in three ways:

* an event kept by position starts with its tag's number (`NUMBERS`), not its tag's text (the
  text cost 12-23 bytes an event);
* an entity's stream is its 15 bytes (`keys.stream_key`), not its 37 characters;
* the principal comes before the codec number, nil for the local user, so that every record of
  codec 3 ends in 3 (a codec-2 record with a principal ends in a printable character).

Measured on the benchmarks' graph (3 observations and 2 relations an entity): 257 bytes an
event in codec 1, 161 in codec 2 (decoding 1.1 us an event instead of 0.64, encoding 1.7 us
instead of 0.3), 138 in codec 3. Positions of fields are part of the record: `LAYOUTS` says them, per tag and
schema, and keeps old ones for the upcasters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Union

import msgspec
from chronograph.eventstore.events import Event, RelationCreated, event_type
from chronograph.eventstore.keys import entity_key, entity_stream_of

__all__ = ["CODEC", "LAYOUTS", "MARK", "NUMBERS", "Compact", "relation_stream"]

CODEC = 3
"""The codec the LMDB log writes into a store of format 5 or later (2 into older ones)."""
MARK = 0x9A
"""The first byte of a codec-2 record (a msgpack array of 10); codec 1 records start 0x99, codec 3
records 0x9B (an array of 11, as a codec-2 record with a principal, but ending in the byte 3)."""
LAYOUTS: dict[tuple[str, int], tuple[str, ...]] = {
    ('entity_created', 1): ('workspace', 'name', 'entityType', 'observations', 'metadata', 'revertedTo'),
    ('observations_added', 1): ('observations', 'validFrom', 'validUntil'),
    ('observations_deleted', 1): ('observations',),
    ('entity_updated', 1): ('entityType', 'observations', 'metadata', 'revertedTo', 'validity'),
    ('entity_deleted', 1): (),
    ('relation_created', 1): (
        'workspace', 'from', 'to', 'relationType', 'confidence', 'metadata', 'validFrom', 'validUntil'
    ),
    ('relation_updated', 1): ('confidence', 'metadata'),
    ('relation_deleted', 1): (),
    ('context_updated', 1): ('workspace', 'activeTask', 'status', 'reason', 'nextSteps', 'lastCommit'),
    ('entity_renamed', 1): ('name', 'previous'),
    ('entity_merged', 1): ('into',),
    ('observations_invalidated', 1): ('observations', 'at'),
    ('relation_invalidated', 1): ('at',),
    ('content_erased', 1): ('erased', 'workspace'),
    ('entity_forgotten', 1): ('workspace', 'reason', 'events', 'relations'),
    ('entity_restored', 1): (
        'workspace', 'name', 'entityType', 'observations', 'metadata', 'revertedTo', 'restores', 'createdAt',
        'validity',
    ),
    ('organization_created', 1): ('orgId', 'name', 'metadata'),
    ('project_created', 1): ('projectId', 'name', 'orgId', 'description', 'rootPath', 'metadata'),
    ('project_updated', 1): ('name', 'description', 'rootPath', 'metadata'),
    ('session_started', 1): ('sessionId', 'projectId', 'name', 'purpose', 'agentId', 'metadata'),
    ('session_ended', 1): ('status',),
    ('entry_added', 1): ('entryType', 'entryId', 'scopeType', 'scopeId', 'name', 'fields', 'createdBy', 'sessionId'),
    ('entry_updated', 1): ('fields', 'changeReason', 'createdBy', 'sessionId'),
    ('entry_deactivated', 1): ('reason',),
    ('entry_reactivated', 1): (),
    ('tag_created', 1): ('tagId', 'name', 'category', 'description'),
    ('tag_attached', 1): ('entryType', 'entryId', 'tagId'),
    ('tag_detached', 1): ('entryType', 'entryId', 'tagId'),
    ('entry_relation_created', 1): ('relationId', 'sourceType', 'sourceId', 'targetType', 'targetId', 'relationType'),
    ('entry_relation_deleted', 1): (),
    ('file_checked_out', 1): ('filePath', 'agentId', 'expiresAt', 'sessionId', 'projectId', 'metadata'),
    ('file_checked_in', 1): ('agentId',),
    ('file_force_unlocked', 1): ('agentId', 'reason', 'holder'),
    ('conflict_detected', 1): ('conflictId', 'entryType', 'entryId', 'versionA', 'versionB'),
    ('conflict_resolved', 1): ('resolution', 'resolvedBy', 'keptVersion'),
    ('team_memory_reset', 1): ('by',),
    ('entry_forgotten', 1): ('entryType', 'reason', 'events', 'streams'),
    ('token_issued', 1): ('name', 'digest', 'grants', 'expiresAt'),
    ('token_revoked', 1): ('name',),
}
"""(tag, schema) -> the field names (as stored) of the events of the catalogue whose codec-2
records keep their fields by position. A record's fields are these, in this order (fields added
later with defaults come after them); `tests/eventstore/test_compact.py` fails when a class no
longer starts with its layout. When a class changes shape (a new `schema`), its old entry stays,
so its old records are read and lifted by the upcasters, and its new shape gets one. An event
class without an entry (a plugin's, a test's) keeps its field names in the record, as codec 1 did."""

NUMBERS: dict[str, int] = {tag: number for number, tag in enumerate((
    'entity_created', 'observations_added', 'observations_deleted', 'entity_updated', 'entity_deleted',
    'relation_created', 'relation_updated', 'relation_deleted', 'context_updated', 'entity_renamed',
    'entity_merged', 'observations_invalidated', 'relation_invalidated', 'content_erased', 'entity_forgotten',
    'entity_restored', 'organization_created', 'project_created', 'project_updated', 'session_started',
    'session_ended', 'entry_added', 'entry_updated', 'entry_deactivated', 'entry_reactivated', 'tag_created',
    'tag_attached', 'tag_detached', 'entry_relation_created', 'entry_relation_deleted', 'file_checked_out',
    'file_checked_in', 'file_force_unlocked', 'conflict_detected', 'conflict_resolved', 'team_memory_reset',
    'entry_forgotten', 'token_issued', 'token_revoked',
), start=1)}
"""Tag -> the number a codec-3 record stores in its place. Numbers are part of the record: append
new tags at the end, never reorder, never reuse one (`tests/eventstore/test_compact.py` keeps
these)."""
_TAGS = {number: tag for tag, number in NUMBERS.items()}
_ENTITY_KEY = 15
"""The size of an entity stream's key (`keys.entity_key`)"""

_json = msgspec.json.Encoder()


def relation_stream(workspace: str, source: str, relation_type: str, target: str) -> str:
    """The stream of the relation (workspace, from, relationType, to): one per identity."""
    return "relation:" + _json.encode([workspace, source, relation_type, target]).decode()


class _Envelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """The first nine items of a codec-2 or codec-3 record."""

    position: int
    stream: Any
    """text; nil: named by the event; bytes (codec 3): an entity's stream's `stream_key` (msgspec
    decodes no union of text and bytes: `Compact.stream` checks the type)"""
    version: int
    recorded_at: int
    schema_version: int
    actor: str
    correlation_id: bytes | tuple[str]
    """16 bytes for the usual 32 lower-case hex digits, else the text in an array of one"""
    idempotency_key: str | None
    event: msgspec.Raw


class _Record(_Envelope, frozen=True, array_like=True, gc=False):
    codec: int
    principal: str = "local"


class _Record3(_Envelope, frozen=True, array_like=True, gc=False):
    principal: str | None
    """nil: the local user"""
    codec: int


class _Twins:
    """One codec's twin classes of the catalogue's events kept by position, and its decoders."""

    def __init__(self, positional: dict[str, tuple[type[Event], tuple[msgspec.structs.FieldInfo, ...]]],
                 record: type[Any], tag_of: Callable[[str], Any]) -> None:
        self.makers: dict[type[Any], Callable[[Any], Event]] = {}
        twins = []
        for tag, (cls, fields) in positional.items():
            stored_tag = tag_of(tag)
            if stored_tag is None:
                continue  # kept by name
            spec = []
            for info in fields:
                if info.default is not msgspec.NODEFAULT:
                    spec.append((info.name, info.type, msgspec.field(default=info.default, name=info.encode_name)))
                elif info.default_factory is not msgspec.NODEFAULT:
                    spec.append((info.name, info.type,
                                 msgspec.field(default_factory=info.default_factory, name=info.encode_name)))
                else:
                    spec.append((info.name, info.type, msgspec.field(name=info.encode_name)))
            twin = msgspec.defstruct(f"Compact{cls.__name__}", spec, kw_only=True, array_like=True, tag=stored_tag,
                                     tag_field="type", frozen=True, gc=False)
            twins.append(twin)
            self.makers[twin] = _maker(cls)
        union: Any = Union[tuple(twins)]  # noqa: UP007 (a runtime tuple)
        typed = msgspec.defstruct("TypedRecord", [("event", union)], bases=(record,), frozen=True, array_like=True,
                                  gc=False)
        self.record = msgspec.msgpack.Decoder(record)
        self.typed = msgspec.msgpack.Decoder(list[typed])  # type: ignore[valid-type]
        self.event = msgspec.msgpack.Decoder(union)


class Compact:
    """Encodes envelopes as codec-2 or codec-3 records and decodes both (one twin class per event
    class and codec: the same fields, stored as an array)."""

    def __init__(self, events: dict[str, type[Event]]) -> None:
        self._tags = set(events)
        self._trailing: dict[type[Event], tuple[tuple[Any, ...], int]] = {}
        self._positional: dict[str, tuple[type[Event], tuple[msgspec.structs.FieldInfo, ...]]] = {}
        """The events kept by position, and their fields"""
        for tag, cls in events.items():
            fields = msgspec.structs.fields(cls)
            layout = LAYOUTS.get((tag, cls.schema))
            if layout is None or tuple(info.encode_name for info in fields[: len(layout)]) != layout:
                continue  # kept by name
            defaults = tuple(info.default if info.default is not msgspec.NODEFAULT else
                             info.default_factory() if info.default_factory is not msgspec.NODEFAULT else _NONE
                             for info in fields)
            self._trailing[cls] = (defaults, len(fields))
            self._positional[tag] = (cls, fields)
        self._codecs: dict[int, _Twins] = {}
        """Each codec's twins, made when a record of it is first read (8 ms each: a store written
        since codec 3 came never reads codec 2)."""
        self._raw_events = msgspec.msgpack.Decoder(list[Any])
        self._encoder = msgspec.msgpack.Encoder()

    def encode(self, position: int, stream: str, version: int, recorded_at: int, schema: int, actor: str,
               correlation_id: str, idempotency_key: str | None, event: Event, principal: str = "local",
               *, codec: int = CODEC) -> bytes:
        """The codec-2 or codec-3 record of an envelope."""
        trailing = self._trailing.get(type(event))
        stored: Any = event  # kept by name
        tag = event_type(event)
        if trailing is not None and (codec == 2 or tag in NUMBERS):
            values = list(msgspec.structs.astuple(event))
            defaults = trailing[0]
            while values and values[-1] == defaults[len(values) - 1] and type(values[-1]) is type(
                    defaults[len(values) - 1]):
                values.pop()
            if not any(value is msgspec.UNSET for value in values):  # UNSET has no place in an array
                stored = [tag if codec == 2 else NUMBERS[tag], *values]
        correlation: bytes | tuple[str] = (correlation_id,)
        if len(correlation_id) == 32:
            try:
                packed = bytes.fromhex(correlation_id)
            except ValueError:
                pass
            else:
                if packed.hex() == correlation_id:  # upper case, spaces: kept as they are
                    correlation = packed
        kept: str | bytes | None = None if stream == _derived(event) else stream
        if codec == 2:
            record = [position, kept, version, recorded_at, schema, actor, correlation, idempotency_key, stored, 2]
            if principal != "local":
                record.append(principal)
            return self._encoder.encode(record)
        if kept is not None and (key := entity_key(stream)) is not None:
            kept = key
        return self._encoder.encode([position, kept, version, recorded_at, schema, actor, correlation,
                                     idempotency_key, stored, None if principal == "local" else principal, 3])

    def record(self, data: bytes | memoryview, codec: int) -> Any:
        """The envelope fields of a codec-2 or codec-3 record, its event still encoded.

        Raises:
            msgspec.DecodeError, msgspec.ValidationError: If it is not one.
        """
        return self._twins(codec).record.decode(data)

    def event(self, raw: msgspec.Raw, codec: int) -> Event:
        """The event of a record kept by position (at its class's current schema).

        Raises:
            msgspec.ValidationError: If it is not (kept by name, or not at the current shape).
        """
        twins = self._twins(codec)
        twin = twins.event.decode(raw)
        return twins.makers[type(twin)](twin)

    def decode_many(self, values: Sequence[bytes | memoryview], codec: int) -> list[tuple[Any, Event]]:
        """(record, event) of many records of one codec at their classes' current schemas, in one call.

        Raises:
            msgspec.DecodeError, msgspec.ValidationError: If one is not.
        """
        buffer = b"".join([b"\xdd" + len(values).to_bytes(4, "big"), *values])
        twins = self._twins(codec)
        makers = twins.makers
        records: list[Any] = twins.typed.decode(buffer)
        return [(record, makers[type(record.event)](record.event)) for record in records]

    def _twins(self, codec: int) -> _Twins:
        twins = self._codecs.get(codec)
        if twins is None:
            record, tag_of = (_Record, str) if codec == 2 else (_Record3, NUMBERS.get)
            twins = self._codecs[codec] = _Twins(self._positional, record, tag_of)
        return twins

    def fields(self, raw: msgspec.Raw, schema: int) -> dict[str, Any]:
        """The event of a record written at an older `schema`, as the map codec 1 would have stored.

        Raises:
            KeyError: If no layout of that (tag, schema) is known.
        """
        stored = self._raw_events.decode(b"\x91" + bytes(raw))[0]
        if isinstance(stored, dict):  # kept by name
            return stored
        tag, *values = stored
        if type(tag) is int:
            tag = _TAGS.get(tag, f"number {tag}")
        if tag not in self._tags:  # said as an unknown type, not an unknown layout
            return {"type": tag}
        names = LAYOUTS[(tag, schema)]
        return {"type": tag, **dict(zip(names, values, strict=False))}

    def stream(self, record: Any, event: Event) -> str:
        """The record's stream: as stored, or named by its event."""
        stream = record.stream
        if type(stream) is str:
            return stream
        if type(stream) is bytes and len(stream) == _ENTITY_KEY:
            return entity_stream_of(stream)
        if stream is not None:
            raise msgspec.ValidationError("a record's stream is neither text nor an entity's key")
        derived = _derived(event)
        if derived is None:
            raise msgspec.ValidationError("a record without a stream whose event names none")
        return derived

    @staticmethod
    def principal(record: Any) -> str:
        """The principal as the envelope carries it."""
        return record.principal or "local"

    @staticmethod
    def correlation(record: Any) -> str:
        """The correlation id as the envelope carries it."""
        value = record.correlation_id
        return value.hex() if isinstance(value, bytes) else value[0]


def _maker(cls: type[Event]) -> Callable[[Any], Event]:
    """A function making a `cls` event of its twin, field by field (twice as fast as through a dict)."""
    names = cls.__struct_fields__
    source = f"def make(twin):\n    return cls({', '.join(f'{n}=twin.{n}' for n in names)})\n"
    scope: dict[str, Any] = {"cls": cls}
    exec(source, scope)  # noqa: S102 (field names of our own classes, nothing from outside)
    made: Callable[[Any], Event] = scope["make"]
    return made


class _Unset:
    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


_NONE = _Unset()
"""A required field's stand-in among the defaults: equal to nothing, so it is never left out."""


def _derived(event: Event) -> str | None:
    """The stream an event's own fields name, if they name one."""
    if type(event) is RelationCreated:
        return relation_stream(event.workspace, event.source, event.relation_type, event.target)
    return None
