"""The export directory: where export_graph may write files, and how it writes them safely.

A prompt-injected agent must not be able to turn an export into damage: a target inside
any Chronograph store (overwriting `data.mdb` kills a running server and leaves the store
unreadable), a dotfile (`.bashrc` runs what an entity name says), or a file that exists
(unless the call says `overwrite: true`) is refused. A file is written whole or not at
all (a temporary file, synced, then linked or renamed into place), and both one export
and all exports of a process are capped in bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_BUDGET", "DEFAULT_MAX_EXPORT", "ExportDir", "ExportRefused"]

DEFAULT_MAX_EXPORT = 64 << 20
"""Largest file one export may write."""
DEFAULT_BUDGET = 1 << 30
"""Bytes all exports of one server process may write together."""
STORE_FILES = ("data.mdb", "lock.mdb")


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

    def target(self, relative: str) -> Path:
        """Where `relative` leads inside the directory.

        Raises:
            ExportRefused: If it is empty, absolute, leads out, names a dotfile or a hidden
                folder, or lies inside a Chronograph store.
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
        root = self.root.resolve()
        target = (root / candidate).resolve()
        if target == root:
            raise ExportRefused("outputPath names the export directory itself; give a file name")
        if root not in target.parents:
            raise ExportRefused(f"outputPath {relative!r} leads outside the export directory")
        if target.name in STORE_FILES or any((folder / "data.mdb").exists() for folder in target.parents):
            raise ExportRefused(f"outputPath {relative!r} lies inside a Chronograph store; export somewhere else")
        return target

    def write(self, relative: str, content: str, *, overwrite: bool = False) -> tuple[Path, int]:
        """Write `content` to `relative` whole; return the path and the bytes written.

        Raises:
            ExportRefused: If the target is refused (see `target`), exists and `overwrite` is
                not set, is not a regular file, or the content passes a limit.
            OSError: If the file system refuses the write; nothing is left behind.
        """
        target = self.target(relative)
        data = content.encode("utf-8")
        if len(data) > self.max_export:
            raise ExportRefused(
                f"the export is {len(data):,} bytes, over the {self.max_export:,} one export may write; "
                "export with the CLI instead (chronograph export -o FILE)"
            )
        if self.written + len(data) > self.budget:
            raise ExportRefused(
                f"this server has written {self.written:,} bytes of exports; another {len(data):,} would pass its "
                f"budget of {self.budget:,}; restart it or export with the CLI"
            )
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise ExportRefused(f"outputPath {relative!r} exists and is not a regular file")
        if target.exists() and not overwrite:
            raise ExportRefused(f"outputPath {relative!r} exists; pass overwrite: true to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.parent / f".{target.name}.{os.urandom(6).hex()}.partial"
        try:
            with temporary.open("xb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            if overwrite:
                os.replace(temporary, target)
            else:
                try:
                    os.link(temporary, target)  # fails if the name was taken meanwhile
                except FileExistsError:
                    raise ExportRefused(f"outputPath {relative!r} exists; pass overwrite: true to replace it") from None
        finally:
            temporary.unlink(missing_ok=True)
        self.written += len(data)
        return target, len(data)
