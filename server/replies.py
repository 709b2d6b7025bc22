"""The SDK's answers to `initialize`, `server/discover`, `ping` and `tools/list`, kept in the
store for the stdio front (and what it adds to a tool result).

They depend only on the code (the SDK's version, and what Chronograph publishes: the
profile's instructions and each tool's name, title, description and argument schema),
whether exports write files, the protocol generation (a handshake, or 2026-07-28's
requests that each name their version) and the protocol version. The first session
served by the SDK keeps them (`replies.v2`); later sessions' front answers with the very
same JSON without importing the SDK. A change of any of those is a new key, so a kept
answer is never stale; the database is a cache, dropped with nothing lost, and a failure
to keep an answer is no failure of the session.

Nothing a call said is kept: of a tool result, only what the SDK adds to a *successful* one
(the fields of the protocol version), never the content nor our own `_meta` (an error's
code and message, which may quote an entity). Every erasure drops the database whole
(`ANSWER_CACHES`), so that no answer outlives what it could have quoted. `replies.v1`,
whose tool-call entry could hold an error's message, is dropped and scrubbed at open.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import lmdb
import msgspec
from chronograph.application import Memory, profile
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.keys import digest
from chronograph.server.config import Settings
from chronograph.server.jsonschema import json_schema

import chronograph

__all__ = ["ReplyCache"]


class ReplyCache:
    """Kept answers for one server's settings, in its store."""

    NAME = "replies.v2"
    LEGACY = ("replies.v1",)
    """Databases of earlier versions that may hold what a call said: dropped and scrubbed at open."""

    def __init__(self, memory: Memory, settings: Settings) -> None:
        env = memory.views.env
        self.env = env
        self.lock = memory.lock
        with self.lock:
            names = env.database_names()
            legacy = [name for name in self.LEGACY if name in names]
            if legacy and not env.readonly:
                _drop(memory, legacy)  # first: the scrub reopens the environment
            absent = env.readonly and self.NAME not in names
            self.db = None if absent else env.open_db(self.NAME)
        versions = _versions("mcp", "mcp_types")
        if versions is None:  # an SDK whose version cannot be told: keep nothing rather than risk a stale answer
            self.db = None
        elif self.db is not None:
            env.on_reopen(lambda: setattr(self, "db", env.open_db(self.NAME)))
        code = [chronograph.__version__, *(versions or []), settings.profile,
                "exports" if settings.export_dir is not None else "no-exports"]
        self._code = "|".join([*code, self._surface(settings.profile, code)])

    def _surface(self, name: str, code: list[str]) -> str:
        """The digest of what the profile publishes (instructions, each tool's name, title,
        description and schemas), remembered in the store under a stamp of the code (the
        versions, and each source file's size and modification time): computing it resolves
        every tool's annotations, 40 to 90 ms of a spawn that answers in 250."""
        key = digest("|".join(["surface", *code, msgspec.__version__, _source_stamp()]).encode())
        if self.db is not None:
            with self.lock, self.env.read() as txn:
                kept = txn.get(key, db=self.db)
            if kept is not None:
                return bytes(kept).decode()
        published = profile(name)
        surface = digest(msgspec.json.encode([published.instructions, *(
            [tool.name, tool.title, tool.description, tool.kind, tool.files, json_schema(tool.arguments),
             json_schema(tool.output)]
            for tool in published.tools)])).hex()
        if self.db is not None and not self.env.readonly:
            try:
                with self.lock:
                    self.env.write(lambda txn: txn.put(key, surface.encode(), db=self.db))
            except (EventStoreError, lmdb.Error):
                pass
        return surface

    def _key(self, method: str, protocol: str) -> bytes:
        return digest(f"{self._code}|{method}|{protocol}".encode())

    def get(self, method: str, protocol: str) -> bytes | None:
        """The kept JSON result of `method` at `protocol` (say "handshake:2025-06-18" or
        "stateless:2026-07-28": the generation and the version)."""
        if self.db is None:
            return None
        try:
            with self.lock, self.env.read() as txn:
                value = txn.get(self._key(method, protocol), db=self.db)
                return None if value is None else bytes(value)
        except (EventStoreError, lmdb.Error):
            return None  # the SDK answers then (and the call says what is wrong with the store)

    def put(self, method: str, protocol: str, result: bytes) -> None:
        """Keep the SDK's JSON result of `method` (nothing happens on a read-only store, and a
        store that cannot take it, full or failing, just does not keep it)."""
        if self.db is None or self.env.readonly or self.get(method, protocol) == result:
            return
        key = self._key(method, protocol)
        try:
            with self.lock:
                self.env.write(lambda txn: txn.put(key, result, db=self.db))
        except (EventStoreError, lmdb.Error):
            pass


def _drop(memory: Memory, names: list[str]) -> None:
    """Delete the databases `names` and overwrite what they held in the file that keeps them (the
    store's, or a database log's cache); a failure leaves them for the next open: the session
    goes on."""
    env = memory.views.env
    try:
        handles = [env.open_db(name, create=False) for name in names]

        def drop(txn: lmdb.Transaction) -> None:
            for handle in handles:
                txn.drop(handle, delete=True)

        env.write(drop)
        env.scrub(b"meta" if memory.cache is None else b"scrub")  # the markers the log and a cache use
    except (EventStoreError, lmdb.Error):
        pass


def _source_stamp() -> str:
    """A digest of the path, size and modification time of every Python file of Chronograph's
    layers: it changes with any edit of the code, installed or checked out."""
    import chronograph.application  # noqa: PLC0415
    import chronograph.eventstore  # noqa: PLC0415
    import chronograph.projections  # noqa: PLC0415
    import chronograph.server  # noqa: PLC0415

    stamp = hashlib.blake2b(digest_size=16)
    for package in (chronograph.eventstore, chronograph.projections, chronograph.application, chronograph.server):
        for root in package.__path__:
            for path in sorted(Path(root).rglob("*.py")):
                found = path.stat()
                stamp.update(f"{path}|{found.st_size}|{found.st_mtime_ns}\n".encode())
    return stamp.hexdigest()


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
