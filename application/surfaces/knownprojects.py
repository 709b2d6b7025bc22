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
a `git pull`): it is folded, as before, but only the lines edited since (a three-way fold, its
base the lines this store wrote, as keyed digests: `projectbase`). A digest of a whole file
names none of its entities; the lines' are keyed with a random secret of this store, kept here
too. An erasure can leave the erased entity's lines in the record until the files are written
again (they are what keeps a stale file's copy of it from being folded back); the record that
replaces it holds none of them, and the store's file is then scrubbed of it (`wrote`).
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

import lmdb
import msgspec
from chronograph.application.engine.service import Memory
from chronograph.application.surfaces.projectbase import SECRET_SIZE, Lines
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.keys import digest

__all__ = ["MIRRORS", "NAME", "Mirrored", "erasures", "mirrored", "recall", "remember", "secret", "wrote"]

NAME = "projects.v1"
"""The database: workspace (UTF-8) -> its project's real root (the path's bytes)."""
MIRRORS = "mirrors.v1"
"""The database: workspace (UTF-8) -> `Mirrored`, what its project's files held when last written;
and under `_SECRET`, the secret the lines' digests are keyed with."""
_SECRET = b"\xffsecret"
"""A key no workspace has (0xFF is no byte of UTF-8)."""
_SCRUB_MARK = b"mirrors.scrubbed"
"""The database a scrub of the views' environment marks its rounds in (`LmdbEnv.scrub`)."""


class Mirrored(msgspec.Struct, frozen=True, array_like=True):
    """Digests of a project's `.mcp/memory.json` and `context.json` as this store last wrote them
    (None: not written by it), and of each line of `memory.json` (`projectbase`; None: a record
    written before they were kept, or no secret to key them with), as of the log's `erasures`."""

    graph: bytes | None
    context: bytes | None
    lines: Lines | None = None
    erasures: int = 0
    """The log's erasure count (`erasures`) before the graph the lines were made of was read."""

    @staticmethod
    def of(data: bytes | None) -> bytes | None:
        """The digest kept of a file's bytes `data` (None for no file)."""
        return None if data is None else digest(data)


def remember(memory: Memory, workspace: str, root: Path) -> None:
    """Record that `workspace`'s project is at `root`, unless it is recorded so already (one
    write per project and store; nothing on a read-only store, and a store that cannot take it,
    full or failing, just does not keep it: the record is a help, not a duty)."""
    if recall(memory, workspace) != root:
        _put(memory, NAME, _key(workspace), os.fsencode(root))


def recall(memory: Memory, workspace: str) -> Path | None:
    """The root recorded for `workspace`'s project, or None."""
    found = _get(memory, NAME, _key(workspace))
    return None if found is None else Path(os.fsdecode(found))


def wrote(memory: Memory, workspace: str, files: Mirrored) -> None:
    """Record that `workspace`'s project files hold `files` now, as this store wrote them (unless
    recorded so already). Best effort, as `remember`: without it, the next process folds the files
    (which hold nothing the log lacks, unless it moved on since) instead of only rewriting them.
    Call it with no erasure awaiting its scrub: a write then may carry erased bytes into new pages.
    Once a record whose lines another lacks, made before an erasure since, is replaced, the views'
    file is scrubbed: the lines an erasure took out must not stay in its free pages."""
    old = mirrored(memory, workspace)
    if old == files:
        return
    _put(memory, MIRRORS, _key(workspace), _ENCODE(files))
    if old is not None and old.lines is not None and old.erasures < files.erasures and (
            files.lines is None or not old.lines.held() <= files.lines.held()):
        with memory.lock, suppress(EventStoreError, lmdb.Error):  # as a forget's: the next scrub finishes it
            memory.views.env.scrub(_SCRUB_MARK)


def mirrored(memory: Memory, workspace: str) -> Mirrored | None:
    """What `workspace`'s project files held when this store last wrote them, or None."""
    found = _get(memory, MIRRORS, _key(workspace))
    try:
        return None if found is None else _DECODE(found)
    except msgspec.DecodeError:  # not ours to trust: the files are folded, as without a record
        return None


def secret(memory: Memory) -> bytes | None:
    """The random secret this store keys the digests of project files' lines with, made the
    first time it is asked for (so: not while an erasure awaits its scrub); None if the store
    cannot keep one (read-only, full, failing): then no line is recorded, and files are folded
    whole, as by a store that recorded none."""
    found = _get(memory, MIRRORS, _SECRET)
    if found is None:
        _put(memory, MIRRORS, _SECRET, os.urandom(SECRET_SIZE))
        found = _get(memory, MIRRORS, _SECRET)
    return found if found is not None and len(found) == SECRET_SIZE else None


def erasures(memory: Memory) -> int:
    """How many erasures the log has had (`Mirrored.erasures`; 0 if the log cannot say: a record
    made then is scrubbed for when it is replaced after any erasure)."""
    try:
        with memory.log.read() as log:
            return log.erasures()
    except EventStoreError:
        return 0


_ENCODE = msgspec.msgpack.Encoder().encode
_DECODE = msgspec.msgpack.Decoder(Mirrored).decode


def _key(workspace: str) -> bytes:
    return workspace.encode("utf-8", "surrogatepass")


def _put(memory: Memory, name: str, key: bytes, value: bytes) -> None:
    """`value` kept under `key` in the database `name`; nothing on a read-only store, or one
    that cannot take it (full, failing): the records here are a help, not a duty."""
    env = memory.views.env
    if env.readonly:
        return
    try:
        with memory.lock:
            db = env.open_db(name)
            env.write(lambda txn: txn.put(key, value, db=db))
    except (EventStoreError, lmdb.Error):
        pass


def _get(memory: Memory, name: str, key: bytes) -> bytes | None:
    """What the database `name` keeps under `key`; None if nothing, or never made
    (lmdb.NotFoundError), or unreadable."""
    env = memory.views.env
    try:
        with memory.lock:
            db = env.open_db(name, create=False)
            with env.read() as txn:
                found = txn.get(key, db=db)
    except (EventStoreError, lmdb.Error):
        return None
    return None if found is None else bytes(found)
