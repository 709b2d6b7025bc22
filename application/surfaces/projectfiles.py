"""n2n's project files: a project's memory mirrored into `<root>/.mcp/memory.json` and
`.mcp/context.json` in n2n's own format, and folded back from them into the log.

With `--project-files` (or `"projectFiles": true` in the project's `.mcp/chronograph.json`),
every n2n call that changed a project rewrites its two files (sorted, as n2n writes them,
so a team commits them beside the code), and every n2n call first looks whether the files
changed under it since this process last wrote or read them (the first call after a
start, a `git pull`, a checkout). If they did, what they hold that the log does not is
folded into the log in one command whose events are recorded as the actor "project file":
new entities, observations and relations, and a hot context a teammate wrote after ours.
What cannot be folded without overwriting is parked, never dropped: it becomes an
observation of the entity "Project file conflicts" (type CONFLICT), which both clones then
show, until someone resolves it and deletes it (what is parked: see `projectfold`).

Which context is newer is told by lineage, not clocks: `context.json` carries, beside
n2n's fields, the `revision` of the context (a digest of its fields) and the revisions it
descends from (`basedOn`). A file whose revision this log has held is stale; a file based
on our current context is a teammate's next step (taken); anything else was written while
ours changed too (parked). n2n ignores the two extra fields.

The files are rewritten right after each commit (before an erasure's scrub), and what they then
hold is recorded beside the views (`knownprojects`): a file that still holds it is at most behind
the log (a process killed before its mirror), so it is rewritten, never folded back (which would
bring back what the log deleted, or, erased, left no name to tell by). A file changed since is
folded three ways: its lines still as the store wrote them (recorded as keyed digests:
`projectbase`) take the log's state, and only those edited since are folded.

Writes go through `write_project_file`, the one place that writes into a project (atomic:
a temporary file, synced, renamed over the target; never through a symbolic link). The files
read and written are those of the project the call resolved for its grant check, reached
through that folder's descriptor (`Project.pinned`), never through `projectPath` again.
"""

from __future__ import annotations

import json
import os
import re
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import msgspec
from chronograph.application.engine.registry import Tool
from chronograph.application.engine.service import Memory, Written
from chronograph.application.errors import ChronographError, StorageError
from chronograph.application.lifecycle.forgetting import ForgetOut, project_file_note
from chronograph.application.surfaces import knownprojects
from chronograph.application.surfaces.knownprojects import Mirrored
from chronograph.application.surfaces.n2n import N2N, N2nArgs, project_graph
from chronograph.application.surfaces.projectbase import edited, kept, lines
from chronograph.application.surfaces.projectfold import (
    ACTOR,
    CONTEXT_FIELDS,
    FILES,
    ProjectFileError,
    context_values,
    fields_of,
    revision,
)
from chronograph.application.surfaces.projectio import file_json, read_project_file, write_project_file
from chronograph.application.surfaces.projectroot import (
    CONTEXT_FILE,
    MARKER_FILE,
    MEMORY_FILE,
    Project,
    ProjectChangedError,
    resolve_project,
)
from chronograph.eventstore import clock

__all__ = ["ProjectFiles"]

LINEAGE = 32
"""Revisions a context file names as its ancestors."""


def _signature(mcp: Path) -> tuple[Any, ...]:
    """The files' own (links not followed: reading them says what is wrong with one) mtime, size, inode."""
    out: list[Any] = []
    for name in (MEMORY_FILE, CONTEXT_FILE):
        try:
            stat = os.lstat(mcp / name)
            out.append((stat.st_mtime_ns, stat.st_size, stat.st_ino))
        except FileNotFoundError:
            out.append(None)
        except OSError as error:  # .mcp a file, a loop: read, it is refused naming the file
            out.append(error.errno)
    return tuple(out)


def _as_shown(text: str, view: Path | None, real: Path) -> str:
    """`text` with the path `view` (a folder reached through its descriptor) shown as `real`."""
    return text if view is None else re.sub(re.escape(str(view)) + r"(?![0-9])", lambda _: str(real), text)


def _not_mirrored(error: ProjectChangedError) -> StorageError:
    return StorageError(f"The change is in the log, but the project files were not written: {error}")


Rewritten = tuple[Project | None, Mirrored | None, ChronographError | None]
"""A call's mirror: its project (None: none kept), what its files hold (None: unwritten), why not."""


