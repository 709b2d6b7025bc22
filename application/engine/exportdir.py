"""The export directory: where export_graph may write files, and what it may not write there.

A prompt-injected agent must not be able to turn an export into damage. On top of what the
guarded writer refuses to anyone (`eventstore.files`: a target inside any store, through a
symbolic link, over a file unless `overwrite: true`, anything but whole files), an agent's
path must be relative, stay inside the directory, and name no dotfile or hidden folder
(`.bashrc` runs what an entity name says); both one export and all exports of a process
are capped in bytes. A principal other than the local user writes in a folder of its own
(`owner`): one token's export never replaces, nor reveals, another's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from chronograph.eventstore.files import WriteRefused, guarded_file

__all__ = ["DEFAULT_BUDGET", "DEFAULT_MAX_EXPORT", "ExportDir", "ExportFile", "ExportRefused"]

DEFAULT_MAX_EXPORT = 64 << 20
"""Largest file one export may write."""
DEFAULT_BUDGET = 1 << 30
"""Bytes all exports of one server process may write together."""
OVERWRITE = "overwrite: true"
"""How a tool call asks to replace a file (what a refusal tells the agent to pass)."""
REFUSALS = {
    "store": "lies inside a Chronograph store; export somewhere else",
    "outside": "leads outside the export directory",
    "link": "is a symbolic link; exports are never written through one",
    "folder": "is a folder, or its folder is not one; give a file name",
    "special": "exists and is not a regular file",
    "exists": f"exists; pass {OVERWRITE} to replace it",
    "name": "names no file; give a file name",
}
"""What the guarded writer's refusals say to an agent, naming its outputPath (not this machine's paths)."""


def folder_of(owner: str) -> str:
    """The folder of the export directory a principal's exports go in: its name when that is a
    plain file name (a token's), else `principal-` and a digest of it (an OAuth subject may hold
    any character)."""
    if _PLAIN.fullmatch(owner) and not owner.startswith(_HASHED):  # a token named so would share a subject's
        return owner
    return _HASHED + hashlib.sha256(owner.encode("utf-8", "surrogatepass")).hexdigest()[:16]


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_@-]{0,63}")
_HASHED = "principal-"


class ExportRefused(ValueError):
    """The export may not be written where, or as, it was asked."""


class ExportDir:
    """The one directory exports may write into, with its limits."""

    def __init__(self, root: Path, *, max_export: int = DEFAULT_MAX_EXPORT, budget: int = DEFAULT_BUDGET) -> None:
        self.root = root
        self.max_export = max_export
        self.budget = budget
        self.written = 0
        """Bytes written by this process so far."""

    def target(self, relative: str, owner: str | None = None) -> Path:
        """Where `relative` leads inside the directory, or inside `owner`'s folder of it (not
        resolved: the writer checks links).

        Raises:
            ExportRefused: If it is empty, absolute, leads out, or names a dotfile or a hidden folder.
        """
        if not relative or "\x00" in relative:
            raise ExportRefused("outputPath must be a non-empty relative path")
        candidate = Path(relative)
        if candidate.is_absolute() or candidate.drive:
            raise ExportRefused(f"outputPath {relative!r} is absolute; give a path inside the export directory")
        if any(part == ".." for part in candidate.parts):
            raise ExportRefused(f"outputPath {relative!r} leads outside the export directory")
        if any(part.startswith(".") for part in candidate.parts):
            raise ExportRefused(
                f"outputPath {relative!r} names a dotfile or a hidden folder (shell and tool configuration "
                "lives there); choose a plain file name"
            )
        if candidate.name == "" or candidate == Path():
            raise ExportRefused("outputPath names the export directory itself; give a file name")
        return self.root / candidate if owner is None else self.root / folder_of(owner) / candidate

    def write(self, relative: str, content: str, *, overwrite: bool = False,
              owner: str | None = None) -> tuple[Path, int]:
        """Write `content` to `relative` whole; return the path and the bytes written (see `writing`)."""
        with self.writing(relative, overwrite=overwrite, owner=owner) as file:
            file.write(content)
        return file.path, file.written

    @contextmanager
    def writing(self, relative: str, *, overwrite: bool = False, owner: str | None = None) -> Iterator[ExportFile]:
        """A file at `relative` (in `owner`'s folder, if given) to write text into, a piece at a
        time; it takes its place whole when the block ends, and is removed if the block raises or
        a limit is passed.

        Raises:
            ExportRefused: If the target is refused (see `target` and `eventstore.files`), exists
                and `overwrite` is not set, or what is written passes a limit.
            OSError: If the file system refuses the write; nothing is left behind.
        """
        target = self.target(relative, owner)
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            with guarded_file(target, overwrite=overwrite, flag=OVERWRITE, within=self.root, parents=True) as file:
                export = ExportFile(target, file, self.max_export, self.budget - self.written, self.written)
                yield export
        except WriteRefused as error:
            raise ExportRefused(f"outputPath {relative!r} {REFUSALS.get(error.reason, 'cannot be written')}") from None
        self.written += export.written


class ExportFile:
    """One export being written: its text, encoded as it comes and counted against the limits."""

    def __init__(self, path: Path, file: BinaryIO, most: int, left: int, before: int) -> None:
        self.path = path
        self._file = file
        self._most = most
        self._left = left
        self._before = before
        self.written = 0
        """Bytes written so far"""

    def write(self, text: str) -> None:
        """Append `text` (UTF-8).

        Raises:
            ExportRefused: If the export passes the bytes one export, or all of this process's, may write.
        """
        data = text.encode("utf-8")
        self.written += len(data)
        if self.written > self._most:
            raise ExportRefused(
                f"the export is over the {self._most:,} bytes one export may write; "
                "export with the CLI instead (chronograph export -o FILE)")
        if self.written > self._left:
            raise ExportRefused(
                f"this server has written {self._before:,} bytes of exports; this one would pass its "
                f"budget of {self._before + self._left:,}; restart it or export with the CLI")
        self._file.write(data)
