"""Where the projects whose files this machine keeps are: an n2n workspace's project root,
kept beside the views.

A project's workspace is named after its root (`projectroot.workspace_name`: the folder's name
and a digest of its real path), and a digest cannot be read back into a path. A server learns
the root from the n2n call that names it (`projectPath`); a later process asked to change that
workspace by its name alone (`forget_entity`, or any core tool through the full profile) would
not know where the project's files are, and the files would give back at the next n2n call
what it erased. So the root of each project whose files a server keeps is recorded in the
database `projects.v1` of the views' environment: the store's own file, or a database log's
cache on this machine, whose paths are this machine's. A root read back is a hint, never
trusted: the caller resolves it again and uses it only if it is still the project of that
workspace (`ProjectFiles._known`). Nothing here comes from the log or an entity: an erasure
leaves it as it is.

Beside it, in `mirrors.v1`, what the project's files held when this store last wrote them (or
found them already so): a digest of each file. A file that still matches it holds nothing this
store's log did not hold (the mirror is written from the log), so it is never folded back,
only rewritten: after a process was killed between a write's commit and its mirror (a forget,
a rename, a deletion), the file is behind the log, and folding it would bring back what the
log deleted or erased. A file that does not match was changed by someone else (a hand edit,
a `git pull`): it is folded, as before. A digest of a whole file names none of its entities.
"""

from __future__ import annotations

import os
from pathlib import Path

import lmdb
import msgspec
from chronograph.application.engine.service import Memory
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.keys import digest

__all__ = ["MIRRORS", "NAME", "Mirrored", "mirrored", "recall", "remember", "wrote"]

NAME = "projects.v1"
"""The database: workspace (UTF-8) -> its project's real root (the path's bytes)."""
MIRRORS = "mirrors.v1"
"""The database: workspace (UTF-8) -> `Mirrored`, what its project's files held when last written."""


class Mirrored(msgspec.Struct, frozen=True, array_like=True):
    """Digests of a project's `.mcp/memory.json` and `context.json` as this store last wrote them
    (None: not written by it)."""

    graph: bytes | None
    context: bytes | None

    @staticmethod
    def of(data: bytes | None) -> bytes | None:
        """The digest kept of a file's bytes `data` (None for no file)."""
        return None if data is None else digest(data)


def remember(memory: Memory, workspace: str, root: Path) -> None:
    """Record that `workspace`'s project is at `root`, unless it is recorded so already (one
    write per project and store; nothing on a read-only store, and a store that cannot take it,
    full or failing, just does not keep it: the record is a help, not a duty)."""
    if recall(memory, workspace) != root:
        _put(memory, NAME, workspace, os.fsencode(root))


def recall(memory: Memory, workspace: str) -> Path | None:
    """The root recorded for `workspace`'s project, or None."""
    found = _get(memory, NAME, workspace)
    return None if found is None else Path(os.fsdecode(found))


def wrote(memory: Memory, workspace: str, files: Mirrored) -> None:
    """Record that `workspace`'s project files hold `files` now, as this store wrote them (unless
    recorded so already). Best effort, as `remember`: without it, the next process folds the files
    (which hold nothing the log lacks, unless it moved on since) instead of only rewriting them.
    Call it with no erasure awaiting its scrub: a write then may carry erased bytes into new pages."""
    if mirrored(memory, workspace) != files:
        _put(memory, MIRRORS, workspace, _ENCODE(files))


def mirrored(memory: Memory, workspace: str) -> Mirrored | None:
    """What `workspace`'s project files held when this store last wrote them, or None."""
    found = _get(memory, MIRRORS, workspace)
    try:
        return None if found is None else _DECODE(found)
    except msgspec.DecodeError:  # not ours to trust: the files are folded, as without a record
        return None


_ENCODE = msgspec.msgpack.Encoder().encode
_DECODE = msgspec.msgpack.Decoder(Mirrored).decode


def _put(memory: Memory, name: str, workspace: str, value: bytes) -> None:
    """`value` kept under `workspace` in the database `name`; nothing on a read-only store, or
    one that cannot take it (full, failing): the records here are a help, not a duty."""
    env = memory.views.env
    if env.readonly:
        return
    try:
        with memory.lock:
            db = env.open_db(name)
            env.write(lambda txn: txn.put(workspace.encode("utf-8", "surrogatepass"), value, db=db))
    except (EventStoreError, lmdb.Error):
        pass


def _get(memory: Memory, name: str, workspace: str) -> bytes | None:
    """What the database `name` keeps under `workspace`; None if nothing, or never made
    (lmdb.NotFoundError), or unreadable."""
    env = memory.views.env
    try:
        with memory.lock:
            db = env.open_db(name, create=False)
            with env.read() as txn:
                found = txn.get(workspace.encode("utf-8", "surrogatepass"), db=db)
    except (EventStoreError, lmdb.Error):
        return None
    return None if found is None else bytes(found)
