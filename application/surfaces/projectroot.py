"""Projects found from a path, as n2n-memory finds them: `projectPath` names the root of a
project (never a parent is searched), recognised by a strong marker; a root without `.mcp`
is adopted only when the client confirms it (`confirmNewProjectRoot`), and then gets one.

A project's memory is a workspace named after its root (`n2n:<folder>:<digest of the real
path>`), so every project on the machine shares the one store and log, isolated from the
others, with history, time travel and audit.

A call resolves its `projectPath` once (`resolve_project`: the real path, and which folder
that was, its device and inode); the grant is checked on that project's workspace, and
everything the call reads or writes inside the project goes through `Project.pinned`, which
opens the folder again without following a link, refuses it unless it is the same folder at
the same place, and hands a path that reaches it through the open descriptor: a link flipped,
or the folder or one above it swapped, after the check sends nothing elsewhere.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from chronograph.application.errors import ChronographError, InvalidArgumentsError, NotFoundError
from chronograph.eventstore.files import WriteRefused, store_of, write_file
from chronograph.eventstore.keys import digest

__all__ = ["CONTEXT_FILE", "MEMORY_FILE", "STRONG_MARKERS", "AwaitingConfirmationError", "Project",
           "ProjectChangedError", "adopt", "adopted_root", "project_workspace", "resolve_project", "workspace_name"]

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


class ProjectChangedError(ChronographError):
    """The project folder a call resolved is no longer the folder at its path: nothing was read or written."""

    code = "conflict"

    def __init__(self, tool: str, root: Path) -> None:
        super().__init__(
            f"{tool}: the project folder {root} changed while the call ran (it, or a folder above it, was moved, "
            "replaced or made a symbolic link after projectPath was resolved); nothing was read or written in it. "
            "Call again once the project stays where it is"
        )


_FOLDER = (getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_CLOEXEC", 0)
           | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
"""How a project's folder is opened: without following a link there, and (on Linux) without
needing to read it, only to reach what is inside (the flags a system lacks are read as none, so
that importing this never fails)."""


@dataclass(frozen=True)
class Project:
    """A project root as one call resolved it: its real path and which folder that was (device,
    inode). The call's workspace is this project's, and whatever it reads or writes inside the
    project goes through `pinned`, never through `projectPath` again."""

    root: Path
    identity: tuple[int, int]

    @property
    def workspace(self) -> str:
        """The workspace of the project's memory."""
        return workspace_name(self.root)

    @contextmanager
    def pinned(self, tool: str, inside: str = "") -> Iterator[Path]:
        """A path to the project's folder (or to its folder `inside`, each step opened without
        following a link) that reaches the folder resolved, for as long as the block runs: on
        Linux through the open descriptor (`/proc/self/fd/<n>`), so that nothing swapped after
        this check can send a read or a write elsewhere; elsewhere the real path, checked.

        Raises:
            ProjectChangedError: If the folder at the project's path is not the one resolved (a link
                there or above it now, another folder, gone).
            OSError: If a folder of `inside` is missing, a link or not a folder.
        """
        with ExitStack() as opened:
            try:
                fd = _open_folder(tool, self.root)
            except OSError:
                raise ProjectChangedError(tool, self.root) from None
            opened.callback(os.close, fd)
            found = os.fstat(fd)
            if (found.st_dev, found.st_ino) != self.identity:
                raise ProjectChangedError(tool, self.root)
            for part in Path(inside).parts:
                if part in ("..", os.sep):
                    raise ValueError(f"{inside!r} is not a folder inside the project")
                try:
                    fd = os.open(part, _FOLDER, dir_fd=fd)
                except OSError as error:
                    what = "does not exist" if error.errno == errno.ENOENT else "is a symbolic link or not a folder"
                    raise OSError(error.errno, f"{inside} {what} (in {self.root})") from None
                opened.callback(os.close, fd)
            yield _through(fd) or self.root / inside


def _open_folder(tool: str, real: Path) -> int:
    """The folder at the real path `real`, opened without following a link at it, and checked
    (where the kernel says where an open folder is) to be there, not behind a folder above it
    swapped for a link since `real` was resolved.

    Raises:
        ProjectChangedError: If there is a link at `real`, or above it.
        OSError: If there is no folder at `real`.
    """
    try:
        fd = os.open(real, _FOLDER)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ProjectChangedError(tool, real) from None
        raise
    if _plain(_where(fd, real)) != _plain(str(real)):
        os.close(fd)
        raise ProjectChangedError(tool, real)
    return fd


