"""The envelope the log stores for each event, and the codec that reads old shapes as new.

A record of codec 1 is the envelope as a msgpack array (position, stream, version,
recorded_at, schema_version, actor, correlation_id, idempotency_key, event[, principal]), the
event a msgpack map whose ``type`` key is its stable tag; the principal is left out when it is
`LOCAL` (every record written before issue 36 reads as the local user's). Records of codecs 2 and 3
(`compact`, written since issue 35) say the same in fewer bytes; each record says which it is by
its first byte and its last, so a log holds all three and reads all three. Decoding
takes one pass with one reused decoder; only an event written at an older schema version takes
the slow path through the upcasters.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Union

import msgspec
from chronograph.eventstore.catalogue import CATALOGUE
from chronograph.eventstore.compact import CODEC, MARK, Compact
from chronograph.eventstore.errors import UnknownEventError
from chronograph.eventstore.events import Event, event_type
from chronograph.eventstore.keys import Stored

__all__ = ["LOCAL", "Codec", "Envelope", "SlimEnvelope", "Upcasters", "UPCASTERS", "check_principal"]

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
_MARK = bytes([MARK])
_MARK_ELEVEN = bytes([MARK + 1])

LOCAL = "local"
"""The principal of an event whose envelope names none: the local user (stdio, a command), and
every event written before envelopes carried a principal."""


def check_principal(principal: str) -> None:
    """Refuse a principal name a record cannot carry unambiguously.

    A codec-1 record with a principal is an array of 10, as a codec-2 record is, and a codec-2
    record with one is an array of 11, as a codec-3 record is; codec-2 records end in the byte
    2 and codec-3 records in the byte 3 (their codec numbers), which a name without control
    characters never ends in.

    Raises:
        ValueError: If `principal` is empty or holds a control character.
    """
    if not principal or not principal.isprintable():
        raise ValueError(f"{principal!r} is not a principal name (printable characters, not empty)")


def _compact(data: Stored) -> int:
    """The codec of a stored record if it is 2 or 3, else 0 (see the module's docstring)."""
    first = data[:1]
    if first == _MARK_ELEVEN:
        return 3 if data[-1:] == b"\x03" else 2
    return 2 if first == _MARK and data[-1:] == b"\x02" else 0


class Envelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One event as the log stores it, with everything needed to audit it."""

    position: int
    """Global, gap-free, 1-based position in commit order."""
    stream: str
    version: int
    """1-based version of the event within its stream."""
    recorded_at: int
    """Microseconds since the epoch (UTC); never decreases along the log."""
    schema_version: int
    actor: str
    correlation_id: str
    """Shared by every event written by one command (one tool call)."""
    idempotency_key: str | None
    event: Event
    principal: str = LOCAL
    """Who was authenticated for the call that wrote it: `local` over stdio and in commands, a
    token's (or an OAuth subject's) name over HTTP. Beside `actor`, which the client names itself."""

    @property
    def type(self) -> str:
        """The event's stable tag, e.g. ``"entity_created"``."""
        return event_type(self.event)


class SlimEnvelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """An envelope decoded without its audit fields (actor, correlation, key): for folds.

    Skipping three strings per event makes log scans about a quarter faster.
    """

    position: int
    stream: str
    version: int
    recorded_at: int
    schema_version: int
    actor: msgspec.Raw
    correlation_id: msgspec.Raw
    idempotency_key: msgspec.Raw
    event: Event
    principal: str = LOCAL


class _Header(msgspec.Struct, frozen=True, array_like=True, gc=False):
    position: int
    stream: Any
    """text, nil or bytes (see `compact`)"""
    version: int
    recorded_at: int
    schema_version: int


class _RawEnvelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    position: int
    stream: str
    version: int
    recorded_at: int
    schema_version: int
    actor: str
    correlation_id: str
    idempotency_key: str | None
    event: msgspec.Raw
    principal: str = LOCAL


