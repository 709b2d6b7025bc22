"""The team memory as the log made it: organisations, projects, sessions, entries with
every version, tags, entry relations, file locks and conflicts, folded in memory.

`TeamState` is folded from the team events of the log (`fold`); everything else in the
log passes through untouched. It is small next to the graph (entries are prose written
by agents) and is kept in memory by `TeamView`, which catches it up from the log before
each use; a past state is the same fold stopped at a position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec
from chronograph.eventstore import Envelope, Event
from chronograph.eventstore.teamevents import (
    ConflictDetected,
    ConflictResolved,
    EntryAdded,
    EntryDeactivated,
    EntryForgotten,
    EntryReactivated,
    EntryRelationCreated,
    EntryRelationDeleted,
    EntryUpdated,
    FileCheckedIn,
    FileCheckedOut,
    FileForceUnlocked,
    OrganizationCreated,
    ProjectCreated,
    ProjectUpdated,
    SessionEnded,
    SessionStarted,
    TagAttached,
    TagCreated,
    TagDetached,
    TeamMemoryReset,
)
from msgspec import UNSET

__all__ = [
    "Conflict",
    "Entry",
    "EntryRelation",
    "EntryVersion",
    "FileLock",
    "Organization",
    "Project",
    "Session",
    "Tag",
    "TeamState",
    "fold",
    "stream_id",
]


class Organization(msgspec.Struct, kw_only=True):
    id: str
    name: str
    metadata: dict[str, Any]
    created_at: int


class Project(msgspec.Struct, kw_only=True):
    id: str
    name: str
    org_id: str | None
    description: str | None
    root_path: str | None
    metadata: dict[str, Any]
    created_at: int
    updated_at: int


class Session(msgspec.Struct, kw_only=True):
    id: str
    project_id: str | None
    name: str | None
    purpose: str | None
    agent_id: str | None
    metadata: dict[str, Any]
    status: str
    started_at: int
    ended_at: int | None = None


class EntryVersion(msgspec.Struct, kw_only=True):
    """One version of an entry: every field as it stood then."""

    number: int
    fields: dict[str, Any]
    change_reason: str | None
    created_by: str | None
    session_id: str | None
    actor: str
    created_at: int
    position: int
    conflict_flag: bool = False
    writer: str | None = None
    """The connection that wrote it (see `EntryAdded.writer`); None in logs before it was kept."""


class Entry(msgspec.Struct, kw_only=True):
    """A tool, guideline or knowledge entry: where it lives and its versions, oldest first."""

    type: str
    id: str
    scope_type: str
    scope_id: str | None
    name: str
    active: bool
    created_at: int
    created_by: str | None
    versions: list[EntryVersion]

    @property
    def current(self) -> EntryVersion:
        return self.versions[-1]


class Tag(msgspec.Struct, kw_only=True):
    id: str
    name: str
    category: str | None
    description: str | None
    created_at: int


class EntryRelation(msgspec.Struct, kw_only=True):
    id: str
    source_type: str
    source_id: str
    target_type: str
    target_id: str
    relation_type: str
    created_at: int


class FileLock(msgspec.Struct, kw_only=True):
    file_path: str
    agent_id: str
    session_id: str | None
    project_id: str | None
    metadata: dict[str, Any]
    checked_out_at: int
    expires_at: int


class Conflict(msgspec.Struct, kw_only=True):
    id: str
    entry_type: str
    entry_id: str
    version_a: int
    version_b: int
    detected_at: int
    resolved: bool = False
    resolution: str | None = None
    resolved_by: str | None = None
    resolved_at: int | None = None
    kept_version: int | None = None


def stream_id(stream: str) -> str:
    """The id in a team stream's name (``am/entry/gl_x`` -> ``gl_x``)."""
    return stream.split("/", 2)[2]