class ProjectFiles:
    """Keeps the projects' `.mcp` files and their workspaces in step, around n2n's calls.

    A call's project is the one its arguments resolved for the access check (`N2nArgs.project`),
    and its files are read and written inside that folder only (`Project.pinned`)."""

    def __init__(self, *, always: bool = False) -> None:
        self.always = always
        """Mirror every project (--project-files); otherwise only those whose marker asks."""
        self._seen: dict[str, tuple[Any, ...]] = {}
        """project root -> the files' signature when this process last wrote or read them"""
        self._markers: dict[str, tuple[tuple[int, int, int], bool]] = {}
        """project root -> (its marker's signature, whether it asks for project files)"""
        self._roots: dict[str, Path] = {}
        """workspace -> the root of the project whose files this process keeps for it"""
        self._early = threading.local()
        """`done`: (the arguments of the call whose commit `committed` mirrored, what it came to)"""
        self._secret: bytes | None = None
        """What the digests of the lines written are keyed with (`knownprojects.secret`), once a
        fold (which may write) has read it: the mirror right after a commit may not write."""
        self._memos: dict[str, dict[tuple[str, ...], list[bytes]]] = {}
        """workspace -> the digests of the lines its last mirror wrote (`projectbase.lines`)"""

    def install(self, memory: Memory) -> None:
        """Keep the projects' files around `memory`'s calls: folded before a call, rewritten
        right after its commit, recorded (and said in a forget's answer) once it is done."""
        memory.before_call.append(self.before)
        memory.after_commit.append(self.committed)
        memory.after_write.append(self.after)

    def enabled(self, project: Project, tool: str = "n2n") -> bool:
        """Whether the files of `project` are kept: the server says so, or the project's marker
        does (read again only when the marker changed).

        Raises:
            ProjectChangedError: If the project's folder is not the one resolved any more.
        """
        if self.always:
            return True
        with project.pinned(tool) as root:
            marker = root / ".mcp" / MARKER_FILE
            try:
                stat = marker.stat()
            except (OSError, ValueError):  # absent, or a path no file can have (NUL): the tool says why
                return False
            key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            known = self._markers.get(str(project.root))
            if known is not None and known[0] == key:
                return known[1]
            try:  # a link, a FIFO or a folder is refused (ProjectFileError), never read
                content = json.loads(read_project_file(marker) or b"null")
            except (OSError, ValueError):
                content = None
        asks = isinstance(content, dict) and content.get("projectFiles") is True
        self._markers[str(project.root)] = (key, asks)
        return asks

    def _project(self, memory: Memory, tool: Tool, args: Any, *, remember: bool = True) -> Project | None:
        if tool.name not in N2N or not isinstance(args, N2nArgs):
            return None
        try:
            project = args.project()  # resolved once, for the access check: never again
            if not self.always and not self.enabled(project, tool.name):  # the common case: the marker's stat
                return None
            args.workspace  # noqa: B018 (adopts a confirmed root, as the tool will)
        except (ProjectFileError, ProjectChangedError):
            raise  # the marker is there but no file to read, or the folder is not the one checked
        except ChronographError:
            return None  # the tool itself reports it
        if remember and self._roots.get(project.workspace) != project.root:  # once a process, for the next ones
            knownprojects.remember(memory, project.workspace, project.root)
        self._roots[project.workspace] = project.root
        return project

    def _known(self, memory: Memory, tool: Tool, workspace: str) -> Project | None:
        """The project whose files are kept for `workspace`, as it is now: its root as this process
        or an earlier one on this machine met it (`knownprojects`), resolved again from its real
        path, and only if that is still the project of `workspace` (not moved, no link put on its
        path) and its files are still kept (the server's flag, or the project's marker).

        Raises:
            ProjectChangedError: If the folder changed while its marker was read.
        """
        if not workspace.startswith("n2n:"):  # no project's (`projectroot.workspace_name`): no look-up per write
            return None
        root = self._roots.get(workspace) or knownprojects.recall(memory, workspace)
        if root is None:
            return None
        try:
            project = resolve_project(tool.name, str(root))
        except ChronographError:
            project = None
        if project is None or project.workspace != workspace:
            self._roots.pop(workspace, None)  # the folder at that path is no longer this workspace's project
            return None
        if not self.always and not self.enabled(project, tool.name):
            return None
        self._roots[workspace] = project.root
        return project

    def before(self, memory: Memory, tool: Tool, args: Any) -> None:
        """Fold the project's files into the log if they changed since this process last saw them:
        an n2n call's project, or that of the workspace another write names (`_known`: its files
        are rewritten after it, and would lose what they gained; a file that cannot be folded
        does not refuse that write). Files as this store last wrote them (`knownprojects.mirrored`)
        are at most behind the log: they are rewritten, not folded; of files changed since, only
        the lines changed since are folded (`projectbase`, where the store recorded them).

        Raises:
            ProjectFileError: If a file of an n2n call's project is not n2n's JSON (a merge
                conflict left in it, say).
            ProjectChangedError: If the project's folder is not the one the call resolved any more.
        """
        project = self._project(memory, tool, args)
        if project is not None:
            self._fold(memory, project, tool.name)
        elif tool.writes and tool.name not in FILES and isinstance(workspace := getattr(args, "workspace", None), str):
            with suppress(ChronographError):
                if (project := self._known(memory, tool, workspace)) is not None:
                    self._fold(memory, project, tool.name)

    def _fold(self, memory: Memory, project: Project, tool: str) -> None:
        key, workspace = str(project.root), project.workspace
        self._secret = self._secret or knownprojects.secret(memory)
        # one fold at a time, and no mirror between reading the files and folding them
        with memory.lock, project.pinned(tool) as root:
            mcp = root / ".mcp"
            if self._seen.get(key) == _signature(mcp):
                return
            graph, context = read_project_file(mcp / MEMORY_FILE), read_project_file(mcp / CONTEXT_FILE)
            ours = knownprojects.mirrored(memory, workspace)
            if ours is not None:  # as this store wrote them: nothing the log did not hold
                graph = None if Mirrored.of(graph) == ours.graph else graph
                context = None if Mirrored.of(context) == ours.context else context
            graph, context = file_json(mcp / MEMORY_FILE, graph), file_json(mcp / CONTEXT_FILE, context)
            if ours is not None and ours.lines is not None and self._secret is not None:
                graph = edited(graph, ours.lines, self._secret)  # a line as written takes the log's state
            if graph is not None or context is not None:
                if not isinstance(graph or {}, dict) or not isinstance(context or {}, dict):
                    raise ProjectFileError("A project file in .mcp is not a JSON object; nothing was folded")
                memory.write(FILES["fold_project_files"], {"workspace": workspace, "graph": graph or {},
                                                           "context": context}, actor=ACTOR)
            try:
                files = self._mirror(memory, project, root, tool)
            except StorageError:  # the call goes on (a read, a delete that brings the files back under
                self._seen[key] = _signature(mcp)  # their cap); the next write's mirror says why
            else:
                knownprojects.wrote(memory, workspace, files)

    def committed(self, memory: Memory, tool: Tool, args: Any, written: Written) -> None:
        """Rewrite the files of the project a call changed right after its commit, before what the
        command does then (an erasure's scrub, which may wait seconds for readers), so that a
        process killed meanwhile leaves less behind. It writes nothing to the store (an erasure's
        pages are not scrubbed yet) and raises nothing: `after` records the files and says what
        went wrong."""
        if written.changed:
            self._early.done = (args, self._rewrite(memory, tool, args, remember=False))

    def _rewrite(self, memory: Memory, tool: Tool, args: Any, *, remember: bool = True) -> Rewritten:
        """Mirror the project of a call that changed it: an n2n call's, or that of any other call's
        workspace whose project's files are kept (`_known`)."""
        project = None
        try:
            project = self._project(memory, tool, args, remember=remember)
            if project is None and isinstance(workspace := getattr(args, "workspace", None), str):
                project = self._known(memory, tool, workspace)
            return project, None if project is None else self.mirror(memory, project, tool.name), None
        except ChronographError as error:
            return project, None, error

    def after(self, memory: Memory, tool: Tool, args: Any, written: Written) -> Written | None:
        """Finish the mirror of a call that changed a project (`committed` wrote its files, or this
        writes them now): an n2n call, or any other on the workspace of a project whose files are
        kept (`_known`; a forget above all: the files would give back what it erased). What the
        files hold is recorded (`knownprojects.wrote`). A forget's answer carries a note on the
        project's file (`project_file_note`): it goes once the file is rewritten, and says why
        where it could not be (what is recorded of the files then keeps nothing of what was
        erased: `_unwritten`); the answer so completed is returned.

        Raises:
            StorageError: If the files of a call other than a forget cannot be written (the change
                itself is in the log).
        """
        if not written.changed:
            return None
        early, self._early.done = getattr(self._early, "done", None), None
        if early is not None and early[0] is args:  # mirrored right after the commit
            project, files, error = early[1]
        else:
            project, files, error = self._rewrite(memory, tool, args)
        forgot = written.output if isinstance(written.output, ForgetOut) else None
        if project is not None and files is not None:
            knownprojects.wrote(memory, project.workspace, files)
        elif forgot is not None:
            self._unwritten(memory, args.workspace)
        note = "" if forgot is None else project_file_note(args.workspace)
        if error is not None:
            if forgot is not None and note:  # the erasure is done and answered: the answer says what is left, and why
                said = [f"{n}. This store keeps the project's files, but could not rewrite them: {error}"
                        if n == note else n for n in forgot.elsewhere]
                return msgspec.structs.replace(written, output=msgspec.structs.replace(forgot, elsewhere=said))
            if isinstance(error, ProjectChangedError):
                raise _not_mirrored(error) from None
            raise error
        if forgot is None or not note or project is None:
            return None
        return msgspec.structs.replace(written, output=msgspec.structs.replace(
            forgot, elsewhere=[n for n in forgot.elsewhere if n != note],
            message=f"{forgot.message}; {project.root / '.mcp' / MEMORY_FILE} rewritten without it"))

    def _unwritten(self, memory: Memory, workspace: str) -> None:
        """After a forget that left the workspace's project files as they were: what is recorded of
        their lines keeps those of live entities only, so nothing of what was erased (a file
        changed since then folds it back, as the forget's note says)."""
        ours = knownprojects.mirrored(memory, workspace)
        if ours is None or ours.lines is None:
            return
        self._secret = self._secret or knownprojects.secret(memory)
        if self._secret is None:
            return
        erasures = knownprojects.erasures(memory)
        names = [entity["name"] for entity in project_graph(memory, workspace)["entities"]]
        knownprojects.wrote(memory, workspace, msgspec.structs.replace(
            ours, lines=kept(ours.lines, names, self._secret), erasures=erasures))

    def mirror(self, memory: Memory, project: Project, tool: str = "n2n") -> Mirrored:
        """Write the project's graph and hot context into its `.mcp` files, in n2n's format; return
        what they hold now (for `knownprojects.wrote`, once no erasure awaits its scrub).

        Holding the store's lock throughout, so that two calls' mirrors cannot land out of order.

        Raises:
            StorageError: If the files cannot be written, or the project's folder is not the one
                resolved any more (the change itself is in the log).
        """
        with memory.lock:
            try:
                with project.pinned(tool) as root:
                    return self._mirror(memory, project, root, tool)
            except ProjectChangedError as error:
                raise _not_mirrored(error) from None

    def _mirror(self, memory: Memory, project: Project, root: Path, tool: str) -> Mirrored:
        """Write the files into `root`, the project's folder as `Project.pinned` reaches it; return
        what they hold now."""
        workspace = project.workspace
        erasures = knownprojects.erasures(memory)  # before the graph: one erased meanwhile is in its lines
        graph = project_graph(memory, workspace)
        entities = [{"name": e["name"], "entityType": e["entityType"], "observations": sorted(e["observations"])}
                    for e in graph["entities"]]
        relations = sorted(({"from": r["from"], "to": r["to"], "relationType": r["relationType"]}
                            for r in graph["relations"]), key=lambda r: (r["from"], r["to"], r["relationType"]))
        shown, mcp = project.root / ".mcp", None
        written = {"entities": entities, "relations": relations}
        text = json.dumps(written, indent=2, ensure_ascii=False) + "\n"
        context = self._context(memory, workspace)
        hot = None if context is None else json.dumps(context, indent=2, ensure_ascii=False) + "\n"
        try:
            with project.pinned(tool, ".mcp") as mcp:  # the folder itself, never a link put there since
                write_project_file(mcp / MEMORY_FILE, text, root=root)
                if hot is not None:
                    write_project_file(mcp / CONTEXT_FILE, hot, root=root)
        except OSError as error:
            said = _as_shown(_as_shown(str(error), mcp, shown), root, project.root)
            raise StorageError(f"The change is in the log, but the project files in {shown} could not be written: "
                               f"{said}. The next call tries again") from None
        self._seen[str(project.root)] = _signature(root / ".mcp")
        memo = self._memos.setdefault(workspace, {})
        return Mirrored(Mirrored.of(text.encode("utf-8")), None if hot is None else Mirrored.of(hot.encode("utf-8")),
                        None if self._secret is None else lines(written, self._secret, memo), erasures)

    def _context(self, memory: Memory, workspace: str) -> dict[str, Any] | None:
        with memory.lock, memory.timeline.at("mirror") as moment:
            record = moment.graph.context(workspace)
            if record is None:
                return None
            history = [dict.fromkeys(CONTEXT_FIELDS), *context_values(moment.log, workspace)][:-1]
            ancestors = [revision(values) for values in history]
        fields = fields_of(record)
        out = {CONTEXT_FIELDS[k]: v for k, v in fields.items() if v is not None}
        out.setdefault("status", "PLANNING")
        out.setdefault("nextSteps", [])
        out["updatedAt"] = clock.isoformat(record.updated_at)
        out["revision"] = revision(fields)
        out["basedOn"] = list(dict.fromkeys(reversed(ancestors)))[:LINEAGE]
        return out