class Upcasters:
    """A registry of functions that lift an event's stored shape one schema version up."""

    def __init__(self) -> None:
        self._steps: dict[tuple[str, int], Upcaster] = {}

    def register(self, tag: str, from_schema: int) -> Callable[[Upcaster], Upcaster]:
        """Decorate a function turning a `tag` event's map at `from_schema` into the next one."""

        def decorator(step: Upcaster) -> Upcaster:
            key = (tag, from_schema)
            if key in self._steps:
                raise ValueError(f"an upcaster for {tag!r} from schema {from_schema} exists")
            self._steps[key] = step
            return step

        return decorator

    def upcast(self, tag: str, schema: int, target: int, data: dict[str, Any]) -> dict[str, Any]:
        """Lift `data` from `schema` to `target`, one registered step at a time.

        Raises:
            UnknownEventError: If a step along the way is missing.
        """
        while schema < target:
            step = self._steps.get((tag, schema))
            if step is None:
                raise UnknownEventError(
                    f"no upcaster lifts {tag!r} events from schema {schema} to {schema + 1}"
                )
            data = step(dict(data))
            schema += 1
        return data


UPCASTERS = Upcasters()
"""The upcasters of the built-in catalogue (none yet: every event is at schema 1)."""


class Codec:
    """Encodes envelopes and decodes them, through upcasters where the shape is old."""

    def __init__(
        self, events: Iterable[type[Event]] = CATALOGUE, upcasters: Upcasters = UPCASTERS, *, writes: int = CODEC
    ) -> None:
        self.events: dict[str, type[Event]] = {event_type(cls): cls for cls in events}
        self.writes = writes
        """The codec of the records it encodes (1, 2 or 3); it reads them all."""
        self._compact = Compact(self.events)
        self._schemas: dict[type[Event], int] = {cls: cls.schema for cls in self.events.values()}
        self._upcasters = upcasters
        union: Any = Union[tuple(self.events.values())]  # noqa: UP007 (a runtime tuple)
        typed = msgspec.defstruct(
            "Envelope", [("event", union)], bases=(Envelope,),
            frozen=True, array_like=True, gc=False,
        )
        self._envelope: type[Envelope] = typed  # type: ignore[assignment]  # a subclass of it
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(typed)
        self._many = msgspec.msgpack.Decoder(list[typed])  # type: ignore[valid-type]
        slim = msgspec.defstruct(
            "SlimEnvelope", [("event", union)], bases=(SlimEnvelope,),
            frozen=True, array_like=True, gc=False,
        )
        self._slim_many = msgspec.msgpack.Decoder(list[slim])  # type: ignore[valid-type]
        self._header = msgspec.msgpack.Decoder(_Header)
        self._raw = msgspec.msgpack.Decoder(_RawEnvelope)
        self._map = msgspec.msgpack.Decoder(dict[str, Any])

    def schema_of(self, event: Event) -> int:
        """The current schema version of `event`'s class."""
        return self._schemas[type(event)]

    def encode(self, envelope: Envelope) -> bytes:
        """The stored bytes of `envelope`, in the codec this one writes."""
        if self.writes == 1:
            if envelope.principal == LOCAL:  # as records were before envelopes carried one
                return self._encoder.encode(msgspec.structs.astuple(envelope)[:-1])
            return self._encoder.encode(envelope)
        return self._compact.encode(*msgspec.structs.astuple(envelope), codec=self.writes)

    def writing(self, codec: int) -> Codec:
        """This codec (its decoders shared), writing records of `codec`."""
        if codec == self.writes:
            return self
        other = Codec.__new__(Codec)
        vars(other).update(vars(self), writes=codec)
        return other

    def encode_event(self, event: Event) -> bytes:
        """The stored bytes of an event alone (used to fingerprint writes)."""
        return self._encoder.encode(event)

    def decode(self, data: Stored) -> Envelope:
        """Decode one stored envelope, upcasting an old event shape.

        Raises:
            UnknownEventError: If the event type or its schema version cannot be read.
        """
        codec = _compact(data)
        if codec:
            return self._decode_compact(data, codec)
        try:
            envelope: Envelope = self._decoder.decode(data)  # type: ignore[assignment]  # a subclass of it
        except msgspec.ValidationError:
            return self._decode_slowly(data)
        if envelope.schema_version != self._schemas[type(envelope.event)]:
            return self._decode_slowly(data)
        return envelope

    def decode_many(self, values: Sequence[Stored], *, slim: bool = False) -> list[Envelope]:
        """Decode a batch of stored envelopes in one call (the fast path of log scans).

        With `slim`, the audit fields are left undecoded (see `SlimEnvelope`).
        """
        codecs = set(map(_compact, values))
        if codecs != {0}:
            return self._decode_many_compact(values, *codecs) if len(codecs) == 1 else [self.decode(v) for v in values]
        buffer = b"\xdd" + struct.pack(">I", len(values)) + b"".join(values)
        try:
            envelopes: list[Envelope] = (self._slim_many if slim else self._many).decode(buffer)
        except msgspec.ValidationError:
            return [self.decode(value) for value in values]
        schemas = self._schemas
        for index, envelope in enumerate(envelopes):
            if envelope.schema_version != schemas[type(envelope.event)]:
                envelopes[index] = self._decode_slowly(values[index])
        return envelopes

    def recorded_at(self, data: Stored) -> int:
        """Only the timestamp of a stored envelope (cheap: the event is not decoded)."""
        return self._header.decode(data).recorded_at

    def position(self, data: Stored) -> int:
        """Only the position a stored envelope claims."""
        return self._header.decode(data).position

    def _decode_many_compact(self, values: Sequence[Stored], codec: int) -> list[Envelope]:
        try:
            pairs = self._compact.decode_many(values, codec)
        except msgspec.ValidationError:
            return [self.decode(value) for value in values]
        schemas, stream, make = self._schemas, self._compact.stream, self._envelope
        calls: dict[Any, str] = {}  # one call's events share its correlation id
        out: list[Envelope] = []
        for index, (record, event) in enumerate(pairs):
            if record.schema_version != schemas[type(event)]:
                out.append(self._decode_compact(values[index], codec))
                continue
            call = record.correlation_id
            correlation = calls.get(call)
            if correlation is None:
                correlation = calls[call] = call.hex() if isinstance(call, bytes) else call[0]
            out.append(make(record.position, stream(record, event), record.version, record.recorded_at,
                            record.schema_version, record.actor, correlation, record.idempotency_key, event,
                            record.principal or LOCAL))
        return out

    def _decode_compact(self, data: Stored, codec: int) -> Envelope:
        compact = self._compact
        record = compact.record(data, codec)
        try:
            event = compact.event(record.event, codec)
        except msgspec.ValidationError:
            event = None
        if event is None or record.schema_version != self._schemas[type(event)]:
            event = self._lift(record.position, record.schema_version, lambda: compact.fields(record.event,
                                                                                                record.schema_version))
        return self._envelope(record.position, compact.stream(record, event), record.version, record.recorded_at,
                        self._schemas[type(event)], record.actor, compact.correlation(record), record.idempotency_key,
                        event, compact.principal(record))

    def _lift(self, position: int, schema: int, fields_of: Callable[[], dict[str, Any]]) -> Event:
        """An event of a codec-2 or codec-3 record at an older schema, lifted by the upcasters.

        Raises:
            UnknownEventError: If its tag, its schema or its old layout is unknown.
        """
        try:
            fields = fields_of()
        except KeyError:
            raise UnknownEventError(
                f"event at position {position} is at schema {schema}, whose stored layout this version of "
                "Chronograph does not know; upgrade Chronograph to read this store") from None
        return self._event_of(position, schema, fields)

    def _decode_slowly(self, data: Stored) -> Envelope:
        raw = self._raw.decode(data)
        event = self._event_of(raw.position, raw.schema_version, self._map.decode(raw.event))
        cls = type(event)
        return Envelope(
            position=raw.position,
            stream=raw.stream,
            version=raw.version,
            recorded_at=raw.recorded_at,
            schema_version=cls.schema,
            actor=raw.actor,
            correlation_id=raw.correlation_id,
            idempotency_key=raw.idempotency_key,
            event=event,
            principal=raw.principal,
        )

    def _event_of(self, position: int, schema: int, fields: dict[str, Any]) -> Event:
        """The event of a stored map at `schema`, lifted to its class's current schema.

        Raises:
            UnknownEventError: If its type or its schema cannot be read.
        """
        tag = fields.get("type")
        cls = self.events.get(tag) if isinstance(tag, str) else None
        if cls is None or not isinstance(tag, str):
            raise UnknownEventError(
                f"event at position {position} has type {tag!r}, which this version of "
                "Chronograph does not know; upgrade Chronograph to read this store"
            )
        if schema > cls.schema:
            raise UnknownEventError(
                f"event at position {position} ({tag}) is at schema {schema}, "
                f"newer than this version of Chronograph reads ({cls.schema}); upgrade it"
            )
        lifted = self._upcasters.upcast(tag, schema, cls.schema, fields)
        try:
            return msgspec.convert(lifted, cls)
        except msgspec.ValidationError as error:
            raise UnknownEventError(
                f"event at position {position} ({tag}, schema {schema}) cannot be read: {error}"
            ) from None
