"""n2n's Markdown export (`n2n_export_markdown`): the project's facts true now, written into a
Markdown file inside its root, entities by name and relations by their ends and type (the
order n2n writes, stable for git diffs).

The file is written as the views are read, from one read snapshot: what is held in memory
is each entity's and relation's sort key, not the graph (the Markdown groups entities under
their type, and the sections past `sink.SPILL` wait in a temporary file). The file takes
its place whole, or not at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import msgspec
from chronograph.application.core.validtime import hide_invalid, read_moment, valid_relation
from chronograph.application.engine.arguments import D
from chronograph.application.engine.exportdir import REFUSALS
from chronograph.application.engine.outputs import ObjectOut, PageEntityOut, entity_out
from chronograph.application.engine.service import Memory
from chronograph.application.engine.sink import Sink
from chronograph.application.errors import InvalidArgumentsError, NotFoundError, StorageError, UnavailableError
from chronograph.application.lifecycle.export import CHUNK, render_into
from chronograph.application.surfaces.n2n import N2N, N2nArgs, Path_, done
from chronograph.eventstore.files import WriteRefused, guarded_file
from msgspec import UNSET

__all__ = ["ExportMarkdown", "n2n_export_markdown", "write_markdown"]

TOOL = "n2n_export_markdown"


class ExportMarkdown(N2nArgs, kw_only=True):
    output_path: Path_ = "KNOWLEDGE_GRAPH.md"
    overwrite: Annotated[bool, D(description="Replace an existing file")] = False


@N2N.query(TOOL, "Export Markdown", "Export the graph to Markdown inside the project root "
           "(outputPath relative to it, default KNOWLEDGE_GRAPH.md)", kind="export")
def n2n_export_markdown(memory: Memory, args: ExportMarkdown) -> ObjectOut:
    ws = args.workspace
    if not memory.project_files:
        raise UnavailableError("This server writes no project files (HTTP without --allow-http-export)")
    project = args.project()  # the one the access check resolved: never projectPath again
    with project.pinned(TOOL) as root:
        inside, name = _inside(root, project.root, args.output_path)
        shown = inside / name
        with ExitStack() as stack:
            try:
                folder = stack.enter_context(project.pinned(TOOL, str(inside)))
            except OSError:
                raise InvalidArgumentsError(TOOL, f"outputPath: the folder {inside} changed while the call ran (it "
                                            "is a symbolic link, or no folder, now); nothing was written") from None
            try:
                with guarded_file(folder / name, overwrite=args.overwrite, flag="overwrite: true",
                                  within=root) as file:
                    write_markdown(memory, ws, project.root.name, Sink(lambda text: file.write(text.encode("utf-8"))))
                    written = file.tell()
            except WriteRefused as error:
                raise InvalidArgumentsError(TOOL, f"outputPath: {shown} "
                                            f"{REFUSALS.get(error.reason, 'cannot be written')}") from None
            except OSError as error:
                raise StorageError(f"cannot write the export {str(shown)!r}: {error.strerror}") from None
    return done(f"Exported the graph to {shown}", "MEMORY_EXPORTED", path=str(shown), bytes=written)


def write_markdown(memory: Memory, workspace: str, title: str, sink: Sink) -> None:
    """Write the facts of `workspace` true now as Markdown titled `title` into `sink` (see the
    module), and close it."""
    now = read_moment(TOOL, UNSET)
    with memory.timeline.at(TOOL, UNSET) as moment:
        graph = moment.graph
        names = sorted((e.name, e.stream) for e in graph.entities(workspace))
        ends = sorted((r.source, r.relation_type, r.target) for r in graph.relations(workspace)
                      if valid_relation(r, now))

        def entities() -> Iterator[dict[str, Any]]:
            for start in range(0, len(names), CHUNK):
                records = [graph.entity_by_stream(stream) for _, stream in names[start:start + CHUNK]]
                present = [r for r in records if r is not None]
                shaped = [entity_out(r, PageEntityOut) for r in present]
                hide_invalid(shaped, present, now)
                yield from msgspec.to_builtins(shaped)

        relations = ({"from": source, "relationType": kind, "to": target} for source, kind, target in ends)
        render_into(sink, "markdown", entities(), relations, None, title)


def _inside(root: Path, real: Path, output_path: str) -> tuple[Path, str]:
    """The folder (relative to the project's root, links resolved) and the name of the Markdown
    file `output_path` names inside the project; `root` reaches the project's folder (see
    `Project.pinned`), `real` is where it is. The file's own name is not resolved (a link there
    is refused by the writer, never followed), and the folder is opened again one step at a time
    without following a link, so one put there since is refused too."""
    if os.path.isabs(output_path) or "\x00" in output_path:
        raise InvalidArgumentsError(TOOL, "outputPath: must be relative to the project root")
    named = Path(output_path)
    if named.name in ("", ".", ".."):
        raise InvalidArgumentsError(TOOL, "outputPath: must name a Markdown file (.md) inside the root")
    folder = Path(os.path.realpath(root / named.parent))
    if folder != real and real not in folder.parents:
        raise InvalidArgumentsError(TOOL, "outputPath: escapes the project root")
    relative = folder.relative_to(real) / named.name
    if any(part.startswith(".") for part in relative.parts) or relative.suffix.lower() not in (".md", ".markdown"):
        raise InvalidArgumentsError(TOOL, "outputPath: must be a Markdown file (.md), not hidden, inside the root")
    if not folder.is_dir():
        raise NotFoundError(f"outputPath: the folder {folder.relative_to(real)} does not exist")
    return relative.parent, named.name
