"""File locks for agents working on one project (`memory_file_lock`): leases, not mutexes.

A checkout holds a file until its expiry; an expired lease is free without any event or
background job (reads and writes compare the expiry with the time of the call on this machine's
clock, never with the log's time, which another machine's clock may have put ahead). Every checkout,
checkin and forced unlock is an event on the file's stream, so who held what when is in
the log; two agents racing for one file are decided inside one write transaction each,
so exactly one wins and the other is told who holds it and until when.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from chronograph.application.engine.arguments import Metadata
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.service import Memory
from chronograph.application.errors import LockedError, NotFoundError
from chronograph.application.team.common import (
    TEAM,
    Page,
    Short,
    Team,
    iso,
    lock_stream,
    page,
    require,
)
from chronograph.eventstore import clock
from chronograph.eventstore.teamevents import FileCheckedIn, FileCheckedOut, FileForceUnlocked
from chronograph.projections.team.state import FileLock
from msgspec import UNSET, Meta, UnsetType

__all__ = ["DEFAULT_LEASE", "MemoryFileLock", "lock_out"]

DEFAULT_LEASE = 3600
"""Seconds a checkout holds a file unless it says otherwise (Agent Memory's default)."""

Path = Annotated[str, Meta(min_length=1, max_length=4096)]


def lock_out(lock: FileLock) -> dict[str, Any]:
    return {"filePath": lock.file_path, "checkedOutBy": lock.agent_id, "sessionId": lock.session_id,
            "projectId": lock.project_id, "checkedOutAt": iso(lock.checked_out_at),
            "expiresAt": iso(lock.expires_at), "metadata": lock.metadata}


class MemoryFileLock(Page, kw_only=True):
    """Agent Memory spells this tool's fields in snake_case."""

    action: Literal["checkout", "checkin", "status", "list", "force_unlock"]
    file_path: Path | UnsetType = msgspec.field(default=UNSET, name="file_path")
    agent_id: Short | UnsetType = msgspec.field(default=UNSET, name="agent_id")
    session_id: Short | UnsetType = msgspec.field(default=UNSET, name="session_id")
    project_id: Short | UnsetType = msgspec.field(default=UNSET, name="project_id")
    expires_in: Annotated[int, Meta(ge=1, le=30 * 86_400)] = msgspec.field(default=DEFAULT_LEASE, name="expires_in")
    metadata: Metadata | UnsetType = UNSET
    reason: Annotated[str, Meta(max_length=4096)] | UnsetType = UNSET


@TEAM.command("memory_file_lock", "File Locks", "Manage file locks for multi-agent coordination (leases, free "
              "after expires_in seconds, default 3600). Actions: checkout, checkin, status, list, "
              "force_unlock", reads={"status", "list"})
def memory_file_lock(host: Batch | Memory, args: MemoryFileLock) -> ObjectOut:
    team = Team.of(host, "memory_file_lock")
    state, now = team.state, team.now
    if team.batch is not None:
        # A lease is decided on the clock reads use (the call's time), never on the log's: a batch's
        # time is at least the log's last, which another machine's clock ahead (or a step of NTP)
        # may have put hours past now, and that would free a live lock for a second agent.
        now = min(now, clock.now_us())
    if args.action == "list":
        locks = [lock for lock in state.locks.values() if lock.expires_at > now
                 and (args.project_id is UNSET or lock.project_id == args.project_id)
                 and (args.agent_id is UNSET or lock.agent_id == args.agent_id)]
        chosen, meta = page(locks, args)
        return object_out(locks=[lock_out(lock) for lock in chosen], meta=meta)
    _require(args, "file_path")
    path = str(args.file_path)
    held = state.lock(path, now)
    if args.action == "status":
        return object_out(success=True, isLocked=held is not None, lock=None if held is None else lock_out(held))
    _require(args, "agent_id")
    agent = str(args.agent_id)
    stream = lock_stream(path)
    if args.action == "checkout":
        if held is not None and held.agent_id != agent:
            raise LockedError(f"File {path} is locked by {held.agent_id} until {iso(held.expires_at)}",
                              details={"lock": lock_out(held)})
        for reference, known in ((args.session_id, state.sessions), (args.project_id, state.projects)):
            if reference is not UNSET and reference not in known:
                raise NotFoundError(f"{'Session' if known is state.sessions else 'Project'} {reference!r} not found")
        team.emit(stream, FileCheckedOut(
            file_path=path, agent_id=agent, expires_at=now + args.expires_in * 1_000_000,
            session_id=None if args.session_id is UNSET else args.session_id,
            project_id=None if args.project_id is UNSET else args.project_id,
            metadata={} if args.metadata is UNSET else args.metadata))
        return object_out(success=True, renewed=held is not None, lock=lock_out(state.locks[path]))
    if args.action == "checkin":
        kept = state.locks.get(path)
        if kept is None or kept.agent_id != agent:
            holder = "nobody" if held is None else f"{held.agent_id} until {iso(held.expires_at)}"
            raise LockedError(f"File {path} is not checked out by {agent} (it is held by {holder})",
                              details={"lock": None if held is None else lock_out(held)})
        team.emit(stream, FileCheckedIn(agent_id=agent))
        return object_out(success=True, released=lock_out(kept), expired=held is None)
    if held is None:
        raise NotFoundError(f"File {path} is not locked")
    team.emit(stream, FileForceUnlocked(agent_id=agent, reason=None if args.reason is UNSET else args.reason,
                                        holder=held.agent_id))
    return object_out(success=True, released=lock_out(held), reason=None if args.reason is UNSET else args.reason)


def _require(args: MemoryFileLock, field: str) -> None:
    require("memory_file_lock", args.action, **{field: getattr(args, field)})