class TeamState:
    """The team memory at `position` (the last log position folded)."""

    def __init__(self) -> None:
        self.position = 0
        self.clear()

    def clear(self) -> None:
        """Forget every team thing (a reset); the position stays."""
        self.orgs: dict[str, Organization] = {}
        self.projects: dict[str, Project] = {}
        self.sessions: dict[str, Session] = {}
        self.entries: dict[str, Entry] = {}
        self.names: dict[tuple[str, str, str | None, str], str] = {}
        """(entry type, scope type, scope id, name) -> entry id"""
        self.in_scope: dict[tuple[str, str | None], dict[str, None]] = {}
        """(scope type, scope id) -> entry ids, oldest first"""
        self.tags: dict[str, Tag] = {}
        self.tag_names: dict[str, str] = {}
        self.tags_of: dict[str, dict[str, None]] = {}
        """entry id -> tag ids, in the order attached"""
        self.relations: dict[str, EntryRelation] = {}
        self.locks: dict[str, FileLock] = {}
        """file path -> its lock (possibly expired: a lease ends without an event)"""
        self.lock_paths: dict[str, str] = {}
        """lock stream -> file path"""
        self.conflicts: dict[str, Conflict] = {}

    def entry_named(self, entry_type: str, scope_type: str, scope_id: str | None, name: str) -> Entry | None:
        entry_id = self.names.get((entry_type, scope_type, scope_id, name))
        return None if entry_id is None else self.entries[entry_id]

    def lock(self, file_path: str, now: int) -> FileLock | None:
        """The lock held on `file_path` at `now`, or None (an expired lease holds nothing)."""
        held = self.locks.get(file_path)
        return held if held is not None and held.expires_at > now else None

    def counts(self) -> dict[str, int]:
        return {
            "organizations": len(self.orgs), "projects": len(self.projects), "sessions": len(self.sessions),
            "tools": sum(1 for e in self.entries.values() if e.type == "tool"),
            "guidelines": sum(1 for e in self.entries.values() if e.type == "guideline"),
            "knowledge": sum(1 for e in self.entries.values() if e.type == "knowledge"),
            "tags": len(self.tags), "relations": len(self.relations),
            "conflicts": sum(1 for c in self.conflicts.values() if not c.resolved),
        }


# --- the fold -------------------------------------------------------------------------------


def _org_created(state: TeamState, envelope: Envelope, event: OrganizationCreated) -> None:
    state.orgs[event.org_id] = Organization(id=event.org_id, name=event.name, metadata=dict(event.metadata),
                                            created_at=envelope.recorded_at)


def _project_created(state: TeamState, envelope: Envelope, event: ProjectCreated) -> None:
    at = envelope.recorded_at
    state.projects[event.project_id] = Project(
        id=event.project_id, name=event.name, org_id=event.org_id, description=event.description,
        root_path=event.root_path, metadata=dict(event.metadata), created_at=at, updated_at=at)


def _project_updated(state: TeamState, envelope: Envelope, event: ProjectUpdated) -> None:
    project = state.projects.get(stream_id(envelope.stream))
    if project is None:
        return
    for field in ("name", "description", "root_path", "metadata"):
        value = getattr(event, field)
        if value is not UNSET:
            setattr(project, field, value)
    project.updated_at = envelope.recorded_at


def _session_started(state: TeamState, envelope: Envelope, event: SessionStarted) -> None:
    state.sessions[event.session_id] = Session(
        id=event.session_id, project_id=event.project_id, name=event.name, purpose=event.purpose,
        agent_id=event.agent_id, metadata=dict(event.metadata), status="active", started_at=envelope.recorded_at)


def _session_ended(state: TeamState, envelope: Envelope, event: SessionEnded) -> None:
    session = state.sessions.get(stream_id(envelope.stream))
    if session is not None:
        session.status = event.status
        session.ended_at = envelope.recorded_at


def _entry_added(state: TeamState, envelope: Envelope, event: EntryAdded) -> None:
    at = envelope.recorded_at
    state.entries[event.entry_id] = Entry(
        type=event.entry_type, id=event.entry_id, scope_type=event.scope_type, scope_id=event.scope_id,
        name=event.name, active=True, created_at=at, created_by=event.created_by,
        versions=[EntryVersion(number=1, fields=dict(event.fields), change_reason=None,
                               created_by=event.created_by, session_id=event.session_id, actor=envelope.actor,
                               created_at=at, position=envelope.position, writer=event.writer)])
    state.names[(event.entry_type, event.scope_type, event.scope_id, event.name)] = event.entry_id
    state.in_scope.setdefault((event.scope_type, event.scope_id), {})[event.entry_id] = None


def _entry_updated(state: TeamState, envelope: Envelope, event: EntryUpdated) -> None:
    entry = state.entries.get(stream_id(envelope.stream))
    if entry is None:
        return
    fields = {**entry.current.fields, **event.fields}
    entry.versions.append(EntryVersion(
        number=len(entry.versions) + 1, fields=fields, change_reason=event.change_reason,
        created_by=event.created_by, session_id=event.session_id, actor=envelope.actor,
        created_at=envelope.recorded_at, position=envelope.position, writer=event.writer))


def _entry_deactivated(state: TeamState, envelope: Envelope, event: EntryDeactivated) -> None:
    entry = state.entries.get(stream_id(envelope.stream))
    if entry is not None:
        entry.active = False


def _entry_reactivated(state: TeamState, envelope: Envelope, event: EntryReactivated) -> None:
    entry = state.entries.get(stream_id(envelope.stream))
    if entry is not None:
        entry.active = True


def _tag_created(state: TeamState, envelope: Envelope, event: TagCreated) -> None:
    state.tags[event.tag_id] = Tag(id=event.tag_id, name=event.name, category=event.category,
                                   description=event.description, created_at=envelope.recorded_at)
    state.tag_names[event.name] = event.tag_id


