"""Errors the core raises on purpose. Each says what was wrong, with which item, what to do next,
and carries a machine-readable `code` a client can branch on.

They are plain exceptions: the MCP adapter turns them into tool errors (`isError: true`
with this text), the command line into a one-line message and an exit code.
"""

from __future__ import annotations

import tempfile
from typing import Any, ClassVar

import msgspec

__all__ = [
    "ChronographError",
    "ConflictError",
    "DuplicateError",
    "ForbiddenError",
    "ImportStoppedError",
    "InvalidArgumentsError",
    "LockedError",
    "NotFoundError",
    "OutcomeUnknownError",
    "ReplyTooLargeError",
    "RequestReplayError",
    "ScratchError",
    "SourceChangedError",
    "StorageError",
    "StoreUnreachableError",
    "UnavailableError",
]


class ChronographError(Exception):
    """Base class of every error the core raises on purpose."""

    code: ClassVar[str] = "error"
    """Machine-readable: invalid, not_found, conflict, duplicate, locked, limit, storage, unavailable,
    outcome_unknown, forbidden."""


class ImportStoppedError(ChronographError):
    """An import stopped at a batch the store refused, after earlier batches were written (they
    stay); its code is the refusal's."""

    def __init__(self, message: str, refused: ChronographError) -> None:
        super().__init__(message)
        self.code = refused.code  # type: ignore[misc]  # the refusal's, for this instance


class InvalidArgumentsError(ChronographError):
    """The arguments do not fit the tool's schema or limits; nothing was written."""

    code = "invalid"

    def __init__(self, tool: str, problem: str) -> None:
        self.tool = tool
        self.problem = problem
        super().__init__(f"Invalid arguments for tool {tool}: {problem}")


class NotFoundError(ChronographError):
    """An item the call needs does not exist; nothing was written."""

    code = "not_found"


class ConflictError(ChronographError):
    """An expectedVersion was stale: someone changed the item first; nothing was written."""

    code = "conflict"

    def __init__(self, what: str, expected: int, current: int, state: Any, *, since: str = "") -> None:
        self.what = what
        self.expected = expected
        self.current = current
        self.state = state
        shown = msgspec.json.encode(state).decode() if state is not None else "none (it does not exist)"
        at = f"version {current}" if current else "no version (it does not exist)"
        # `since`: what became of it, which its name no longer names (renamed: what it is now; deleted; merged)
        told = f"is not at the expectedVersion {expected}: {since}" if since else (
            f"is at {at}, not the expectedVersion {expected}")
        super().__init__(
            f"Conflict: {what} {told}; nothing was written. Re-read it and retry with expectedVersion "
            f"{current}. Current state: {shown}"
        )


class DuplicateError(ChronographError):
    """Something of that name already exists where names are unique; nothing was written."""

    code = "duplicate"


class ForbiddenError(ChronographError):
    """The caller's principal has no grant for what the call needs in a workspace; nothing was
    read or written."""

    code = "forbidden"

    def __init__(self, principal: str, workspace: str, need: str, tool: str, *, project: str | None = None) -> None:
        self.principal = principal
        self.workspace = workspace
        self.need = need
        if project is not None:  # the workspace is not named: it would say whether the path is a project's
            super().__init__(f"Forbidden: {tool} needs the {need} grant on the workspace of the project at "
                             f"{project!r}, which principal {principal!r} does not have (or that is no project "
                             "root); nothing was read or written")
            return
        super().__init__(
            f"Forbidden: {tool} needs the {need} grant on workspace {workspace!r}, which principal "
            f"{principal!r} does not have; nothing was read or written. Ask an admin for "
            f"`chronograph token create NAME --grant {workspace}={need}`"
        )


class LockedError(ChronographError):
    """A file is locked by another agent (or not locked by the caller); nothing was written."""

    code = "locked"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details = details or {}
        """What a client can act on (the lock as it stands)."""


class RequestReplayError(ChronographError):
    """A requestId was reused for a call with different arguments; nothing was written."""

    code = "conflict"

    def __init__(self, tool: str, request_id: str, *, erased: bool = False) -> None:
        if erased:
            super().__init__(
                f"requestId {request_id!r} was already used for a {tool} call whose answer named an entity "
                "forgotten since (forget_entity erased it); nothing was written. Use a new requestId"
            )
            return
        super().__init__(
            f"requestId {request_id!r} was already used for a different {tool} call; "
            "use a new requestId for a new call"
        )


class SourceChangedError(ChronographError):
    """A file being imported changed between the pass that checked it and the one that writes it."""

    code = "conflict"

    def __init__(self, path: object, written: bool) -> None:
        super().__init__(
            f"{path} changed while it was imported (another program writes it: the official memory server "
            f"rewrites its file on every call); {'what was written of it stays' if written else 'nothing was written'}"
            ". Stop what writes it, or import a copy, and import again: what the store holds already is skipped")


class StorageError(ChronographError):
    """The store could not take the write (disk or size ceiling full, damaged: nothing was written;
    or its database went away, when a write whose commit was cut off may have been stored, as
    the message says)."""

    code = "storage"


class StoreUnreachableError(StorageError):
    """The store's database cannot be reached now (down, restarting, out of connections, a
    standby, its lock held too long); nothing was written: retry later. (A `StorageError`, with
    code `unavailable`: nothing is wrong with the store itself.)"""

    code = "unavailable"


class OutcomeUnknownError(StorageError):
    """A write's commit was sent but its answer never came (the database went away at the
    commit): it may or may not have been stored. A retry with the same requestId answers what
    was stored, or writes it if nothing was."""

    code = "outcome_unknown"


class ScratchError(StorageError):
    """The temporary folder could not hold what a command keeps there while it runs (an import's
    index of names, another server's memory as records): the folder's failing, not the source's."""

    def __init__(self, what: str, error: BaseException) -> None:
        said = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        super().__init__(f"the temporary folder {tempfile.gettempdir()} could not hold {what} ({said}); free some "
                         "space there, or set $TMPDIR to a folder with room, and run it again")


class ReplyTooLargeError(ChronographError):
    """A read's answer would be larger than one reply may be; ask for less."""

    code = "limit"

    def __init__(self, tool: str, size: int, limit: int, hint: str, *, at_least: bool = False) -> None:
        self.size = size
        self.limit = limit
        how = "at least " if at_least else ""
        super().__init__(
            f"The answer of {tool} would be {how}{_size(size)}, over the {_size(limit)} one reply may "
            f"carry (stdio clients built on MCP's TypeScript SDK drop the connection beyond 10 MiB). {hint}"
        )


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count / 2**10:.0f} KiB"


class UnavailableError(ChronographError):
    """A capability the call needs is not available here (semantic search without its model,
    an embeddings endpoint that is down); the other tools and modes work."""

    code = "unavailable"
