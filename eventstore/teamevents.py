"""The events of a team's memory (the Agent Memory surface): organisations, projects,
sessions, typed entries and their versions, tags, entry relations, file locks, conflicts.

The same rules as `eventstore.events` keep them readable forever (stable tags, no
retyped or removed fields, defaults for new ones). Each thing has its own stream, named
``am/<kind>/<id>``; ids are the ones the tools show (``org_…``, ``proj_…``, ``gl_…``).
Times a tool is given (`valid_until`, `expires_at`) are integer microseconds, like
every `recorded_at`.
"""

from __future__ import annotations

from typing import Any, Literal

from chronograph.eventstore.events import Event
from msgspec import UNSET, UnsetType

__all__ = [
    "TEAM_EVENTS",
    "ConflictDetected",
    "ConflictResolved",
    "EntryAdded",
    "EntryDeactivated",
    "EntryForgotten",
    "EntryReactivated",
    "EntryRelationCreated",
    "EntryRelationDeleted",
    "EntryType",
    "EntryUpdated",
    "FileCheckedIn",
    "FileCheckedOut",
    "FileForceUnlocked",
    "OrganizationCreated",
    "ProjectCreated",
    "ProjectUpdated",
    "ScopeType",
    "SessionEnded",
    "SessionStarted",
    "TagAttached",
    "TagCreated",
    "TagDetached",
    "TeamMemoryReset",
]

EntryType = Literal["tool", "guideline", "knowledge"]
ScopeType = Literal["global", "org", "project", "session"]


class OrganizationCreated(Event, frozen=True, tag="organization_created"):
    """An organisation (the top of the scopes under global) was created."""

    org_id: str
    name: str
    metadata: dict[str, Any] = {}


class ProjectCreated(Event, frozen=True, tag="project_created"):
    """A project was created, in an organisation or on its own."""

    project_id: str
    name: str
    org_id: str | None = None
    description: str | None = None
    root_path: str | None = None
    metadata: dict[str, Any] = {}


class ProjectUpdated(Event, frozen=True, tag="project_updated"):
    """Fields of a project were replaced (UNSET: unchanged)."""

    name: str | UnsetType = UNSET
    description: str | None | UnsetType = UNSET
    root_path: str | None | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET


class SessionStarted(Event, frozen=True, tag="session_started"):
    """An agent started a working session (in a project, or on its own)."""

    session_id: str
    project_id: str | None = None
    name: str | None = None
    purpose: str | None = None
    agent_id: str | None = None
    metadata: dict[str, Any] = {}


class SessionEnded(Event, frozen=True, tag="session_ended"):
    """A session ended: completed or discarded."""

    status: str = "completed"


class EntryAdded(Event, frozen=True, tag="entry_added"):
    """A tool, guideline or knowledge entry was added to a scope, as its version 1.

    `fields` holds what the entry type defines (description, content, priority,
    category, examples, validUntil...), in the tools' camelCase spelling.
    """

    entry_type: EntryType
    entry_id: str
    scope_type: ScopeType
    scope_id: str | None
    name: str
    fields: dict[str, Any] = {}
    created_by: str | None = None
    session_id: str | None = None
    writer: str | None = None
    """Which connection wrote it (`Memory.writer_for`: a digest, not the connection's id), as the
    conflict rule tells writers apart when neither createdBy nor a session does; None before."""


class EntryUpdated(Event, frozen=True, tag="entry_updated"):
    """A new version of an entry: `fields` are the ones it changed (the others carry over)."""

    fields: dict[str, Any]
    change_reason: str | None = None
    created_by: str | None = None
    session_id: str | None = None
    writer: str | None = None
    """As `EntryAdded.writer`."""


class EntryDeactivated(Event, frozen=True, tag="entry_deactivated"):
    """An entry was soft-deleted: hidden from reads unless asked for; its history stays."""

    reason: str | None = None


class EntryReactivated(Event, frozen=True, tag="entry_reactivated"):
    """A deactivated entry was made active again."""


class TagCreated(Event, frozen=True, tag="tag_created"):
    """A tag (unique by name) was created."""

    tag_id: str
    name: str
    category: str | None = None
    description: str | None = None


class TagAttached(Event, frozen=True, tag="tag_attached"):
    """A tag was attached to an entry (or a project). Stream: the entry's tagging."""

    entry_type: str
    entry_id: str
    tag_id: str


class TagDetached(Event, frozen=True, tag="tag_detached"):
    """A tag was detached from an entry."""

    entry_type: str
    entry_id: str
    tag_id: str


class EntryRelationCreated(Event, frozen=True, tag="entry_relation_created"):
    """An explicit link between two entries (or an entry and a project)."""

    relation_id: str
    source_type: str
    source_id: str
    target_type: str
    target_id: str
    relation_type: str


class EntryRelationDeleted(Event, frozen=True, tag="entry_relation_deleted"):
    """An entry relation was deleted."""


class FileCheckedOut(Event, frozen=True, tag="file_checked_out"):
    """An agent took the lock on a file until `expires_at` (a lease: free after it)."""

    file_path: str
    agent_id: str
    expires_at: int
    session_id: str | None = None
    project_id: str | None = None
    metadata: dict[str, Any] = {}


class FileCheckedIn(Event, frozen=True, tag="file_checked_in"):
    """The holder released its lock on a file."""

    agent_id: str


class FileForceUnlocked(Event, frozen=True, tag="file_force_unlocked"):
    """Someone other than (or instead of) the holder released a lock, saying why."""

    agent_id: str
    reason: str | None = None
    holder: str | None = None


class ConflictDetected(Event, frozen=True, tag="conflict_detected"):
    """Two versions of an entry were written too close together to have seen each other:
    both are kept; the conflict names them until someone resolves it."""

    conflict_id: str
    entry_type: EntryType
    entry_id: str
    version_a: int
    version_b: int


class ConflictResolved(Event, frozen=True, tag="conflict_resolved"):
    """A conflict was resolved: which version was kept (or merged), by whom, why."""

    resolution: str | None = None
    resolved_by: str | None = None
    kept_version: int | None = None


class TeamMemoryReset(Event, frozen=True, tag="team_memory_reset"):
    """memory_init reset: the team memory starts empty from here; the log keeps the past."""

    by: str | None = None


class EntryForgotten(Event, frozen=True, tag="entry_forgotten"):
    """The record of an erasure: an entry's every event (name, content, every version), and every
    event of its tags, relations and conflicts, were erased from the log and from everything
    derived from it. It says who asked (its envelope), why, and how much went; not what.

    `streams` are the other erased streams (the entry's tagging, relations, conflicts).
    """

    entry_type: str
    reason: str
    events: int
    streams: tuple[str, ...] = ()


TEAM_EVENTS: tuple[type[Event], ...] = (
    OrganizationCreated,
    ProjectCreated,
    ProjectUpdated,
    SessionStarted,
    SessionEnded,
    EntryAdded,
    EntryUpdated,
    EntryDeactivated,
    EntryReactivated,
    TagCreated,
    TagAttached,
    TagDetached,
    EntryRelationCreated,
    EntryRelationDeleted,
    FileCheckedOut,
    FileCheckedIn,
    FileForceUnlocked,
    ConflictDetected,
    ConflictResolved,
    TeamMemoryReset,
    EntryForgotten,
)
"""The team memory's events, in the order they were introduced."""
