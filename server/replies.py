"""The SDK's answers to `initialize` and `tools/list`, kept in the store for the stdio front.

Both answers depend only on the code (Chronograph's and the SDK's versions), the profile,
whether exports write files, and the protocol version the client asked for. The first
session served by the SDK keeps them (`replies.v1`); later sessions' front answers with
the very same JSON without importing the SDK. A change of any of those is a new key, so a
kept answer is never stale; the database is a cache, dropped with nothing lost.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from chronograph.application import Memory
from chronograph.eventstore.keys import digest
from chronograph.server.config import Settings

import chronograph

__all__ = ["ReplyCache"]


class ReplyCache:
    """Kept answers for one server's settings, in its store."""

    NAME = "replies.v1"

    def __init__(self, memory: Memory, settings: Settings) -> None:
        env = memory.views.env
        self.env = env
        self.lock = memory.lock
        absent = env.readonly and self.NAME not in env.database_names()
        self.db = None if absent else env.open_db(self.NAME)
        versions = _versions("mcp", "mcp_types")
        if versions is None:  # an SDK whose version cannot be told: keep nothing rather than risk a stale answer
            self.db = None
        self._code = "|".join([chronograph.__version__, *(versions or []), settings.profile,
                               "exports" if settings.export_dir is not None else "no-exports"])

    def _key(self, method: str, protocol: str) -> bytes:
        return digest(f"{self._code}|{method}|{protocol}".encode())

    def get(self, method: str, protocol: str) -> bytes | None:
        """The kept JSON result of `method` for a client that asked for `protocol`."""
        if self.db is None:
            return None
        with self.lock, self.env.read() as txn:
            value = txn.get(self._key(method, protocol), db=self.db)
            return None if value is None else bytes(value)

    def put(self, method: str, protocol: str, result: bytes) -> None:
        """Keep the SDK's JSON result of `method` (nothing happens on a read-only store)."""
        if self.db is None or self.env.readonly or self.get(method, protocol) == result:
            return
        db, key = self.db, self._key(method, protocol)
        with self.lock:
            self.env.write(lambda txn: txn.put(key, result, db=db))


def _versions(*packages: str) -> list[str] | None:
    """Each package's installed distribution (name-version.dist-info), found without importing it;
    None if one is not exactly one."""
    found = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        origin = None if spec is None or spec.origin is None else Path(spec.origin).parent.parent
        names = [] if origin is None else [p.name for p in origin.glob(f"{package}-*.dist-info")]
        if len(names) != 1:
            return None
        found.append(names[0])
    return found
