"""Typed entries: tools, guidelines and knowledge, each version kept, with a change reason
(`memory_tool`, `memory_guideline`, `memory_knowledge`).

The three tools share one implementation, told apart by an `EntryKind`: what the entry
is called by (name or title), which fields belong to the entry and which to each version.
Two versions written within `CONFLICT_WINDOW` by different writers cannot have seen each
other: both are kept, the later becomes current and a conflict names the pair until
`memory_conflict` resolves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal

from chronograph.application.engine.arguments import AsOf
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.jsonvalues import same_json
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.service import Memory
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, NotFoundError
from chronograph.application.team.common import TEAM, Page, Short, Team, iso, new_id, page, require
from chronograph.eventstore import clock
from chronograph.eventstore.teamevents import (
    ConflictDetected,
    EntryAdded,
    EntryDeactivated,
    EntryReactivated,
    EntryUpdated,
)
from chronograph.projections.team.state import Entry, EntryVersion
from msgspec import UNSET, Meta, UnsetType

__all__ = ["ARGUMENTS", "CONFLICT_WINDOW", "DEFAULTS", "KINDS", "EntryKind", "entry_fields", "entry_out", "is_live",
           "new_fields", "read_field", "same_writer", "version_out"]

CONFLICT_WINDOW = 5_000_000
"""Two versions closer than this (µs) by different writers are a conflict (Agent Memory's 5 s)."""

Text = Annotated[str, Meta(max_length=65_536)]
Action = Literal["add", "update", "get", "list", "history", "deactivate", "reactivate"]
READS = {"get", "list", "history"}


@dataclass(frozen=True)
class EntryKind:
    type: str
    """tool, guideline, knowledge"""
    prefix: str
    plural: str
    label: str
    """what names an entry: name or title"""
    main: tuple[str, ...]
    """fields shown on the entry"""
    versioned: tuple[str, ...]
    """fields shown on each version"""
    required: tuple[str, ...]


KINDS = {
    "tool": EntryKind("tool", "tool", "tools", "name", ("category",),
                      ("description", "parameters", "examples", "constraints"), ()),
    "guideline": EntryKind("guideline", "gl", "guidelines", "name", ("category", "priority"),
                           ("content", "rationale", "examples"), ("content",)),
    "knowledge": EntryKind("knowledge", "kn", "knowledge", "title", ("category",),
                           ("content", "source", "confidence", "validUntil"), ("content",)),
}


DEFAULTS: dict[str, dict[str, Any]] = {"tool": {}, "guideline": {"priority": 50}, "knowledge": {"confidence": 1.0}}
"""What `add` sets when a call leaves it out. A reader takes such a field missing or null as its
default: an import's `replace` once cleared it to null, and logs keep that version."""


def new_fields(kind: EntryKind, tool: str, fields: dict[str, Any], action: str = "add") -> dict[str, Any]:
    """`fields` of a new entry (or of one replaced whole), with what `add` sets by default.

    Raises:
        InvalidArgumentsError: If a field the kind requires is missing.
    """
    for key in kind.required:
        require(tool, action, **{key: fields.get(key, UNSET)})
    return fields | {key: value for key, value in DEFAULTS[kind.type].items() if fields.get(key) is None}


def read_field(entry_type: str, fields: dict[str, Any], key: str) -> Any:
    """A field as readers take it: a defaulted one missing or null is its default."""
    value = fields.get(key)
    return DEFAULTS[entry_type].get(key) if value is None else value


@lru_cache(maxsize=4096)
def _until(text: str) -> int:
    return clock.parse_iso(text)


def is_live(entry: Entry, now: int, *, include_inactive: bool = False) -> bool:
    """Whether a read shows `entry`: active and not past its validUntil (unless asked to)."""
    if include_inactive:
        return True
    if not entry.active:
        return False
    until = entry.current.fields.get("validUntil")
    return not (isinstance(until, str) and _until(until) <= now)


def version_out(entry: Entry, version: EntryVersion) -> dict[str, Any]:
    kind = KINDS[entry.type]
    fields = version.fields
    out = {"id": f"{entry.id}_v{version.number}", "versionNum": version.number}
    out.update((key, read_field(entry.type, fields, key)) for key in kind.versioned if key in fields)
    out.update(createdAt=iso(version.created_at), createdBy=version.created_by, changeReason=version.change_reason,
               conflictFlag=version.conflict_flag, sessionId=version.session_id)
    return {key: value for key, value in out.items() if value is not None}


def entry_out(entry: Entry, *, versions: bool = False) -> dict[str, Any]:
    kind = KINDS[entry.type]
    current = entry.current
    out: dict[str, Any] = {"id": entry.id, "scopeType": entry.scope_type, "scopeId": entry.scope_id,
                           kind.label: entry.name}
    out.update((key, read_field(entry.type, current.fields, key)) for key in kind.main if key in current.fields)
    out.update(isActive=entry.active, createdAt=iso(entry.created_at), createdBy=entry.created_by,
               currentVersionId=f"{entry.id}_v{current.number}", currentVersion=version_out(entry, current))
    if versions:
        out["versions"] = [version_out(entry, version) for version in entry.versions]
    return out


class EntryArgs(Page, kw_only=True):
    action: Action
    id: Short | UnsetType = UNSET
    scope_type: Literal["global", "org", "project", "session"] | UnsetType = UNSET
    scope_id: Short | UnsetType = UNSET
    category: Short | UnsetType = UNSET
    inherit: bool | UnsetType = UNSET
    include_inactive: bool = False
    created_by: Short | UnsetType = UNSET
    change_reason: Text | UnsetType = UNSET
    session_id: Short | UnsetType = UNSET
    as_of: AsOf | UnsetType = UNSET


class MemoryTool(EntryArgs, kw_only=True):
    name: Short | UnsetType = UNSET
    description: Text | UnsetType = UNSET
    parameters: dict[str, Any] | UnsetType = UNSET
    examples: list[Any] | UnsetType = UNSET
    constraints: Text | UnsetType = UNSET


class MemoryGuideline(EntryArgs, kw_only=True):
    name: Short | UnsetType = UNSET
    priority: Annotated[int, Meta(ge=0, le=100)] | UnsetType = UNSET
    content: Text | UnsetType = UNSET
    rationale: Text | UnsetType = UNSET
    examples: dict[str, Any] | UnsetType = UNSET


class MemoryKnowledge(EntryArgs, kw_only=True):
    title: Short | UnsetType = UNSET
    content: Text | UnsetType = UNSET
    source: Text | UnsetType = UNSET
    confidence: Annotated[float, Meta(ge=0, le=1)] | UnsetType = UNSET
    valid_until: Short | UnsetType = UNSET


ARGUMENTS: dict[str, type[EntryArgs]] = {"tool": MemoryTool, "guideline": MemoryGuideline, "knowledge": MemoryKnowledge}
"""The arguments of each kind's tool (import checks an entry's fields against them)."""

_DESCRIBED = "Actions: add, update (a new version, with changeReason), get, list, history, deactivate, reactivate"


@TEAM.command("memory_tool", "Tool Registry", f"Manage tool definitions with versioning. {_DESCRIBED}",
              reads=READS)
def memory_tool(host: Batch | Memory, args: MemoryTool) -> ObjectOut:
    return _run(KINDS["tool"], "memory_tool", host, args)


@TEAM.command("memory_guideline", "Guidelines", f"Manage behavioral guidelines with versioning (lists in priority "
              f"order). {_DESCRIBED}", reads=READS)
def memory_guideline(host: Batch | Memory, args: MemoryGuideline) -> ObjectOut:
    return _run(KINDS["guideline"], "memory_guideline", host, args)


@TEAM.command("memory_knowledge", "Knowledge", f"Manage knowledge entries (facts, decisions, context) with "
              f"versioning; entries past validUntil are hidden unless includeInactive. {_DESCRIBED}", reads=READS)
def memory_knowledge(host: Batch | Memory, args: MemoryKnowledge) -> ObjectOut:
    return _run(KINDS["knowledge"], "memory_knowledge", host, args)


def entry_fields(kind: EntryKind, tool: str, args: EntryArgs) -> dict[str, Any]:
    """The entry fields the call sets (camelCase, as stored)."""
    fields: dict[str, Any] = {}
    for key in (*kind.main, *kind.versioned):
        value = getattr(args, "valid_until" if key == "validUntil" else key, UNSET)
        if value is UNSET:
            continue
        if key == "validUntil":
            try:
                value = clock.isoformat(clock.parse_iso(value))
            except ValueError as error:
                raise InvalidArgumentsError(tool, f"validUntil: {error}") from None
        fields[key] = value
    return fields


def _run(kind: EntryKind, tool: str, host: Batch | Memory, args: EntryArgs) -> ObjectOut:
    team = Team.of(host, tool, args.as_of if args.action in READS else UNSET)
    if args.as_of is not UNSET and args.action not in READS:
        raise InvalidArgumentsError(tool, f"asOf is for reading actions (get, list, history), not {args.action!r}")
    if args.action == "add":
        return _add(kind, tool, team, args)
    if args.action == "list":
        return _list(kind, tool, team, args)
    entry = _find(kind, tool, team, args)
    if args.action == "get":
        return object_out(**{kind.type: entry_out(entry)})
    if args.action == "history":
        return object_out(versions=[version_out(entry, v) for v in reversed(entry.versions)])
    if args.action in ("deactivate", "reactivate"):
        wanted = args.action == "reactivate"
        if entry.active != wanted:
            event = EntryReactivated() if wanted else EntryDeactivated(
                reason=None if args.change_reason is UNSET else args.change_reason)
            team.emit(f"am/entry/{entry.id}", event)
        return object_out(success=True, **{kind.type: entry_out(entry)})
    return _update(kind, tool, team, args, entry)


def _add(kind: EntryKind, tool: str, team: Team, args: EntryArgs) -> ObjectOut:
    name = getattr(args, kind.label)
    require(tool, "add", scopeType=args.scope_type, **{kind.label: name})
    fields = new_fields(kind, tool, entry_fields(kind, tool, args))
    scope_type = str(args.scope_type)
    scope_id = team.check_scope(tool, scope_type, args.scope_id)
    held = team.state.entry_named(kind.type, scope_type, scope_id, name)
    if held is not None:
        raise DuplicateError(f"A {kind.type} {kind.label}d {name!r} already exists in {_where(scope_type, scope_id)} "
                             f"(id {held.id}"
                             f"{'' if held.active else ', deactivated: reactivate it'}); update it instead")
    entry_id = new_id(kind.prefix)
    team.emit(f"am/entry/{entry_id}", EntryAdded(
        entry_type=kind.type, entry_id=entry_id, scope_type=scope_type, scope_id=scope_id,  # type: ignore[arg-type]
        name=name, fields=fields, created_by=None if args.created_by is UNSET else args.created_by,
        session_id=_session(team, tool, args, scope_type, scope_id), writer=team.writer), new=True)
    return object_out(success=True, **{kind.type: entry_out(team.state.entries[entry_id])})


def _session(team: Team, tool: str, args: EntryArgs, scope_type: str, scope_id: str | None) -> str | None:
    if args.session_id is not UNSET:
        if args.session_id not in team.state.sessions:
            raise NotFoundError(f"Session {args.session_id!r} not found")
        return args.session_id
    return scope_id if scope_type == "session" else None


def same_writer(earlier: EntryVersion, later: EntryVersion) -> bool:
    """Whether two versions come from one writer, by the first thing both say: the createdBy both
    give decides alone; else the session both name; else the connection both came through (the
    process, its MCP session over HTTP, the client's name: `Memory.writer_for`), or, in a log from
    before that was kept, the recorded actor. So two agents of the same client software, in two
    processes, are two writers; one agent that starts a session, or leaves out its sessionId, is one."""
    if earlier.created_by and later.created_by:
        return earlier.created_by == later.created_by
    if earlier.session_id and later.session_id:
        return earlier.session_id == later.session_id
    if earlier.writer and later.writer:
        return earlier.writer == later.writer
    return earlier.actor == later.actor


def _update(kind: EntryKind, tool: str, team: Team, args: EntryArgs, entry: Entry) -> ObjectOut:
    fields = entry_fields(kind, tool, args)
    if not fields:
        names = ", ".join((*kind.main, *kind.versioned))
        raise InvalidArgumentsError(tool, f"nothing to update: give one of {names}")
    previous = entry.current
    changed = {key: value for key, value in fields.items() if not same_json(previous.fields.get(key), value)}
    if not changed:
        return object_out(success=True, unchanged=True, **{kind.type: entry_out(entry)})
    created_by = None if args.created_by is UNSET else args.created_by
    session_id = _session(team, tool, args, entry.scope_type, entry.scope_id)
    team.emit(f"am/entry/{entry.id}", EntryUpdated(
        fields=changed, change_reason=None if args.change_reason is UNSET else args.change_reason,
        created_by=created_by, session_id=session_id, writer=team.writer))
    conflict = None
    if team.now - previous.created_at < CONFLICT_WINDOW and not same_writer(previous, entry.current):
        conflict_id = new_id("conf")
        team.emit(f"am/conflict/{conflict_id}", ConflictDetected(
            conflict_id=conflict_id, entry_type=kind.type, entry_id=entry.id,  # type: ignore[arg-type]
            version_a=previous.number, version_b=entry.current.number), new=True)
        conflict = {"id": conflict_id, "versionAId": f"{entry.id}_v{previous.number}",
                    "versionBId": f"{entry.id}_v{entry.current.number}",
                    "message": "Another writer changed this entry moments before: both versions are kept; "
                               "resolve with memory_conflict"}
    return object_out(success=True, conflict=conflict, **{kind.type: entry_out(entry)})


def _find(kind: EntryKind, tool: str, team: Team, args: EntryArgs) -> Entry:
    """The entry a call addresses: by id, or by name in its scope. A read (get, history) inherits
    from the scope's parents by default; a write changes the entry of the scope given and no
    other, for an inherited entry is every scope's: one found only up the chain is refused."""
    writing = args.action not in READS
    if writing and args.inherit is True:
        raise InvalidArgumentsError(tool, f"inherit is for reading actions (get, list, history): {args.action!r} "
                                    "changes the entry of the scope given, never one it inherits")
    if args.id is not UNSET:
        entry = team.state.entries.get(args.id)
        if entry is None or entry.type != kind.type:
            raise NotFoundError(f"{kind.type.capitalize()} {args.id!r} not found")
        if writing and args.scope_type is not UNSET:
            scope_id = team.check_scope(tool, args.scope_type, args.scope_id)
            if (entry.scope_type, entry.scope_id) != (args.scope_type, scope_id):
                asked, held = _where(args.scope_type, scope_id), _where(entry.scope_type, entry.scope_id)
                raise NotFoundError(f"{kind.type.capitalize()} {args.id!r} is not in {asked}: it is in {held}, "
                                    f"where {args.action!r} would change it for every scope under it (address that "
                                    f"scope, or its id alone, to mean it); nothing was written")
        return entry
    name = getattr(args, kind.label)
    if name is UNSET:
        raise InvalidArgumentsError(tool, f"id (or {kind.label} with scopeType) is required for action {args.action!r}")
    scope_type = "global" if args.scope_type is UNSET else args.scope_type
    scope_id = team.check_scope(tool, scope_type, args.scope_id)
    inherit = not writing and (True if args.inherit is UNSET else args.inherit)
    for link in team.chain(scope_type, scope_id, inherit=inherit):
        entry = team.state.entry_named(kind.type, link[0], link[1], name)
        if entry is not None and (args.action != "get" or is_live(entry, team.now,
                                                                  include_inactive=args.include_inactive)):
            return entry
    missing = f"{kind.type.capitalize()} {kind.label}d {name!r} not found in {_where(scope_type, scope_id)}"
    if writing:
        for link in team.chain(scope_type, scope_id)[1:]:
            inherited = team.state.entry_named(kind.type, link[0], link[1], name)
            if inherited is not None:
                raise NotFoundError(
                    f"{missing}; the one it inherits is in {_where(*link)} (id {inherited.id}). To change it "
                    f"for every scope under it, address that scope (scopeType {link[0]!r}"
                    f"{'' if link[1] is None else f', scopeId {link[1]!r}'}) or its id; to differ here, add a "
                    f"{kind.type} {kind.label}d {name!r} to {_where(scope_type, scope_id)} (action 'add'). "
                    "Nothing was written")
    raise NotFoundError(f"{missing}{' or its parents' if inherit else ''}")


def _where(scope_type: str, scope_id: str | None) -> str:
    return "global scope" if scope_id is None else f"{scope_type} {scope_id}"


def _list(kind: EntryKind, tool: str, team: Team, args: EntryArgs) -> ObjectOut:
    state = team.state
    if args.scope_type is UNSET:
        candidates = [e for e in state.entries.values() if e.type == kind.type]
    else:
        scope_id = team.check_scope(tool, args.scope_type, args.scope_id)
        inherit = False if args.inherit is UNSET else args.inherit
        candidates = [state.entries[i] for link in team.chain(args.scope_type, scope_id, inherit=inherit)
                      for i in state.in_scope.get(link, ()) if state.entries[i].type == kind.type]
    chosen = [e for e in candidates if is_live(e, team.now, include_inactive=args.include_inactive)
              and (args.category is UNSET or e.current.fields.get("category") == args.category)]
    if kind.type == "guideline":
        chosen.sort(key=lambda e: -read_field(e.type, e.current.fields, "priority"))
    shown, meta = page(chosen, args)
    return object_out(**{kind.plural: [entry_out(e) for e in shown], "meta": meta})
