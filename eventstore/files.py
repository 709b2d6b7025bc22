"""The one way Chronograph writes a file outside a store: guarded, whole or not at all.

Exports, backups, the n2n marker and every temporary file go through `guarded_file` (or
`write_file`), whoever asked for them: an MCP tool, a command, a profile. It refuses

- a target inside any store, resolved through symbolic links: a folder that holds an LMDB
  environment (`data.mdb`, `lock.mdb`: a store, a PostgreSQL store's local cache, a store
  set aside by a restore), or a file named as one;
- a target that is a symbolic link (dangling or not), a folder or anything but a regular
  file: nothing is ever written through a link;
- a target that exists, unless the caller asked to replace it (`overwrite`; the refusal
  names the caller's own flag: `--force`, `overwrite: true`);

and writes a temporary file created exclusively beside the target (`O_EXCL | O_NOFOLLOW`,
a random name: never one planted in advance), synced, then linked into place (which fails
if the name was taken meanwhile) or renamed over the old file when asked, and the folder
synced: a crash leaves the old file or the new one, never a mix. The folder is opened once
and every step works relative to it, so a path swapped halfway cannot redirect the write.
A write first removes the temporary files that killed writes on this host left in its folder
(`leftovers.sweep_partials`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from chronograph.eventstore.errors import EventStoreError
from chronograph.eventstore.leftovers import orphans, partial_name, sweep_orphans, sweep_partials

__all__ = ["DATA_FILE", "LOCK_FILE", "STORE_FILES", "ReadRefused", "WriteRefused", "check_target", "guarded_file",
           "read_regular", "store_of", "orphans", "sweep_orphans", "write_file"]

DATA_FILE = "data.mdb"
LOCK_FILE = "lock.mdb"
STORE_FILES = (DATA_FILE, LOCK_FILE)
"""The files of an LMDB environment: a folder holding either is a store (or a cache of one)."""
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}
"""What `link` says on a file system without hard links (FAT, some network and FUSE mounts)."""


class WriteRefused(EventStoreError):
    """A file may not be written where, or as, it was asked; nothing was written.

    `reason` says why, for a program: `store`, `link`, `folder`, `special`, `exists`,
    `outside` or `name`.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ReadRefused(EventStoreError):
    """A file Chronograph reads on its own (a project file, a client's settings) is not a
    regular file of bounded size; nothing was read.

    `reason` says why, for a program: `link`, `folder`, `special` or `large`.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def read_regular(path: str | os.PathLike[str], *, limit: int, folder_links: bool = False) -> bytes | None:
    """The bytes of the regular file at `path`, or None if there is none; read without
    following a symbolic link (at the file, or as its folder unless `folder_links`) and
    without blocking, and checked on the opened descriptor, so neither a link, a FIFO nor a
    file swapped in between a check and the read can hang the caller or send it elsewhere.

    Raises:
        ReadRefused: If it is a link, a folder, not a regular file, or larger than `limit` bytes.
        OSError: If the file system refuses the read (permissions, say).
    """
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if folder_links else os.O_NOFOLLOW))
    except FileNotFoundError:
        return None
    except (NotADirectoryError, OSError) as error:
        if error.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        raise ReadRefused(f"{folder} is a symbolic link or not a folder; {name} is not read through one",
                          "link") from None
    try:
        try:
            descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno != errno.ELOOP:
                raise
            raise ReadRefused(f"{path} is a symbolic link; it is not read through one", "link") from None
    finally:
        os.close(fd)
    try:
        found = os.fstat(descriptor)
        if stat.S_ISDIR(found.st_mode):
            raise ReadRefused(f"{path} is a folder, not a file", "folder")
        if not stat.S_ISREG(found.st_mode):
            raise ReadRefused(f"{path} is not a regular file (a FIFO, a socket or a device)", "special")
        if found.st_size > limit:
            raise ReadRefused(f"{path} is {found.st_size:,} bytes; files of over {limit:,} are not read", "large")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(descriptor, min(limit + 1 - size, 1 << 20))):
            chunks.append(chunk)  # a file growing meanwhile is still read no further than the limit
            size += len(chunk)
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    if len(data) > limit:
        raise ReadRefused(f"{path} grew past {limit:,} bytes while it was read; files of over {limit:,} are not "
                          "read", "large")
    return data


def store_of(path: str | os.PathLike[str]) -> Path | None:
    """The store `path` lies in, resolved through symbolic links: the folder itself if it is
    one, else the nearest folder above it that holds an LMDB environment; None if there is none."""
    real = Path(os.path.realpath(path))
    for folder in (real, *real.parents):
        if any(os.path.lexists(folder / name) for name in STORE_FILES):
            return folder
    return None


def check_target(
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    flag: str = "--force",
    within: str | os.PathLike[str] | None = None,
    parents: bool = False,
) -> None:
    """Refuse now what `guarded_file` would refuse (before long work that ends in the write).

    Raises:
        WriteRefused: See `guarded_file`.
    """
    folder, name = _split(path)
    if parents and not os.path.isdir(folder):
        _refuse_folder(Path(path), _existing_ancestor(folder), within)
        return
    fd = _open_folder(Path(path), folder, within)
    try:
        _check_name(Path(path), fd, name, overwrite, flag)
    finally:
        os.close(fd)


@contextmanager
def guarded_file(
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    flag: str = "--force",
    within: str | os.PathLike[str] | None = None,
    parents: bool = False,
    mode: int = 0o666,
) -> Iterator[BinaryIO]:
    """A new file to fill in the `with` block (readable too); it takes `path`'s place only if
    the block ends without an exception, synced, and is removed otherwise.

    `within`: a folder the target must lie inside (resolved). `parents`: create missing
    folders (checked first). `mode`: the permissions before the umask (0o600 for a backup); a file
    replaced keeps its own where they are narrower (a user's private settings stay private).

    Raises:
        WriteRefused: If the target lies in a store, is a link, a folder or not a regular
            file, lies outside `within`, or exists and `overwrite` is not set (the message
            names `flag`).
        OSError: If the file system refuses the write; nothing is left behind.
    """
    target = Path(path)
    folder, name = _split(path)
    if parents and not os.path.isdir(folder):
        _refuse_folder(target, _existing_ancestor(folder), within)
        os.makedirs(folder, exist_ok=True)
    fd = _open_folder(target, folder, within)
    try:
        _check_name(target, fd, name, overwrite, flag)
        sweep_partials(fd, name)
        temporary = partial_name(name)
        descriptor = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                             dir_fd=fd)
        if overwrite:
            _keep_access(fd, name, descriptor)
        try:
            with os.fdopen(descriptor, "w+b") as file:
                yield file
                file.flush()
                os.fsync(file.fileno())
            _put_in_place(target, fd, temporary, name, overwrite, flag)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=fd)
        _sync_folder(fd)
    finally:
        os.close(fd)


_ACL = "system.posix_acl_access"


def _keep_access(fd: int, name: str, descriptor: int) -> None:
    """Give the new file `descriptor` no wider access than `name` in the folder `fd` had, if it is
    a regular file: its mode bits, narrowed, and its access list (an entry denying a user is a
    narrowing the mode bits cannot say)."""
    try:
        replaced = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(replaced.st_mode):
        return
    narrowed = stat.S_IMODE(os.fstat(descriptor).st_mode) & stat.S_IMODE(replaced.st_mode)
    try:
        acl = os.getxattr(f"/proc/self/fd/{fd}/{name}", _ACL, follow_symlinks=False)
    except OSError:  # none, or a file system without them
        acl = None
    if acl is not None:
        os.setxattr(descriptor, _ACL, acl)  # (it sets the mode bits too: narrowed again below)
    os.fchmod(descriptor, narrowed)


def write_file(path: str | os.PathLike[str], data: bytes, **options: object) -> int:
    """Write `data` to `path` through `guarded_file` (same keywords); return the bytes written.

    Raises:
        WriteRefused: See `guarded_file`.
        OSError: If the file system refuses the write; nothing is left behind.
    """
    with guarded_file(path, **options) as file:  # type: ignore[arg-type]
        file.write(data)
    return len(data)


def _split(path: str | os.PathLike[str]) -> tuple[str, str]:
    absolute = os.path.abspath(os.fspath(path))
    folder, name = os.path.split(absolute)
    if not name or name in (".", "..") or "\x00" in absolute:
        raise WriteRefused(f"{os.fspath(path)!r} names no file", "name")
    if name in STORE_FILES:
        raise WriteRefused(f"{os.fspath(path)} is named as a store's own file ({name}); choose another name",
                           "store")
    return folder, name


def _existing_ancestor(folder: str) -> str:
    """The real path of the nearest folder at or above `folder` that exists."""
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return os.path.realpath(folder)


def _open_folder(target: Path, folder: str, within: str | os.PathLike[str] | None) -> int:
    """The target's folder, opened, after checking where it really is."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise WriteRefused(f"the folder of {target} does not exist", "folder") from None
    except NotADirectoryError:
        raise WriteRefused(f"{Path(folder)} is not a folder", "folder") from None
    try:
        _refuse_folder(target, _real_folder(fd, folder), within)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _real_folder(fd: int, folder: str) -> str:
    """Where the folder open as `fd` really is (the kernel's answer where it gives one)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(folder)


def _refuse_folder(target: Path, real: str, within: str | os.PathLike[str] | None) -> None:
    store = store_of(real)
    if store is not None:
        raise WriteRefused(f"{target} lies inside the store at {store} (a folder holding data.mdb); write it "
                           "somewhere else", "store")
    if within is not None:
        root = os.path.realpath(within)
        if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
            raise WriteRefused(f"{target} lies outside {within}", "outside")


def _check_name(target: Path, fd: int, name: str, overwrite: bool, flag: str) -> None:
    try:
        found = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(found.st_mode):
        raise WriteRefused(f"{target} is a symbolic link; Chronograph never writes through one (name the file "
                           "itself)", "link")
    if stat.S_ISDIR(found.st_mode):
        raise WriteRefused(f"{target} is a folder; name the file to write", "folder")
    if not stat.S_ISREG(found.st_mode):
        raise WriteRefused(f"{target} exists and is not a regular file", "special")
    if not overwrite:
        raise WriteRefused(f"{target} exists; pass {flag} to replace it", "exists")


def _sync_folder(fd: int) -> None:
    """Make the new name durable (a file system that cannot sync a folder says EINVAL)."""
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise


def _put_in_place(target: Path, fd: int, temporary: str, name: str, overwrite: bool, flag: str) -> None:
    """Link the temporary file as `name` (refused if it was taken meanwhile), or rename it over
    the old file when asked (a rename replaces a link that appeared meanwhile, never its target)."""
    if overwrite:
        _check_name(target, fd, name, overwrite, flag)
        os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        return
    try:
        os.link(temporary, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
    except FileExistsError:
        raise WriteRefused(f"{target} exists; pass {flag} to replace it", "exists") from None
    except OSError as error:
        if error.errno not in _NO_HARD_LINKS:
            raise
        _check_name(target, fd, name, overwrite, flag)  # no hard links here: check, then rename
        os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
