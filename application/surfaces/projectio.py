"""Reading and writing n2n's project files (`.mcp/memory.json`, `context.json`, the marker
`chronograph.json`): the one way each is read (never through a link, never blocking on a FIFO,
never past `FILE_LIMIT`) and the one place the mirror writes them (atomically, through the
guarded writer). Keeping them in step with the log is `projectfiles`'.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from chronograph.application.surfaces.projectfold import FileContext, FileGraph, ProjectFileError, in_format
from chronograph.application.surfaces.projectroot import CONTEXT_FILE, MEMORY_FILE
from chronograph.eventstore.files import ReadRefused, WriteRefused, read_regular, write_file

__all__ = ["FILE_LIMIT", "file_json", "read_project_file", "read_project_files", "write_project_file"]

F = TypeVar("F", bound=msgspec.Struct)
FILE_LIMIT = 64 << 20
"""The most a project file may hold, in bytes: a thousand entities with a few observations
each make under a megabyte, so 64 MiB is far past any real project, while reading it (and
parsing its JSON, some ten times its size in memory) stays bounded on every call."""


def write_project_file(path: Path, text: str, *, root: Path | None = None) -> bool:
    """Write `text` to `path` whole, through the guarded writer (`eventstore.files`: never
    through a link, never into a store, a temporary file created exclusively, synced, renamed
    over the old file); return whether anything changed (an identical file is left alone).

    This is the one place the project files are written; it refuses a symbolic link at the
    target or as the `.mcp` folder, so a repository cannot aim the write elsewhere, and a text
    past `FILE_LIMIT`, which the next call could not read back. `root`: the project's folder as
    `Project.pinned` reaches it, when `path`'s folder is reached through a descriptor too
    (`Project.pinned(tool, ".mcp")`: that path is followed, since nothing can swap it); the
    file must lie inside it (by default, inside the folder above the file's).

    Raises:
        ProjectFileError: If what is at `path` is not a regular file (see `read_project_file`).
        OSError: If the file system or the guarded writer refuses; nothing is left half-written.
    """
    data = text.encode("utf-8")
    if len(data) > FILE_LIMIT:
        raise OSError(f"{path.name} would be {len(data):,} bytes, past the {FILE_LIMIT:,} a project file may "
                      "hold (the next call could not read it back); the project's memory is too large to mirror")
    if read_project_file(path, pinned=root is not None) == data:
        return False
    try:  # these two files are the mirror's own: replacing them is what it is for
        write_file(path, data, overwrite=True, within=path.parent.parent if root is None else root)
    except WriteRefused as error:
        raise OSError(str(error)) from None
    return True


def read_project_file(path: Path, *, pinned: bool = False) -> bytes | None:
    """The bytes of the project file at `path` (None if there is none): the one way a project
    file (`.mcp/memory.json`, `context.json`, `chronograph.json`) is read, never through a
    link, never blocking on a FIFO, never past `FILE_LIMIT`. `pinned`: `path`'s folder is
    reached through its open descriptor (`Project.pinned`), the one path to it that is followed.

    Raises:
        ProjectFileError: If it (or `.mcp`) is a link, a folder, not a regular file or too large,
            or the file system refuses to read it (permissions, a loop of links).
    """
    try:
        return read_regular(path, limit=FILE_LIMIT, folder_links=pinned)
    except OSError as error:
        raise ProjectFileError(f"The project file .mcp/{path.name} cannot be read: {error.strerror or error}; "
                               "nothing was read") from None
    except ReadRefused as error:
        what = {"link": "is a symbolic link (or .mcp is); project files are not read or written through one",
                "folder": "is a folder, not a file",
                "special": "is not a regular file (a FIFO, a socket or a device)",
                "large": f"is larger than the {FILE_LIMIT // 2**20} MiB a project file may be"}[error.reason]
        raise ProjectFileError(f"The project file .mcp/{path.name} {what}; nothing was read. Move it away (or "
                               "replace it with the file itself) and call again") from None


def _read_json(path: Path) -> Any:
    return file_json(path, read_project_file(path))


def file_json(path: Path, data: bytes | None) -> Any:
    """The JSON of the project file at `path`, whose bytes are `data` (None: no file).

    Raises:
        ProjectFileError: If it is not valid JSON.
    """
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as error:
        raise ProjectFileError(
            f"The project file .mcp/{path.name} is not valid JSON ({error}); nothing was folded. After a git "
            f"merge conflict, take theirs (git checkout --theirs .mcp/{path.name}): your side is in the log, "
            "and the next call folds theirs in and writes both back") from None


def read_project_files(mcp: Path) -> tuple[FileGraph | None, FileContext | None]:
    """What a project's `.mcp` folder holds, in n2n's format (None for a file that is absent).

    Raises:
        ProjectFileError: If a file is a link, not JSON, or not in n2n's format.
        OSError: If a file cannot be read.
    """
    return _in_format(mcp / MEMORY_FILE, FileGraph), _in_format(mcp / CONTEXT_FILE, FileContext)


def _in_format(path: Path, kind: type[F]) -> F | None:
    """The n2n file at `path` as `kind` (None if it is absent).

    Raises:
        ProjectFileError: If it is a link, not JSON, or not in n2n's format (its field and problem named).
    """
    value = _read_json(path)
    return None if value is None else in_format(value, kind, str(path))