def _tag_attached(state: TeamState, envelope: Envelope, event: TagAttached) -> None:
    state.tags_of.setdefault(event.entry_id, {})[event.tag_id] = None


def _tag_detached(state: TeamState, envelope: Envelope, event: TagDetached) -> None:
    state.tags_of.get(event.entry_id, {}).pop(event.tag_id, None)


def _relation_created(state: TeamState, envelope: Envelope, event: EntryRelationCreated) -> None:
    state.relations[event.relation_id] = EntryRelation(
        id=event.relation_id, source_type=event.source_type, source_id=event.source_id,
        target_type=event.target_type, target_id=event.target_id, relation_type=event.relation_type,
        created_at=envelope.recorded_at)


def _relation_deleted(state: TeamState, envelope: Envelope, event: EntryRelationDeleted) -> None:
    state.relations.pop(stream_id(envelope.stream), None)


def _checked_out(state: TeamState, envelope: Envelope, event: FileCheckedOut) -> None:
    state.lock_paths[envelope.stream] = event.file_path
    state.locks[event.file_path] = FileLock(
        file_path=event.file_path, agent_id=event.agent_id, session_id=event.session_id,
        project_id=event.project_id, metadata=dict(event.metadata), checked_out_at=envelope.recorded_at,
        expires_at=event.expires_at)


def _released(state: TeamState, envelope: Envelope, event: Event) -> None:
    path = state.lock_paths.get(envelope.stream)
    if path is not None:
        state.locks.pop(path, None)


def _conflict_detected(state: TeamState, envelope: Envelope, event: ConflictDetected) -> None:
    state.conflicts[event.conflict_id] = Conflict(
        id=event.conflict_id, entry_type=event.entry_type, entry_id=event.entry_id, version_a=event.version_a,
        version_b=event.version_b, detected_at=envelope.recorded_at)
    entry = state.entries.get(event.entry_id)
    if entry is not None and 0 < event.version_b <= len(entry.versions):
        entry.versions[event.version_b - 1].conflict_flag = True


def _conflict_resolved(state: TeamState, envelope: Envelope, event: ConflictResolved) -> None:
    conflict = state.conflicts.get(stream_id(envelope.stream))
    if conflict is not None:
        conflict.resolved = True
        conflict.resolution = event.resolution
        conflict.resolved_by = event.resolved_by
        conflict.resolved_at = envelope.recorded_at
        conflict.kept_version = event.kept_version


def _reset(state: TeamState, envelope: Envelope, event: TeamMemoryReset) -> None:
    state.clear()


def _entry_forgotten(state: TeamState, envelope: Envelope, event: EntryForgotten) -> None:
    # A fold of the erased log never met the entry; a state folded before the erasure (a
    # command's own, until the next use drops it) lets go of it here.
    entry = state.entries.pop(stream_id(envelope.stream), None)
    if entry is None:
        return
    state.names.pop((entry.type, entry.scope_type, entry.scope_id, entry.name), None)
    state.in_scope.get((entry.scope_type, entry.scope_id), {}).pop(entry.id, None)
    state.tags_of.pop(entry.id, None)
    for relation_id in [r.id for r in state.relations.values() if entry.id in (r.source_id, r.target_id)]:
        del state.relations[relation_id]
    for conflict_id in [c.id for c in state.conflicts.values() if c.entry_id == entry.id]:
        del state.conflicts[conflict_id]


_HANDLERS: dict[type[Event], Callable[[TeamState, Envelope, Any], None]] = {
    OrganizationCreated: _org_created,
    ProjectCreated: _project_created,
    ProjectUpdated: _project_updated,
    SessionStarted: _session_started,
    SessionEnded: _session_ended,
    EntryAdded: _entry_added,
    EntryUpdated: _entry_updated,
    EntryDeactivated: _entry_deactivated,
    EntryReactivated: _entry_reactivated,
    TagCreated: _tag_created,
    TagAttached: _tag_attached,
    TagDetached: _tag_detached,
    EntryRelationCreated: _relation_created,
    EntryRelationDeleted: _relation_deleted,
    FileCheckedOut: _checked_out,
    FileCheckedIn: _released,
    FileForceUnlocked: _released,
    ConflictDetected: _conflict_detected,
    ConflictResolved: _conflict_resolved,
    TeamMemoryReset: _reset,
    EntryForgotten: _entry_forgotten,
}


def fold(state: TeamState, envelopes: Iterable[Envelope]) -> None:
    """Fold `envelopes` (in log order, after `state.position`) into `state`; other events pass."""
    handlers = _HANDLERS
    for envelope in envelopes:
        handler = handlers.get(type(envelope.event))
        if handler is not None:
            handler(state, envelope, envelope.event)
        state.position = envelope.position