def _where(fd: int, real: Path) -> str:
    """Where the folder open as `fd` is: the kernel's answer (Linux), or else where `real` leads
    now if it leads to that folder (a narrower check: the identity is compared besides)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    try:
        return os.path.realpath(real) if os.path.samestat(os.stat(real), os.fstat(fd)) else ""
    except OSError:
        return ""


def _plain(path: str) -> str:
    """`path` with the leading `//` POSIX lets `realpath` keep (the kernel never says it) as `/`."""
    return "/" + path.lstrip("/") if path.startswith("/") else path


def _through(fd: int) -> Path | None:
    """A path that reaches the folder open as `fd` through the descriptor itself (Linux's
    `/proc/self/fd`: the kernel follows the descriptor, not a name), or None where there is none."""
    view = f"/proc/self/fd/{fd}"
    try:
        return Path(view) if os.path.samestat(os.stat(view), os.fstat(fd)) else None
    except OSError:
        return None


def resolve_project(tool: str, project_path: str) -> Project:
    """The project root `project_path` names, resolved and checked: once per call (`N2nArgs.project`).

    Raises:
        InvalidArgumentsError: A relative path, NUL or `..` in it, a folder inside a store, or a
            folder that is no project root.
        NotFoundError: A path that does not exist or is not a folder.
        ProjectChangedError: A link put at the real path, or above it, while it was resolved.
    """
    if "\x00" in project_path:
        raise InvalidArgumentsError(tool, "projectPath: must not contain NUL characters")
    if not os.path.isabs(project_path):
        raise InvalidArgumentsError(tool, f"projectPath: {project_path!r} is not absolute; give the project "
                                    "root's absolute path")
    if ".." in Path(project_path).parts:
        raise InvalidArgumentsError(tool, "projectPath: must not contain '..' (give the root itself)")
    root = Path(os.path.realpath(project_path))
    try:
        fd = _open_folder(tool, root)
    except OSError:
        raise NotFoundError(f"projectPath: {project_path} does not exist or is not a folder") from None
    try:
        found = os.fstat(fd)
        store = store_of(root)
        if store is not None:  # refused before anything is created in it (a `.mcp` beside data.mdb)
            raise InvalidArgumentsError(tool, f"projectPath: {root} lies inside the store at {store} (a folder "
                                        "holding data.mdb); a store is no project, and nothing is written into one")
        if not any(_exists(fd, marker) for marker in STRONG_MARKERS):
            weak = any(_exists(fd, marker) for marker in WEAK_MARKERS)
            what = "only a weak root (a README)" if weak else "no project root"
            raise InvalidArgumentsError(tool, f"projectPath: {root} is {what}; a root has one of "
                                        f"{', '.join(STRONG_MARKERS[:6])}, ... (parents are not searched)")
    finally:
        os.close(fd)
    return Project(root, (found.st_dev, found.st_ino))


def _exists(fd: int, name: str) -> bool:
    """Whether `name` exists in the folder open as `fd` (through a link, as `Path.exists`)."""
    try:
        os.stat(name, dir_fd=fd)
    except (OSError, ValueError):
        return False
    return True


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


def adopt(tool: str, project: Project, confirmed: str | None = None) -> None:
    """Make sure `project` is adopted (its `.mcp` folder and marker), adopting a new root when
    `confirmed` names it; inside the folder resolved (`Project.pinned`).

    Raises:
        AwaitingConfirmationError: A recognised root without `.mcp`, not confirmed.
        InvalidArgumentsError: `.mcp` is a link or not a folder, or the marker cannot be written.
        ProjectChangedError: The folder at the project's path is not the one resolved any more.
    """
    shown = project.root / ".mcp"
    with project.pinned(tool) as root:
        mcp = root / ".mcp"
        if mcp.is_symlink() or (os.path.lexists(mcp) and not mcp.is_dir()):
            raise InvalidArgumentsError(tool, f"projectPath: {shown} is a symbolic link or not a folder; Chronograph "
                                        "writes a project's files only inside it, never through a link (remove it "
                                        "and call again)")
        if not mcp.is_dir():
            if confirmed is None or os.path.realpath(confirmed) != str(project.root):
                raise AwaitingConfirmationError(str(project.root))
            mcp.mkdir(exist_ok=True)
        marker = mcp / MARKER_FILE
        if not os.path.lexists(marker):
            data = json.dumps({"workspace": project.workspace, "store": "chronograph"}) + "\n"
            try:  # the guarded writer: a random temporary name, created exclusively, never a planted link
                write_file(marker, data.encode("utf-8"), within=root)
            except WriteRefused as error:
                if error.reason != "exists":  # another call wrote it meanwhile: fine
                    raise InvalidArgumentsError(tool, f"projectPath: cannot write {shown / MARKER_FILE}: "
                                                f"{str(error).replace(str(root), str(project.root))}") from None


def project_workspace(tool: str, project_path: str, confirmed: str | None = None) -> str:
    """The workspace of the project at `project_path`, adopting a new root when `confirmed` names
    it (resolved here; a call resolves its project once, through `N2nArgs`).

    Raises:
        AwaitingConfirmationError: A recognised root without `.mcp`, not confirmed.
    """
    project = resolve_project(tool, project_path)
    adopt(tool, project, confirmed)
    return project.workspace
