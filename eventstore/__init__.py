"""The log: immutable events appended to streams, read back by stream, position or time.

`EventLog` is what every backend does; `LmdbLog` is the embedded one. Nothing here
knows who uses it: higher layers register inline hooks that run inside the append's
write transaction, and may keep their own databases in the log's LMDB environment.
"""

from chronograph.eventstore import events
from chronograph.eventstore.catalogue import CATALOGUE
from chronograph.eventstore.codec import LOCAL, UPCASTERS, Codec, Envelope, Upcasters
from chronograph.eventstore.errors import (
    CommitUnconfirmedError,
    ConcurrencyError,
    EventStoreError,
    IdempotencyConflictError,
    StorageFullError,
    StoreBusyError,
    StoreCorruptError,
    StoreFormatError,
    StoreOpenError,
    StoreRefusedError,
    StoreUnavailableError,
    StoreWriteError,
    StreamFullError,
    UnknownEventError,
)
from chronograph.eventstore.events import *  # noqa: F403 (the events, as `events.__all__` names them)
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
    "EXISTS",
    "FORMAT_VERSION",
    "LOCAL",
    "NO_STREAM",
    "UPCASTERS",
    "AppendResult",
    "Codec",
    "CommitUnconfirmedError",
    "ConcurrencyError",
    "Envelope",
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
    "Scrubbed",
    "StorageFullError",
    "StreamFullError",
    "StoreBusyError",
    "StoreCorruptError",
    "StoreFormatError",
    "StoreOpenError",
    "StoreRefusedError",
    "StoreUnavailableError",
    "StoreWriteError",
    "StreamWrite",
    "UnknownEventError",
    "Upcasters",
    *events.__all__,
]
