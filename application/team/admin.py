"""The team memory's housekeeping (`memory_health`, `memory_init`).

An event log has no tables to create and no migrations to apply: `init` and `status`
report that truthfully in Agent Memory's shape. `reset` empties the team memory with an
event, so it is in the audit and every earlier state stays readable with `asOf`.
"""

from __future__ import annotations

from typing import Literal

from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError
from chronograph.application.team.common import TEAM, Short, Team, TeamArgs
from chronograph.eventstore.teamevents import TeamMemoryReset
from msgspec import UNSET, UnsetType

import chronograph

__all__ = ["COMPATIBLE_WITH", "MemoryHealth", "MemoryInit"]

COMPATIBLE_WITH = "0.3.0"
"""The Agent Memory version whose API this surface follows."""


class MemoryHealth(TeamArgs, kw_only=True):
    pass


@TEAM.query("memory_health", "Health", "Check server health and database status: version, counts")
def memory_health(memory: Memory, args: MemoryHealth) -> ObjectOut:
    team = Team.of(memory, "memory_health")
    counts = team.state.counts()
    counts["fileLocks"] = sum(1 for lock in team.state.locks.values() if lock.expires_at > team.now)
    with memory.views.snapshot() as snapshot:
        head = snapshot.log.head()
    folder = memory.cache is None  # a store folder (LMDB); a database log is read through a local cache
    return object_out(
        serverVersion=chronograph.__version__, server="chronograph", compatibleWith=f"agent-memory {COMPATIBLE_WITH}",
        status="healthy",
        database={"type": "LMDB event log" if folder else "PostgreSQL event log", "inMemory": False,
                  "walEnabled": not folder, "path": memory.log.location,
                  "logPosition": head, "bytes": memory.store_bytes()},
        cache={"enabled": True, "size": len(team.state.entries), "position": team.state.position},
        tables=counts,
    )


class MemoryInit(TeamArgs, kw_only=True):
    action: Literal["init", "status", "reset"]
    force: bool = False
    verbose: bool = False
    confirm: bool = False
    reset_by: Short | UnsetType = UNSET


@TEAM.command("memory_init", "Initialization", "Database initialization status (an event log needs no "
              "migrations). Actions: init, status, reset (confirm: true; recorded as an event, the past stays "
              "readable with asOf)", kind="delete", reads={"init", "status"})
def memory_init(host: Batch | Memory, args: MemoryInit) -> ObjectOut:
    if args.action in ("init", "status"):
        shared = {"initialized": True, "totalMigrations": 0, "pendingMigrations": []}
        if args.action == "status":
            return object_out(**shared, appliedMigrations=[])
        return object_out(success=True, **shared, migrationsApplied=[],
                     message="The event log needs no migrations: it is ready.")
    if not args.confirm:
        raise InvalidArgumentsError("memory_init", "confirm: reset needs confirm: true (it empties the team "
                                    "memory; the log keeps every earlier state, readable with asOf)")
    team = Team.of(host, "memory_init")
    before = team.state.position
    team.emit("am/reset", TeamMemoryReset(by=None if args.reset_by is UNSET else args.reset_by))
    return object_out(success=True, message="Database reset successfully",
                 readableWithAsOf=before)
