"""The log: immutable events appended to streams, read back by stream, position or time.

`EventLog` is what every backend does; `LmdbLog` is the embedded one. Nothing here
knows who uses it: higher layers register inline hooks that run inside the append's
write transaction, and may keep their own databases in the log's LMDB environment.
"""

from chronograph.eventstore.catalogue import CATALOGUE
from chronograph.eventstore.codec import UPCASTERS, Codec, Envelope, Upcasters
from chronograph.eventstore.errors import (
    ConcurrencyError,
    EventStoreError,
    IdempotencyConflictError,
    StorageFullError,
    StoreCorruptError,
    StoreFormatError,
    StoreOpenError,
    StoreUnavailableError,
    UnknownEventError,
)
from chronograph.eventstore.events import (
    ERASED_NAME,
    ContentErased,
    ContextStatus,
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityForgotten,
    EntityMerged,
    EntityRenamed,
    EntityUpdated,
    Event,
    ObservationsAdded,
    ObservationsDeleted,
    ObservationsInvalidated,
    RelationCreated,
    RelationDeleted,
    RelationInvalidated,
    RelationUpdated,
    event_type,
)
from chronograph.eventstore.lmdb.env import DEFAULT_MAP_SIZE, LmdbEnv
from chronograph.eventstore.lmdb.log import FORMAT_VERSION, LmdbLog
from chronograph.eventstore.lmdb.reader import LmdbReader
from chronograph.eventstore.lmdb.writer import LmdbTransaction
from chronograph.eventstore.log import EraseHook, EventLog, InlineHook, LogReader, LogTransaction, Scrubbed
from chronograph.eventstore.writes import ANY, EXISTS, NO_STREAM, AppendResult, ExpectedVersion, StreamWrite

__all__ = [
    "ANY",
    "CATALOGUE",
    "DEFAULT_MAP_SIZE",
    "ERASED_NAME",
    "EXISTS",
    "FORMAT_VERSION",
    "NO_STREAM",
    "UPCASTERS",
    "AppendResult",
    "Codec",
    "ContentErased",
    "ConcurrencyError",
    "ContextStatus",
    "ContextUpdated",
    "EntityCreated",
    "EntityDeleted",
    "EntityForgotten",
    "EntityMerged",
    "EntityRenamed",
    "EntityUpdated",
    "Envelope",
    "Event",
    "EraseHook",
    "EventLog",
    "EventStoreError",
    "ExpectedVersion",
    "IdempotencyConflictError",
    "InlineHook",
    "LmdbEnv",
    "LmdbLog",
    "LmdbReader",
    "LmdbTransaction",
    "LogReader",
    "LogTransaction",
    "ObservationsAdded",
    "ObservationsDeleted",
    "ObservationsInvalidated",
    "RelationCreated",
    "RelationDeleted",
    "RelationInvalidated",
    "RelationUpdated",
    "Scrubbed",
    "StorageFullError",
    "StoreCorruptError",
    "StoreFormatError",
    "StoreOpenError",
    "StoreUnavailableError",
    "StreamWrite",
    "UnknownEventError",
    "Upcasters",
    "event_type",
]
