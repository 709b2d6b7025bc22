"""Projects found from a path, as n2n-memory finds them: `projectPath` names the root of a
project (never a parent is searched), recognised by a strong marker; a root without `.mcp`
is adopted only when the client confirms it (`confirmNewProjectRoot`), and then gets one.

A project's memory is a workspace named after its root (`n2n:<folder>:<digest of the real
path>`), so every project on the machine shares the one store and log, isolated from the
others, with history, time travel and audit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from chronograph.application.errors import ChronographError, InvalidArgumentsError, NotFoundError
from chronograph.eventstore.files import WriteRefused, store_of, write_file
from chronograph.eventstore.keys import digest

__all__ = ["CONTEXT_FILE", "MEMORY_FILE", "STRONG_MARKERS", "AwaitingConfirmationError", "adopted_root",
           "project_root", "project_workspace", "workspace_name"]

STRONG_MARKERS = (
    ".git", ".mcp", "package.json", "tsconfig.json", "pyproject.toml", "setup.py", "setup.cfg", "Cargo.toml",
    "go.mod", "pom.xml", "build.gradle", "build.gradle.kts", "Gemfile", "composer.json", "CMakeLists.txt",
    "mix.exs", "deno.json", "Package.swift", "pubspec.yaml",
)
"""What makes a folder a project root (a language's build file or a repository)."""
WEAK_MARKERS = ("README.md", "README", "README.txt", "readme.md")
MARKER_FILE = "chronograph.json"
"""What `.mcp/` holds once a root is adopted: the workspace its memory lives in."""
MEMORY_FILE = "memory.json"
CONTEXT_FILE = "context.json"
"""n2n's own files in `.mcp/`: the project's graph and its hot context."""


class AwaitingConfirmationError(ChronographError):
    """A project root was recognised but never adopted: call again with confirmNewProjectRoot."""

    code = "awaiting_confirmation"

    def __init__(self, root: str) -> None:
        super().__init__(
            f"{root} looks like a project root but has no .mcp folder yet. To keep this project's memory "
            f"there, call the same tool again with confirmNewProjectRoot set to {root!r}."
        )
        self.details = {"status": "AWAITING_CONFIRMATION", "detectedRoot": root}


def project_root(tool: str, project_path: str) -> Path:
    """The real path of the project root `project_path` names, checked.

    Raises:
        InvalidArgumentsError: A relative path, NUL or `..` in it, a folder inside a store, or a
            folder that is no project root.
        NotFoundError: A path that does not exist or is not a folder.
    """
    if "\x00" in project_path:
        raise InvalidArgumentsError(tool, "projectPath: must not contain NUL characters")
    if not os.path.isabs(project_path):
        raise InvalidArgumentsError(tool, f"projectPath: {project_path!r} is not absolute; give the project "
                                    "root's absolute path")
    if ".." in Path(project_path).parts:
        raise InvalidArgumentsError(tool, "projectPath: must not contain '..' (give the root itself)")
    root = Path(os.path.realpath(project_path))
    if not root.is_dir():
        raise NotFoundError(f"projectPath: {project_path} does not exist or is not a folder")
    store = store_of(root)
    if store is not None:  # refused before anything is created in it (a `.mcp` beside data.mdb)
        raise InvalidArgumentsError(tool, f"projectPath: {root} lies inside the store at {store} (a folder holding "
                                    "data.mdb); a store is no project, and nothing is written into one")
    if not any((root / marker).exists() for marker in STRONG_MARKERS):
        weak = any((root / marker).exists() for marker in WEAK_MARKERS)
        what = "only a weak root (a README)" if weak else "no project root"
        raise InvalidArgumentsError(tool, f"projectPath: {root} is {what}; a root has one of "
                                    f"{', '.join(STRONG_MARKERS[:6])}, ... (parents are not searched)")
    return root


def workspace_name(root: Path) -> str:
    """The workspace of the project whose (real) root is `root`."""
    return f"n2n:{root.name[:48]}:{digest(str(root).encode('utf-8', 'surrogatepass'), 8).hex()}"


def adopted_root(path: str, imported: Callable[[str], bool] | None = None,
                 readable: Callable[[str], bool] | None = None) -> Path | None:
    """The nearest folder at or above `path` that is an adopted project root (it has
    `.mcp/chronograph.json`: a project whose memory an n2n client keeps), or, given `imported`,
    an n2n project whose files `chronograph import` brought in (its `.mcp` holds them and
    `imported(its workspace)` says the store holds that workspace: the import writes nothing into
    the project); None if there is none. Given `readable`, a root whose workspace it refuses is
    passed over as if it were none: a caller learns nothing of a project it may not read, not even
    that the folder is one."""
    start = Path(os.path.realpath(path))
    for folder in (start, *start.parents):
        mcp = folder / ".mcp"
        if (mcp / MARKER_FILE).is_file() and (readable is None or readable(workspace_name(folder))):
            return folder
        if imported is not None and ((mcp / MEMORY_FILE).is_file() or (mcp / CONTEXT_FILE).is_file()) \
                and imported(workspace_name(folder)):
            return folder
    return None


def project_workspace(tool: str, project_path: str, confirmed: str | None = None) -> str:
    """The workspace of the project at `project_path`, adopting a new root when `confirmed` names it.

    Raises:
        AwaitingConfirmationError: A recognised root without `.mcp`, not confirmed.
    """
    root = project_root(tool, project_path)
    workspace = workspace_name(root)
    mcp = root / ".mcp"
    if mcp.is_symlink() or (os.path.lexists(mcp) and not mcp.is_dir()):
        raise InvalidArgumentsError(tool, f"projectPath: {mcp} is a symbolic link or not a folder; Chronograph "
                                    "writes a project's files only inside it, never through a link (remove it and "
                                    "call again)")
    if not mcp.is_dir():
        if confirmed is None or os.path.realpath(confirmed) != str(root):
            raise AwaitingConfirmationError(str(root))
        mcp.mkdir(exist_ok=True)
    marker = mcp / MARKER_FILE
    if not os.path.lexists(marker):
        data = json.dumps({"workspace": workspace, "store": "chronograph"}) + "\n"
        try:  # the guarded writer: a random temporary name, created exclusively, never a planted link
            write_file(marker, data.encode("utf-8"), within=root)
        except WriteRefused as error:
            if error.reason != "exists":  # another call wrote it meanwhile: fine
                raise InvalidArgumentsError(tool, f"projectPath: cannot write {marker}: {error}") from None
    return workspace
