"""The memory service: the store and its views, and one method per kind of tool call.

MCP is a transport to this class; the CLI tools and tests can use it directly. A write
is one command in one LMDB write transaction: parse, check a retried requestId, decide
events against the live views, append them guarded by the versions read, fold them
into the views inline, build the output from what was stored. Nothing of a rejected
call is written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET

from eventstore import (
    ConcurrencyError,
    EventStore,
    StorageFullError,
    Transaction,
)
from eventstore.keys import digest
from projections import LmdbState, Progress, Views, paused_gc
from server import schemas as s
from server.arguments import parse
from server.batch import Batch
from server.commands import COMMANDS
from server.errors import ChronographError, RequestReplayError, StorageError
from server.reads import READS
from server.timeline import Timeline

__all__ = ["Memory", "Written"]


class Written(msgspec.Struct, frozen=True):
    """What a write call returns: its output, and whether it changed the store."""

    output: s.Out
    changed: bool
    replayed: bool = False


class _Remembered(msgspec.Struct, frozen=True, array_like=True):
    arguments: bytes
    """digest of the call's arguments (without the requestId)"""
    output: msgspec.Raw


class Memory:
    """A knowledge-graph memory on the store at `path` (created if missing)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        sync: bool = True,
        readonly: bool = False,
        progress: Progress | None = None,
        export_dir: Path | None = None,
        max_size: int | None = None,
    ) -> None:
        self.export_dir = export_dir
        """Where export_graph may write files (None: nowhere)."""
        self.store = EventStore(Path(path), sync=sync, readonly=readonly, max_map_size=max_size)
        try:
            self.views = Views(self.store, progress=progress)
            self.timeline = Timeline(self.store, self.views)
        except BaseException:
            self.store.close()
            raise

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- writes ---------------------------------------------------------------------------

    def write(
        self, tool: str, arguments: dict[str, Any], *, actor: str, correlation_id: str | None = None
    ) -> Written:
        """Run the write tool `tool` with raw `arguments`, recording `actor` on its events.

        `correlation_id` (default: a new one) lets several calls share one, as an import does.

        Raises:
            ChronographError: Invalid arguments, a missing item, a stale expectedVersion,
                a reused requestId or a full store; nothing was written.
        """
        command = COMMANDS[tool]
        args = parse(tool, arguments, command.arguments)
        key = None if args.request_id is UNSET else f"{tool}\x00{args.workspace}\x00{args.request_id}"
        fingerprint = digest(msgspec.msgpack.encode(msgspec.structs.replace(args, request_id=UNSET)), 32)
        correlation = correlation_id or os.urandom(16).hex()

        def work(tx: Transaction, state: LmdbState) -> Written:
            if key is not None:
                recalled = tx.recall(key)
                if recalled is not None:
                    assert recalled.result is not None
                    remembered = msgspec.msgpack.decode(recalled.result, type=_Remembered)
                    if remembered.arguments != fingerprint:
                        raise RequestReplayError(tool, str(args.request_id))
                    output = msgspec.msgpack.decode(remembered.output, type=command.output)
                    return Written(output, changed=False, replayed=True)
            batch = Batch(tx, state, args.workspace)
            finish = command.decide(batch, args)
            writes = batch.writes()
            if writes or key is not None:
                tx.append(writes, actor=actor, correlation_id=correlation, idempotency_key=key)
            output = finish()
            if key is not None:
                encoded = msgspec.msgpack.encode(_Remembered(fingerprint, msgspec.Raw(msgspec.msgpack.encode(output))))
                tx.attach_result(key, encoded)
            return Written(output, changed=bool(writes))

        try:
            return self.views.transact(work)
        except StorageFullError as error:
            raise StorageError(str(error)) from None
        except ConcurrencyError as error:  # only if the views were wrong about a version
            raise ChronographError(f"{error}; nothing was written") from None

    # --- reads ----------------------------------------------------------------------------

    def read(self, tool: str, arguments: dict[str, Any]) -> s.Out:
        """Run the read tool `tool` with raw `arguments` (on the live views, or as of then).

        Raises:
            ChronographError: If the arguments are invalid or name something unknown.
        """
        spec = READS[tool]
        with paused_gc():  # a whole graph's output forms no cycles; scanning it halved the speed
            return spec.run(self, parse(tool, arguments, spec.arguments))
