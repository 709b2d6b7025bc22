"""The log: immutable events appended to LMDB, read back by stream, position or time.

Nothing here knows who uses it: higher layers register inline hooks that run inside
the append's write transaction, and open their own named databases in the store.
"""

from eventstore.codec import UPCASTERS, Codec, Envelope, Upcasters
from eventstore.errors import (
    ConcurrencyError,
    EventStoreError,
    IdempotencyConflictError,
    StorageFullError,
    StoreCorruptError,
    StoreFormatError,
    StoreOpenError,
    UnknownEventError,
)
from eventstore.events import (
    CATALOGUE,
    ContextStatus,
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Event,
    ObservationsAdded,
    ObservationsDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    event_type,
)
from eventstore.reader import Reader
from eventstore.store import DEFAULT_MAP_SIZE, FORMAT_VERSION, EventStore
from eventstore.writer import InlineHook, Transaction
from eventstore.writes import ANY, EXISTS, NO_STREAM, AppendResult, ExpectedVersion, StreamWrite

__all__ = [
    "ANY",
    "CATALOGUE",
    "DEFAULT_MAP_SIZE",
    "EXISTS",
    "FORMAT_VERSION",
    "NO_STREAM",
    "UPCASTERS",
    "AppendResult",
    "Codec",
    "ConcurrencyError",
    "ContextStatus",
    "ContextUpdated",
    "EntityCreated",
    "EntityDeleted",
    "EntityUpdated",
    "Envelope",
    "Event",
    "EventStore",
    "EventStoreError",
    "ExpectedVersion",
    "IdempotencyConflictError",
    "InlineHook",
    "ObservationsAdded",
    "ObservationsDeleted",
    "Reader",
    "RelationCreated",
    "RelationDeleted",
    "RelationUpdated",
    "StorageFullError",
    "StoreCorruptError",
    "StoreFormatError",
    "StoreOpenError",
    "StreamWrite",
    "Transaction",
    "UnknownEventError",
    "Upcasters",
    "event_type",
]
