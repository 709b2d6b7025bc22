"""What killed writes leave behind, found and removed: the guarded writer's `.partial` files
and the scratch folders of commands.

A temporary file of the guarded writer is named `.<target>.<host>-<pid>-<start>-<random>.partial`
(`partial_name`, with the target's first 180 characters): the host is a digest of its name, for
a folder shared with other machines (or containers) holds their live writes too; `pid` is the
writing process and `start` when it started, in the system's ticks since boot (0 where the
system does not say: Linux's /proc does). A write into a folder removes every such file this
host's gone processes left there, whatever its target (`sweep_partials`): a backup killed before
its end left one nearly the backup's size, holding what the store held then, which no later
`forget` reaches. A process is gone when no process has its id, or when the one that has it
started at another time (the id was taken again). A file named as earlier versions named them
(`.<target>.<pid>-<random>.partial`, no host) is removed only by a write of its own target when
no process has its id, as it was then: whose host wrote it cannot be told.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
from collections.abc import Collection, Mapping
from contextlib import suppress
from functools import cache
from glob import escape as glob_escape
from hashlib import blake2b
from pathlib import Path

__all__ = ["orphans", "partial_name", "sweep_orphans", "sweep_partials"]

_SUFFIX = ".partial"
_PARTIAL = re.compile(r"\.(?P<target>.+)\.(?P<host>[0-9a-f]{12})-(?P<pid>[0-9]{1,9})-(?P<start>[0-9]{1,20})-"
                      r"[0-9a-f]{12}\.partial", re.DOTALL)


@cache
def _host() -> str:
    return blake2b(socket.gethostname().encode(), digest_size=6).hexdigest()


def partial_name(name: str) -> str:
    """A new name for the temporary file of a write of `name` by this process (created
    exclusively: the random part makes it one nobody planted in advance), within 255 bytes."""
    return f".{name[:180]}.{_host()}-{os.getpid()}-{_started(os.getpid()) or 0}-{secrets.token_hex(6)}{_SUFFIX}"


def sweep_partials(fd: int, name: str) -> None:
    """Remove from the folder open as `fd` the temporary files of this host's writes whose
    process is gone, of any target; and those of writes of `name` named as earlier versions did,
    whose process id no process has."""
    legacy = f".{name[:200]}."
    with suppress(OSError):
        for entry in os.listdir(fd):
            if not entry.endswith(_SUFFIX):
                continue
            found = _PARTIAL.fullmatch(entry)
            if found is not None:
                gone = found["host"] == _host() and _gone(int(found["pid"]), int(found["start"]))
            elif entry.startswith(legacy):
                pid = entry.removeprefix(legacy).partition("-")[0]
                gone = pid.isascii() and pid.isdigit() and len(pid) <= 9 and _gone(int(pid), 0)
            else:
                continue
            if gone:
                with suppress(FileNotFoundError):
                    os.unlink(entry, dir_fd=fd)


def orphans(folder: Path, prefix: str) -> list[Path]:
    """The folders in `folder` named `<prefix><pid>-...` whose process `pid` is gone: temporary
    folders of commands killed before they could remove them. One of a live process (as far as
    this host can tell), of this one, a link, or a name that holds no process id is not one."""
    found = []
    try:
        candidates = list(folder.glob(f"{glob_escape(prefix)}*-*"))
    except OSError:
        return []
    for path in candidates:
        pid = path.name.removeprefix(prefix).partition("-")[0]
        if pid.isascii() and pid.isdigit() and len(pid) <= 9 and _gone(int(pid), 0) and not path.is_symlink():
            found.append(path)
    return found


def sweep_orphans(folder: Path, prefix: str, holds: Mapping[str, Collection[str]] | None = None) -> int:
    """Remove the `orphans` in `folder` named with `prefix`; return how many went (one this user
    may not remove is left). With `holds` (a folder's name -> the files it may hold), only those
    holding nothing but such folders (a command's scratch copy of a store: `{"store": LMDB's
    files}`), so that a folder of the user's of a like name stays."""
    swept = 0
    for path in orphans(folder, prefix):
        if holds is not None and not _holds_only(path, holds):
            continue
        shutil.rmtree(path, ignore_errors=True)
        swept += not os.path.lexists(path)
    return swept


def _holds_only(path: Path, folders: Mapping[str, Collection[str]]) -> bool:
    """Whether `path` holds nothing but `folders` (no links), each nothing but its files."""
    try:
        with os.scandir(path) as entries:
            return all(entry.name in folders and entry.is_dir(follow_symlinks=False)
                       and set(os.listdir(entry.path)) <= set(folders[entry.name]) for entry in entries)
    except OSError:
        return False


def _gone(pid: int, start: int) -> bool:
    """Whether the process `pid` is gone: no process has that id, or (`start`: when it started,
    in ticks since boot; 0 for unknown) the one that has it started at another time."""
    if pid == os.getpid():
        return bool(start) and start != _started(pid)
    if not _alive(pid):
        return True
    now = _started(pid) if start else None
    return now is not None and now != start


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's (EPERM), or a number no process can have
        return True
    return True


def _started(pid: int) -> int | None:
    """When the process `pid` started, in the system's ticks since boot, or None where the
    system does not say (Linux's /proc does): with the id, it names one process for good."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rpartition(b")")[2].split()[19])  # field 22, starttime (after the name)
    except (OSError, ValueError, IndexError):
        return None
