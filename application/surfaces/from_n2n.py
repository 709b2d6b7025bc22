"""n2n-memory's project folder as records of the import (`--from n2n`).

n2n keeps a project's graph in `<project>/.mcp/memory.json` (`{entities, relations}`) and its
hot context in `.mcp/context.json` (`activeTask`, `status`, `reason`, `nextSteps`,
`lastCommit`). Importing the project folder (or its `.mcp` folder) brings both into the
workspace the `n2n` profile serves that project from (`projectroot.workspace_name`, from the
root's real path), whatever `--workspace` says, so that the profile finds them where n2n kept
them. The files are read by the project files' own reader (`projectio.read_project_files`:
never through a link, n2n's format checked), so a file the profile would refuse is refused
here too. The import writes nothing into the project (no marker: the first n2n call adopts
it as usual); `chronograph context` and the `recall` prompt find its memory from its folder all
the same, by its n2n files and the workspace the store now holds (`projectroot.adopted_root`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from chronograph.application.lifecycle.sources import Placed, Source, SourceError, provenance, register
from chronograph.application.surfaces.projectfold import CONTEXT_FIELDS, ProjectFileError, fields_of
from chronograph.application.surfaces.projectio import read_project_files
from chronograph.application.surfaces.projectroot import CONTEXT_FILE, MEMORY_FILE, workspace_name

__all__ = ["N2N_PROJECT"]


def _root(path: Path) -> Path:
    """The project root a path names: the folder itself, or the parent of its `.mcp`."""
    real = Path(os.path.realpath(path))
    return real.parent if real.name == ".mcp" else real


def _recognises(path: Path) -> bool:
    mcp = _root(path) / ".mcp"
    return path.is_dir() and any((mcp / name).is_file() for name in (MEMORY_FILE, CONTEXT_FILE))


def read(path: Path, workspace: str) -> Iterator[Placed]:
    """The records of the n2n project at `path`, in its project's workspace, each placed by its
    file and its index there.

    Raises:
        SourceError: If its files cannot be read as n2n's (nothing is written).
    """
    root = _root(path)
    try:
        graph, context = read_project_files(root / ".mcp")
    except (ProjectFileError, OSError) as error:
        raise SourceError(f"{root}: {error}") from None
    if graph is None and context is None:
        raise SourceError(f"{root} holds no .mcp/{MEMORY_FILE} or .mcp/{CONTEXT_FILE}; nothing was written")
    yield "", {"type": "workspace", "name": workspace_name(root)}
    origin = {"importedFrom": provenance(N2N_PROJECT, root)}
    for index, entity in enumerate(graph.entities if graph is not None else []):
        yield f".mcp/{MEMORY_FILE} entities[{index}]", {
            "type": "entity", "name": entity.name, "entityType": entity.entity_type,
            "observations": list(entity.observations), "metadata": origin}
    for index, relation in enumerate(graph.relations if graph is not None else []):
        yield f".mcp/{MEMORY_FILE} relations[{index}]", {
            "type": "relation", "from": relation.source, "to": relation.target, "relationType": relation.relation_type}
    if context is not None:
        fields = {CONTEXT_FIELDS[k]: v for k, v in fields_of(context).items() if v is not None}
        if fields:
            yield f".mcp/{CONTEXT_FILE}", {"type": "context", **fields}


N2N_PROJECT = register(Source("n2n", "n2n-memory's project folder (.mcp/memory.json and context.json)",
                              _recognises, read))
