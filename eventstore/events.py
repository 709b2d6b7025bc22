"""The event catalogue: every fact Chronograph can record, as a frozen msgspec Struct.

Rules that keep old logs readable forever:

* a tag is never reused or renamed; a field is never retyped or removed;
* a new field gets a default, so events written before it still decode;
* any other change of shape bumps the class's `schema` and registers an upcaster
  (see `eventstore.codec`) that turns the old shape into the new one.

Field names are snake_case in Python and camelCase on disk and on the wire, the
same spelling the MCP tools use (`entityType`, `relationType`, `from`).

An entity's stream is its stable id; the events after `EntityCreated` carry only
what changed. A relation's stream is derived from (workspace, from, relationType,
to); a workspace's context has one stream.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "ERASED_NAME",
    "GRAPH_EVENTS",
    "ContentErased",
    "ContextStatus",
    "ContextUpdated",
    "EntityCreated",
    "EntityDeleted",
    "EntityForgotten",
    "EntityMerged",
    "EntityRenamed",
    "EntityRestored",
    "EntityUpdated",
    "Event",
    "ObservationsAdded",
    "ObservationsDeleted",
    "ObservationsInvalidated",
    "RelationCreated",
    "RelationDeleted",
    "RelationInvalidated",
    "RelationUpdated",
    "event_type",
]

ContextStatus = Literal["IN_PROGRESS", "COMPLETED", "BLOCKED", "PLANNING"]


class Event(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    rename="camel",
    tag_field="type",
    gc=False,
):
    """Base of every event. Subclasses set a stable `tag` and, when reshaped, `schema`."""

    schema: ClassVar[int] = 1


def event_type(event: Event | type[Event]) -> str:
    """The stable tag of an event or event class, e.g. ``"entity_created"``."""
    return event.__struct_config__.tag  # type: ignore[return-value]


# --- entities ---------------------------------------------------------------------------


class EntityCreated(Event, frozen=True, tag="entity_created"):
    """An entity came into being under a name that was free in its workspace.

    On a stream that already has events (a deleted entity), it restores the entity;
    `reverted_to` then names the version whose state it restored. (Reverts wrote that
    until 2026-11-25; they write `EntityRestored` now.)
    """

    workspace: str
    name: str
    entity_type: str
    observations: tuple[str, ...] = ()
    metadata: dict[str, Any] = {}
    reverted_to: int | UnsetType = UNSET


class EntityRestored(EntityCreated, frozen=True, kw_only=True, tag="entity_restored"):
    """A deleted or merged entity came back, by a revert, on its own stream: the state it had
    at version `reverted_to`, recorded at log position `restores`, under the name it had
    then. `created_at` (µs) is when that state's entity was created, which it keeps.

    An `EntityCreated` in every way a reader of names needs (search, erasure, history).
    """

    reverted_to: int
    restores: int
    created_at: int
    validity: dict[str, tuple[int | None, int | None]] = {}
    """When the restored observations were true (µs, from and until; None: open), for those that
    had a valid time then (written since 2026-12-06; earlier restores had none)."""


class ObservationsAdded(Event, frozen=True, tag="observations_added"):
    """Observations were appended to an entity (the ones it did not have yet), or stated again
    (ones it has whose valid time had ended or did not cover the new one: since 2026-12-06).

    `valid_from` / `valid_until` (µs) say when what they state was true in the world, when
    the writer said so (valid time; the log's own time says when the memory learned it); every
    observation of the event has that span afterwards (none: none).
    """

    observations: tuple[str, ...]
    valid_from: int | UnsetType = UNSET
    valid_until: int | UnsetType = UNSET
    moved_from: str | UnsetType = UNSET
    """The stream of the entity a merge moved them from, where they were first recorded (written
    since 2026-12-06; earlier merges' moves have none)."""


class ObservationsInvalidated(Event, frozen=True, tag="observations_invalidated"):
    """Observations stopped being true `at` (µs); they stay, marked, and history keeps them."""

    observations: tuple[str, ...]
    at: int


class ObservationsDeleted(Event, frozen=True, tag="observations_deleted"):
    """Observations were removed from an entity (only the ones it had)."""

    observations: tuple[str, ...]


class EntityUpdated(Event, frozen=True, tag="entity_updated"):
    """An entity's type, whole observation list and/or metadata were replaced.

    A field left UNSET was not changed. `reverted_to` names the version whose state
    this update restored, when it was written by a revert.
    """

    entity_type: str | UnsetType = UNSET
    observations: tuple[str, ...] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    reverted_to: int | UnsetType = UNSET
    validity: dict[str, tuple[int | None, int | None]] | UnsetType = UNSET
    """When a revert writes it: the valid time of every observation the restored state gave one
    (µs, from and until; None: open); the others have none (an invalidation since is undone)."""


class EntityDeleted(Event, frozen=True, tag="entity_deleted"):
    """An entity was deleted; its stream and history remain."""


class EntityRenamed(Event, frozen=True, tag="entity_renamed"):
    """An entity took a free name in its workspace; its stream and history stay its own, and the
    old name keeps reaching them. `previous` is the name it had (for readers of the log)."""

    name: str
    previous: str


class EntityMerged(Event, frozen=True, tag="entity_merged"):
    """A duplicate was merged into the entity called `into`: its observations and relations
    moved there in the same call; it left the live graph, its history stays."""

    into: str


# --- relations --------------------------------------------------------------------------


class RelationCreated(Event, frozen=True, tag="relation_created"):
    """A directed, typed relation was created between two entity names."""

    workspace: str
    source: str = msgspec.field(name="from")
    target: str = msgspec.field(name="to")
    relation_type: str
    confidence: float | None = None
    metadata: dict[str, Any] = {}
    valid_from: int | UnsetType = UNSET
    valid_until: int | UnsetType = UNSET


class RelationUpdated(Event, frozen=True, tag="relation_updated"):
    """A relation's confidence and/or metadata were replaced (UNSET: unchanged)."""

    confidence: float | None | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET


class RelationDeleted(Event, frozen=True, tag="relation_deleted"):
    """A relation was deleted; re-creating it continues the same stream."""


class RelationInvalidated(Event, frozen=True, tag="relation_invalidated"):
    """A relation stopped being true `at` (µs); it stays, marked, and history keeps it."""

    at: int


# --- context ----------------------------------------------------------------------------


class ContextUpdated(Event, frozen=True, tag="context_updated"):
    """Fields of a workspace's working context were set (UNSET: left as they were)."""

    workspace: str
    active_task: str | None | UnsetType = UNSET
    status: ContextStatus | None | UnsetType = UNSET
    reason: str | None | UnsetType = UNSET
    next_steps: tuple[str, ...] | None | UnsetType = UNSET
    last_commit: str | None | UnsetType = UNSET


# --- erasure ----------------------------------------------------------------------------


ERASED_NAME = "(erased)"
"""What a redacted reference to a forgotten entity's name reads (e.g. `EntityMerged.into`)."""


class ContentErased(Event, frozen=True, tag="content_erased"):
    """What an event said was erased when its entity was forgotten; the envelope stays
    (position, stream, version, time, actor, call). `erased` is the tag of the event it
    replaced, `workspace` the workspace it was about."""

    erased: str
    workspace: str = ""


class EntityForgotten(Event, frozen=True, tag="entity_forgotten"):
    """The record of an erasure: an entity's every event (names, observations, metadata), and
    every event of the relations naming it, were erased from the log and from everything
    derived from it. It says who asked (its envelope), why, and how much went; not what.

    `relations` are the erased relation streams, under the opaque ids they were moved to.
    """

    workspace: str
    reason: str
    events: int
    relations: tuple[str, ...] = ()


GRAPH_EVENTS: tuple[type[Event], ...] = (
    EntityCreated,
    ObservationsAdded,
    ObservationsDeleted,
    EntityUpdated,
    EntityDeleted,
    RelationCreated,
    RelationUpdated,
    RelationDeleted,
    ContextUpdated,
    EntityRenamed,
    EntityMerged,
    ObservationsInvalidated,
    RelationInvalidated,
    ContentErased,
    EntityForgotten,
    EntityRestored,
)
"""The knowledge graph's events, in the order they were introduced."""
