"""Conflicts between versions of a team entry (`memory_conflict`): list them, resolve them.

A conflict is found by `memory_<type> update` (two writers within the conflict window);
both versions are in the entry's history. Resolving records who decided what and, when
asked, makes the chosen version (`keepVersion`) or a merged one (`merged`) current as a
new version: nothing is ever overwritten.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from chronograph.application.engine.arguments import parse
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.service import Memory
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, NotFoundError
from chronograph.application.team.common import TEAM, Page, Short, Team, iso, page, require
from chronograph.application.team.entries import ARGUMENTS, KINDS, entry_fields, entry_out
from chronograph.eventstore.teamevents import ConflictResolved, EntryUpdated
from chronograph.projections.team.state import Conflict
from msgspec import UNSET, Meta, UnsetType

__all__ = ["MemoryConflict", "conflict_out"]


def conflict_out(conflict: Conflict) -> dict[str, Any]:
    out: dict[str, Any] = {"id": conflict.id, "entryType": conflict.entry_type, "entryId": conflict.entry_id,
           "versionAId": f"{conflict.entry_id}_v{conflict.version_a}",
           "versionBId": f"{conflict.entry_id}_v{conflict.version_b}",
           "detectedAt": iso(conflict.detected_at), "resolved": conflict.resolved}
    if conflict.resolved:
        out.update(resolution=conflict.resolution, resolvedBy=conflict.resolved_by,
                   resolvedAt=iso(conflict.resolved_at), keptVersion=conflict.kept_version)
    return {key: value for key, value in out.items() if value is not None}


class MemoryConflict(Page, kw_only=True):
    action: Literal["list", "resolve"]
    id: Short | UnsetType = UNSET
    entry_type: Literal["tool", "guideline", "knowledge"] | UnsetType = UNSET
    entry_id: Short | UnsetType = UNSET
    resolved: bool = False
    resolution: Annotated[str, Meta(max_length=16_384)] | UnsetType = UNSET
    resolved_by: Short | UnsetType = UNSET
    keep_version: Annotated[int, Meta(ge=1)] | UnsetType = UNSET
    merged: dict[str, Any] | UnsetType = UNSET


@TEAM.command("memory_conflict", "Conflicts", "Manage version conflicts (two writes to one entry moments apart: "
              "both kept). Actions: list (unresolved by default), resolve (resolution, resolvedBy; keepVersion or "
              "merged fields make that the current version)", reads={"list"})
def memory_conflict(host: Batch | Memory, args: MemoryConflict) -> ObjectOut:
    team = Team.of(host, "memory_conflict")
    state = team.state
    if args.action == "list":
        found = [c for c in state.conflicts.values() if c.resolved == args.resolved
                 and (args.entry_type is UNSET or c.entry_type == args.entry_type)
                 and (args.entry_id is UNSET or c.entry_id == args.entry_id)]
        chosen, meta = page(found, args, default=20)
        return object_out(conflicts=[conflict_out(c) for c in chosen], meta=meta)
    require("memory_conflict", "resolve", id=args.id)
    conflict = state.conflicts.get(str(args.id))
    if conflict is None:
        raise NotFoundError(f"Conflict {args.id!r} not found")
    if conflict.resolved:
        raise DuplicateError(f"Conflict {conflict.id} was already resolved by {conflict.resolved_by or 'someone'} "
                             f"at {iso(conflict.resolved_at)}")
    entry = state.entries.get(conflict.entry_id)
    if entry is None:
        raise NotFoundError(f"Entry {conflict.entry_id!r} of conflict {conflict.id} not found")
    if args.keep_version is not UNSET and args.merged is not UNSET:
        raise InvalidArgumentsError("memory_conflict", "keepVersion: give keepVersion or merged, not both")
    fields: dict[str, Any] | None = None
    kept: int | None = None
    if args.keep_version is not UNSET:
        if args.keep_version not in (conflict.version_a, conflict.version_b):
            raise InvalidArgumentsError("memory_conflict", f"keepVersion must be {conflict.version_a} or "
                                        f"{conflict.version_b} (the versions in conflict)")
        kept = args.keep_version
        fields = entry.versions[kept - 1].fields
    elif args.merged is not UNSET:
        allowed = {*KINDS[entry.type].main, *KINDS[entry.type].versioned}
        unknown = sorted(set(args.merged) - allowed)
        if unknown:
            raise InvalidArgumentsError("memory_conflict", f"merged: {', '.join(unknown)} are not fields of a "
                                        f"{entry.type} (choose from {', '.join(sorted(allowed))})")
        kind = KINDS[entry.type]
        merged = entry_fields(kind, "memory_conflict", parse("memory_conflict", {"action": "update", **args.merged},
                                                             ARGUMENTS[entry.type]))
        fields = {**entry.current.fields, **merged}
    by = None if args.resolved_by is UNSET else args.resolved_by
    if fields is not None:
        changed = {key: value for key, value in fields.items() if entry.current.fields.get(key) != value}
        if changed:
            team.emit(f"am/entry/{entry.id}", EntryUpdated(
                fields=changed, change_reason=f"Resolved conflict {conflict.id}", created_by=by,
                writer=team.writer))
        kept = kept or entry.current.number
    team.emit(f"am/conflict/{conflict.id}", ConflictResolved(
        resolution=None if args.resolution is UNSET else args.resolution, resolved_by=by, kept_version=kept))
    return object_out(success=True, conflict=conflict_out(conflict), **{entry.type: entry_out(entry)})
