"""The embedded backend of the log: one LMDB environment that many processes share.

`env` is the environment (growing itself, refusing what is not a store), `log` the
`EventLog` over it, `reader` and `writer` its transactions, `erase` the one rewrite the
log allows (forgetting) and `scrub` the zeroing of what LMDB leaves of erased bytes.
"""

from chronograph.eventstore.lmdb.env import DATA_FILE, DEFAULT_MAP_SIZE, LmdbEnv
from chronograph.eventstore.lmdb.log import FORMAT_VERSION, LmdbLog
from chronograph.eventstore.lmdb.reader import LmdbReader
from chronograph.eventstore.lmdb.writer import LmdbTransaction

__all__ = ["DATA_FILE", "DEFAULT_MAP_SIZE", "FORMAT_VERSION", "LmdbEnv", "LmdbLog", "LmdbReader", "LmdbTransaction"]
