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
"""

from __future__ import annotations

import os
from pathlib import Path

import lmdb
from chronograph.application.engine.service import Memory
from chronograph.eventstore import EventStoreError

__all__ = ["NAME", "recall", "remember"]

NAME = "projects.v1"
"""The database: workspace (UTF-8) -> its project's real root (the path's bytes)."""


def remember(memory: Memory, workspace: str, root: Path) -> None:
    """Record that `workspace`'s project is at `root`, unless it is recorded so already (one
    write per project and store; nothing on a read-only store, and a store that cannot take it,
    full or failing, just does not keep it: the record is a help, not a duty)."""
    env = memory.views.env
    if env.readonly or recall(memory, workspace) == root:
        return
    try:
        with memory.lock:
            db = env.open_db(NAME)
            env.write(lambda txn: txn.put(workspace.encode("utf-8", "surrogatepass"), os.fsencode(root), db=db))
    except (EventStoreError, lmdb.Error):
        pass


def recall(memory: Memory, workspace: str) -> Path | None:
    """The root recorded for `workspace`'s project, or None."""
    env = memory.views.env
    try:
        with memory.lock:
            db = env.open_db(NAME, create=False)
            with env.read() as txn:
                found = txn.get(workspace.encode("utf-8", "surrogatepass"), db=db)
    except (EventStoreError, lmdb.Error):  # never recorded (lmdb.NotFoundError), or unreadable
        return None
    return None if found is None else Path(os.fsdecode(bytes(found)))
