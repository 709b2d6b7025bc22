"""A command's write: one transaction that parses nothing and decides everything.

`Memory.write` checks the caller and runs the adapters' work around it; `commit` is the
transaction itself: a retried requestId answered from what the log remembers, the command
decided against the live views (folding each event into an overlay), its events appended
guarded by the versions read and folded into the views inline, and the answer made from
what the overlay folded: exactly what was stored. Nothing of a rejected call is written.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import msgspec
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.erasing import settle_owed, unconfirmed
from chronograph.application.engine.outputs import Out
from chronograph.application.engine.registry import Tool
from chronograph.application.errors import (
    ChronographError,
    OutcomeUnknownError,
    RequestReplayError,
    StorageError,
    StoreUnreachableError,
)
from chronograph.eventstore import (
    CommitUnconfirmedError,
    ConcurrencyError,
    EventStoreError,
    LogTransaction,
    StorageFullError,
    StoreUnavailableError,
    StoreWriteError,
)
from chronograph.eventstore.keys import digest
from chronograph.projections import LmdbState, ProjectionError
from msgspec import UNSET

if TYPE_CHECKING:
    from chronograph.application.engine.service import Memory

__all__ = ["Written", "commit", "unanswered"]


class Written(msgspec.Struct, frozen=True):
    """What a call returns: its output, and whether it changed the store."""

    output: Out
    changed: bool
    replayed: bool = False
    workspaces: tuple[str, ...] = ()
    """The workspaces the call touched (each checked against its principal's grants)."""


class _Remembered(msgspec.Struct, frozen=True, array_like=True):
    arguments: bytes
    """digest of the call's arguments (without the requestId)"""
    output: msgspec.Raw
    final: bool = False
    """whether `output` is the call's whole answer: stored after the work its commit owed (an
    erasure's scrub), or it owed none (False also for what versions before kept)"""


def commit(memory: Memory, spec: Tool, args: Any, *, actor: str, correlation_id: str | None, principal: str,
           writer: str | None = None) -> Written:
    """Run the command `spec` with parsed `args` in one write transaction of `memory`'s views,
    its events recorded as `actor`'s and `principal`'s (`correlation_id`, default: a new one),
    through the connection `writer` names (see `Memory.writer_for`).

    Raises:
        RequestReplayError: If its requestId was used with other arguments, or erased.
        StorageError: If the store could not take the write; nothing was written (a
            `StoreUnreachableError` if its database cannot be reached; an `OutcomeUnknownError`
            if its commit was cut off: it may or may not have been stored).
        ChronographError: What the command refuses; nothing was written.
    """
    workspace: str = getattr(args, "workspace", "default")
    request_id = getattr(args, "request_id", UNSET)
    key = None if request_id is UNSET else f"{spec.name}\x00{workspace}\x00{request_id}"
    fingerprint = b""
    if key is not None:
        fingerprint = digest(msgspec.msgpack.encode(msgspec.structs.replace(args, request_id=UNSET)), 32)
    correlation = correlation_id or os.urandom(16).hex()

    def prepared(tx: LogTransaction, views: LmdbState) -> Batch:
        batch = Batch(tx, views, workspace, actor=actor, correlation_id=correlation, idempotency_key=key)
        batch.teams = memory.teams
        batch.writer = writer
        batch.scrub = memory.scrub
        batch.reader = memory.log.read
        batch.owed = memory.owed
        batch.store = memory.log.location
        batch.cache = "" if memory.cache is None else str(memory.cache.path)
        if memory.semantic is not None:
            batch.embed_now = memory.semantic.embed_now
        batches.append(batch)
        return batch

    def work(tx: LogTransaction, views: LmdbState) -> Written:
        batches.clear()
        answers.clear()
        if key is not None:
            recalled = tx.recall(key)
            if recalled is not None:
                if recalled.result is None:
                    raise RequestReplayError(spec.name, str(request_id), erased=True)
                remembered = msgspec.msgpack.decode(recalled.result, type=_Remembered)
                if remembered.arguments != fingerprint:
                    raise RequestReplayError(spec.name, str(request_id))
                output = msgspec.msgpack.decode(remembered.output, type=spec.output)
                if spec.replayed is not None and not remembered.final:  # stored before the work its commit owed
                    spec.replayed(prepared(tx, views))
                return Written(output, changed=False, replayed=True)
        batch = prepared(tx, views)
        output = spec.handler(batch, args)
        answers.append(output)
        writes = batch.writes()
        if writes or key is not None:
            result = None
            if key is not None:
                final = not (batch.afterwards or batch.unlocked)
                result = msgspec.msgpack.encode(
                    _Remembered(fingerprint, msgspec.Raw(msgspec.msgpack.encode(output)), final)
                )
            appended = tx.append(
                writes, actor=actor, correlation_id=correlation, idempotency_key=key, result=result,
                principal=principal,
            )
            batch.confirm(appended)
        return Written(output, changed=bool(writes))

    batches: list[Batch] = []  # the one of the transaction that committed (none: a plain replay)
    answers: list[Out] = []
    stored = False
    try:
        with memory.lock:
            try:
                written = memory.views.transact(work)
            except BaseException:
                if memory.teams.dirty:
                    memory.teams.discard()
                raise
            stored = True
            memory.teams.committed()
            if written.changed:
                for hook in memory.after_commit:
                    hook(memory, spec, args, written)
            if batches and batches[-1].afterwards:
                output = written.output
                for then in batches[-1].afterwards:
                    output = then(output)
                written = msgspec.structs.replace(written, output=output)
            settle_owed(memory)  # a scrub an erasure cut off owes (after this call's own, which may be it)
    except (EventStoreError, ProjectionError) as error:
        if isinstance(error, CommitUnconfirmedError) and not stored and batches and answers:
            unconfirmed(memory.owed, batches[-1], answers[-1])  # it may have landed: its retry is told so
        raise _refusal(error, stored, retry=None if not hasattr(args, "request_id") else (
            None if request_id is UNSET else str(request_id)), erasure=spec.replayed is not None) from None
    if batches and batches[-1].unlocked:
        output = written.output
        for then in batches[-1].unlocked:
            output = then(output)
        written = msgspec.structs.replace(written, output=output)
    if key is not None and batches and (batches[-1].afterwards or batches[-1].unlocked):
        _keep_final(memory, key, fingerprint, written.output)
    return written


def _refusal(
    error: EventStoreError | ProjectionError, stored: bool, retry: str | None = None, erasure: bool = False
) -> ChronographError:
    """What a write's caller is told of `error`, met before its commit landed or after (`stored`:
    in what followed it, such as an erasure's hooks); `retry`: the call's requestId (None: it
    gave none, or the tool takes none); `erasure`: the tool settles a retry of itself (a forget)."""
    if isinstance(error, CommitUnconfirmedError) and not stored:  # (before StoreUnavailableError, its base)
        advice = _after_unknown_erasure(retry) if erasure else _after_unknown(retry)
        return OutcomeUnknownError(f"The store could not confirm the write: {error}. {advice}")
    if stored:
        return StorageError(f"The write was stored, but what follows it could not be done: {error}")
    if isinstance(error, StorageFullError | StoreWriteError):  # each says what to do, and that nothing was written
        return StorageError(str(error))
    if isinstance(error, ConcurrencyError):  # only if the views were wrong about a version
        return ChronographError(f"{error}; nothing was written")
    if isinstance(error, StoreUnavailableError):  # it says itself that nothing was written
        return StoreUnreachableError(f"The store could not take the write: {error}")
    return StorageError(f"The store could not take the write: {error}; nothing was written")


def unanswered(error: EventStoreError | ProjectionError) -> ChronographError:
    """What a read's caller is told of `error`, which the store met answering it."""
    if isinstance(error, StoreUnavailableError):
        return StoreUnreachableError(f"The store could not answer: {error}")
    return StorageError(f"The store could not answer: {error}")


def _after_unknown(retry: str | None) -> str:
    """What to do after a write whose outcome is unknown (see `OutcomeUnknownError`)."""
    reads = "the next read catches this server up with the log first, so it shows the write if it was stored"
    if retry is not None:
        return (f"Retry the call with the same requestId {retry!r}: if the write was stored, the retry answers "
                f"what it stored and writes nothing again; if not, the retry writes it ({reads})")
    return (f"Read before you retry ({reads}): a retry without a requestId writes it again if it was stored; "
            "give calls a requestId and a retry answers what was stored instead")


def _after_unknown_erasure(retry: str | None) -> str:
    """What to do after an erasure whose outcome is unknown: its retry settles it (see `erasing.Owed`)."""
    if retry is not None:
        return (f"Retry the same call with the same requestId {retry!r}: if the erasure was stored, the retry "
                "answers that it was, finishing its scrub, and erases nothing again; if not, the retry erases")
    return ("Retry the same call through this server: if the erasure was stored, the retry answers that it was "
            "and finishes its scrub; if not, it erases (another server, or this one restarted, answers "
            "not_found for an erasure that was stored; this server finishes the scrub at its next write)")


def _keep_final(memory: Memory, key: str, fingerprint: bytes, output: Out) -> None:
    """Remember `output`, the answer completed after the commit (a scrub's outcome, an
    embedding), under the call's key in place of the one stored with its events, so that a
    retry answers what the first call answered. Best effort: the call has committed, and if
    this fails a retry answers as the commit left it."""
    final = msgspec.msgpack.encode(_Remembered(fingerprint, msgspec.Raw(msgspec.msgpack.encode(output)), True))

    def attach(tx: LogTransaction) -> None:
        recalled = tx.recall(key)
        if recalled is None or recalled.result is None:  # erased since: keep it so
            return
        if msgspec.msgpack.decode(recalled.result, type=_Remembered).arguments == fingerprint:
            tx.attach_result(key, final)

    try:
        with memory.lock:
            memory.log.transact(attach)
    except (EventStoreError, ProjectionError, ChronographError):  # the call stands; only its retry is poorer
        pass
