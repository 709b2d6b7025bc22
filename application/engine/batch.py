"""A command's unit of work: what it has read and what it has decided, in one write transaction.

A command reads the live views through an `Overlay` and decides events with `emit`.
Each event is folded into the overlay at once, in the envelope the log will store
(the position, version and timestamp it will get), so later items of the same call see
it, and the command answers from exactly what the views will hold: one fold, one truth.
`writes()` hands the events to one append, in the order decided, each stream guarded by
the version it was read at.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from chronograph.application.engine.outputs import entity_out, relation_out
from chronograph.application.errors import ConflictError
from chronograph.eventstore import (
    NO_STREAM,
    AppendResult,
    Envelope,
    Event,
    LogReader,
    LogTransaction,
    Scrubbed,
    StreamWrite,
)
from chronograph.eventstore.writes import ExpectedVersion
from chronograph.projections import ContextRecord, EntityRecord, LmdbState, Overlay, RelationRecord, apply
from chronograph.projections.team.view import TeamView
from msgspec import UNSET

__all__ = ["Batch"]


class Batch:
    """Reads through an overlay of the live views, folds what it decides, never writes itself."""

    def __init__(
        self,
        tx: LogTransaction,
        views: LmdbState,
        workspace: str,
        *,
        actor: str,
        correlation_id: str,
        idempotency_key: str | None = None,
    ) -> None:
        self.tx = tx
        self.state = Overlay(views)
        self.workspace = workspace
        self._actor = actor
        self._correlation_id = correlation_id
        self._key = idempotency_key
        self._head = tx.head()
        self._at = tx.recorded_at
        self._versions: dict[str, int] = {}
        self._runs: list[tuple[str, ExpectedVersion, list[Event]]] = []
        self._count = 0
        self.teams: TeamView | None = None
        """The team memory of the store (set by the memory running the command)."""
        self.scrub: Callable[[Sequence[bytes]], Scrubbed] | None = None
        """Overwrites what erasures left in the store's files (set by the memory running the command)."""
        self.reader: Callable[[], AbstractContextManager[LogReader]] | None = None
        """A read snapshot of the log, for work after the commit (set by the memory running the command)."""
        self.owed: Any = None
        """What the memory's erasures still owe (`erasing.Owed`; set by the memory running the command)."""
        self.erasing: tuple[str, tuple[bytes, ...]] | None = None
        """What this batch erases, if it is an erasure: its subject and needles (`erasing.scrub_after`)."""
        self.writer: str | None = None
        """Which connection the command came through (`Memory.writer_for`), for the events that keep it."""
        self.store = ""
        """Where the store is (a path, a URL without secrets): the commands a message advises name it"""
        self.cache = ""
        """Where a database store's views are kept on this machine (its cache folder): the commands
        a message advises name it too, so that they open that cache and not the per-user one"""
        self.observers: list[Callable[[Envelope], None]] = []
        """Other states that fold each decided event too (the team memory's)."""
        self.embed_now: Callable[[Sequence[EntityRecord]], bool] | None = None
        """Embeds committed entities at once, when semantic search is on (set by the memory
        running the command; see `Semantic.embed_now`): call it from `unlocked`."""
        self.afterwards: list[Callable[[Any], Any]] = []
        """Work that must wait for the commit, each given the answer and returning it (completed);
        run in order, outside the transaction (see `then`)."""
        self.unlocked: list[Callable[[Any], Any]] = []
        """Slow work after the commit that needs no hold of the store (embedding), run as
        `afterwards` is but once the store's lock is released, so other calls go on meanwhile;
        it takes the lock itself for what it stores, and must not raise for a failure of its own."""

    # --- reading, as this batch has changed things so far ------------------------------------

    def entity(self, name: str) -> EntityRecord | None:
        """The live entity called `name`, or None."""
        return self.state.live_entity(self.workspace, name)

    def exists(self, name: str) -> bool:
        """Whether an entity called `name` is live (cheaper than `entity`: it is not decoded)."""
        return self.state.has_entity(self.workspace, name)

    def relation(self, source: str, relation_type: str, target: str) -> RelationRecord | None:
        """The live relation with this identity, or None."""
        return self.state.relation(self.workspace, source, relation_type, target)

    def relations_of(self, name: str) -> list[RelationRecord]:
        """The live relations touching `name`, oldest first."""
        return self.state.relations_of(self.workspace, name)

    def context(self) -> ContextRecord | None:
        """The workspace's context, or None if it was never set."""
        return self.state.context(self.workspace)

    # --- deciding ------------------------------------------------------------------------------

    def check(self, what: str, expected: int | Any, current: EntityRecord | RelationRecord | None) -> None:
        """Raise ConflictError unless `current` is at `expected` (UNSET: no check; 0: absent)."""
        if expected is UNSET:
            return
        version = 0 if current is None else current.version
        if version != expected:
            state: Any = None
            if isinstance(current, EntityRecord):
                state = entity_out(current)
            elif isinstance(current, RelationRecord):
                state = relation_out(current)
            raise ConflictError(what, expected, version, state)

    def emit(self, stream: str, event: Event, *, new: bool = False) -> int:
        """Decide `event` for `stream` (a fresh stream when `new`) and fold it; return its version."""
        version = self._versions.get(stream)
        if version is None:
            version = 0 if new else self.tx.stream_version(stream)
            self._runs.append((stream, NO_STREAM if new else version, [event]))
        elif self._runs[-1][0] == stream:
            self._runs[-1][2].append(event)
        else:  # the stream again, after others: guarded by the version decided so far
            self._runs.append((stream, version, [event]))
        version += 1
        self._versions[stream] = version
        self._count += 1
        envelope = Envelope(
            position=self._head + self._count, stream=stream, version=version, recorded_at=self._at,
            schema_version=type(event).schema, actor=self._actor, correlation_id=self._correlation_id,
            idempotency_key=self._key, event=event,
        )
        apply(self.state, envelope)
        for observer in self.observers:
            observer(envelope)
        return version

    def then(self, work: Callable[[Any], Any]) -> None:
        """Run `work(answer) -> answer` once this batch has committed (forgetting scrubs the
        storage then: what it erased must first be out of every page a commit can reach)."""
        self.afterwards.append(work)

    @property
    def recorded_at(self) -> int:
        """The time every event of this batch is recorded at (µs)."""
        return self._at

    @property
    def correlation_id(self) -> str:
        """The call the batch's events are recorded as part of."""
        return self._correlation_id

    def last_written(self) -> tuple[str, int] | None:
        """The stream of the last decided event and the version it gets (None: nothing decided)."""
        return (self._runs[-1][0], self._versions[self._runs[-1][0]]) if self._runs else None

    @property
    def actor(self) -> str:
        """Who the batch's events are recorded as."""
        return self._actor

    def writes(self) -> list[StreamWrite]:
        """Every decided event, in the order decided, guarded by the versions read."""
        return [StreamWrite(stream, events, expected) for stream, expected, events in self._runs]

    def confirm(self, appended: AppendResult) -> None:
        """Check that the log stored the events where the batch folded them.

        Raises:
            AssertionError: If it did not (a bug: the answer would not match the store).
        """
        if self._count and (appended.first_position, appended.last_position) != (
            self._head + 1, self._head + self._count
        ):
            raise AssertionError(
                f"the batch folded positions {self._head + 1}..{self._head + self._count} but the log "
                f"stored {appended.first_position}..{appended.last_position}"
            )
