"""Exporting a graph: the official JSONL file, JSON, Markdown, Mermaid and Graphviz DOT.

Every format escapes names, so any name renders: quotes, brackets, newlines, pipes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import Annotated, Any, Literal

import msgspec
from chronograph.application.core.context import ReadContext, read_context
from chronograph.application.engine.arguments import AsOf, D, ReadArgs
from chronograph.application.engine.exportdir import ExportRefused
from chronograph.application.engine.outputs import Out, entity_out, relation_out
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.application.engine.turns import builtins_in_turns
from chronograph.application.errors import InvalidArgumentsError, StorageError
from msgspec import UNSET, Meta, UnsetType

__all__ = ["FORMATS", "ExportGraph", "ExportOut", "Format", "render"]

Format = Literal["jsonl", "json", "markdown", "mermaid", "dot"]
FORMATS: tuple[Format, ...] = ("jsonl", "json", "markdown", "mermaid", "dot")

CONTEXT_FIELDS = ("activeTask", "status", "reason", "nextSteps", "lastCommit")
"""The context's fields an export carries (as update_context takes them)."""

Graph = dict[str, Any]
"""A read_graph answer as plain data: {"entities": [...], "relations": [...]}."""


def render(graph: Graph, fmt: Format, workspace: str = "default") -> str:
    """`graph` in format `fmt`."""
    return _RENDERERS[fmt](graph, workspace)


def _jsonl(graph: Graph, workspace: str) -> str:
    """The official server's memory.jsonl: entities, then relations, one compact object per line.

    What the official format has no field for rides along where it exists (an entity's
    metadata, a relation's confidence and metadata, a last line with the workspace's
    context), so that an import brings it back; the official server ignores it.
    """
    def line(record: dict[str, Any]) -> str:
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"))

    lines = []
    for e in graph["entities"]:
        entity = {"type": "entity", "name": e["name"], "entityType": e["entityType"], "observations": e["observations"]}
        entity.update((key, e[key]) for key in ("metadata", "validity") if e.get(key))
        lines.append(line(entity))
    for r in graph["relations"]:
        relation = {"type": "relation", "from": r["from"], "to": r["to"], "relationType": r["relationType"]}
        relation.update((key, r[key]) for key in ("confidence", "metadata", "validFrom", "validUntil")
                        if r.get(key) not in (None, {}))
        lines.append(line(relation))
    if graph.get("context"):
        lines.append(line({"type": "context", **graph["context"]}))
    return "\n".join(lines)


def _json(graph: Graph, workspace: str) -> str:
    document = {"entities": graph["entities"], "relations": graph["relations"]}
    if graph.get("context"):
        document["context"] = graph["context"]
    return json.dumps(document, indent=2, ensure_ascii=False)


def _markdown(graph: Graph, workspace: str) -> str:
    def md(text: str) -> str:
        escaped = "".join("\\" + c if c in "\\`*_{}[]<>()#+-.!|" else c for c in text)
        return " ".join(escaped.split())  # a newline would end the bullet

    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entity in graph["entities"]:
        by_type[entity["entityType"]].append(entity)
    out = [f"# Knowledge graph: {md(workspace)}", "",
           f"{len(graph['entities'])} entities, {len(graph['relations'])} relations.", ""]
    for entity_type in sorted(by_type):
        out += [f"## {md(entity_type)}", ""]
        for entity in by_type[entity_type]:
            out.append(f"### {md(entity['name'])}")
            out += [f"- {md(o)}" for o in entity["observations"]] or ["- *(no observations)*"]
            out.append("")
    out += ["## Relations", ""]
    out += [f"- **{md(r['from'])}** {md(r['relationType'])} **{md(r['to'])}**" for r in graph["relations"]]
    if not graph["relations"]:
        out.append("*(none)*")
    return "\n".join(out) + "\n"


def _mermaid(graph: Graph, workspace: str) -> str:
    def label(text: str) -> str:
        entities = {"&": "#amp;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", "\n": " ", "|": "#124;"}
        return "".join(entities.get(c, c) for c in text)

    ids = {e["name"]: f"n{i}" for i, e in enumerate(graph["entities"])}
    out = ["graph LR"]
    out += [f'    {ids[e["name"]]}["{label(e["name"])}<br/><i>{label(e["entityType"])}</i>"]'
            for e in graph["entities"]]
    for relation in graph["relations"]:
        for end in (relation["from"], relation["to"]):
            if end not in ids:  # an end outside this graph still gets a node
                ids[end] = f"n{len(ids)}"
                out.append(f'    {ids[end]}["{label(end)}"]')
        out.append(f'    {ids[relation["from"]]} -->|"{label(relation["relationType"])}"| {ids[relation["to"]]}')
    return "\n".join(out) + "\n"


def _dot(graph: Graph, workspace: str) -> str:
    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    out = [f"digraph {quoted('memory: ' + workspace)} {{", "    rankdir=LR;", "    node [shape=box];"]
    out += [f"    {quoted(e['name'])} [label={quoted(e['name'] + chr(10) + '(' + e['entityType'] + ')')}];"
            for e in graph["entities"]]
    out += [f"    {quoted(r['from'])} -> {quoted(r['to'])} [label={quoted(r['relationType'])}];"
            for r in graph["relations"]]
    out.append("}")
    return "\n".join(out) + "\n"


_RENDERERS: dict[str, Callable[[Graph, str], str]] = {
    "jsonl": _jsonl, "json": _json, "markdown": _markdown, "mermaid": _mermaid, "dot": _dot,
}


class ExportGraph(ReadArgs, kw_only=True):
    format: Annotated[Format, D(
        description="jsonl is the official memory.jsonl; mermaid and dot are drawings")]
    as_of: AsOf | UnsetType = UNSET
    output_path: Annotated[str, Meta(min_length=1, max_length=1024), D(
        description="Write to this file in the server's --export-dir instead")] | UnsetType = (
        UNSET
    )
    overwrite: Annotated[bool, D(description="Replace an existing file")] = False


class ExportOut(Out, kw_only=True):
    format: str
    entities: int
    relations: int
    content: Annotated[str, D(description="The export (unless written to outputPath)")] | UnsetType = UNSET
    path: Annotated[str, D(description="Where the export was written")] | UnsetType = UNSET
    bytes: int


@CORE.query("export_graph", "Export Graph",
            "Export the graph, now or as of then, as JSONL, JSON, Markdown, Mermaid or Graphviz DOT",
            kind="export")
def export_graph(memory: Memory, args: ExportGraph) -> ExportOut:
    """The graph rendered in `format`, returned, or written inside the export directory."""
    with memory.timeline.at("export_graph", args.as_of) as moment:  # every fact, true now or not
        graph: dict[str, Any] = {  # whole records, timestamps too, made in turns (see turns.py)
            "entities": builtins_in_turns([
                entity_out(e, metadata=True) for e in moment.graph.entities(args.workspace)]),
            "relations": builtins_in_turns([
                relation_out(r, metadata=True) for r in moment.graph.relations(args.workspace)])}
    context = read_context(memory, ReadContext(workspace=args.workspace, as_of=args.as_of))
    if context.version:
        graph["context"] = {key: value for key, value in msgspec.to_builtins(context).items()
                            if key in CONTEXT_FIELDS and value is not None}
    content = render(graph, args.format, args.workspace)
    size = len(content.encode())
    entities, relations = len(graph["entities"]), len(graph["relations"])
    if args.output_path is UNSET:
        return ExportOut(format=args.format, content=content, bytes=size, entities=entities, relations=relations)
    if memory.export_dir is None:
        raise InvalidArgumentsError(
            "export_graph", "outputPath: this server writes no files; start it with --export-dir DIR "
            "to allow exports into DIR, or leave outputPath out to get the content back")
    try:
        target, written = memory.export_dir.write(args.output_path, content, overwrite=args.overwrite)
    except ExportRefused as error:
        raise InvalidArgumentsError("export_graph", str(error)) from None
    except OSError as error:
        raise StorageError(f"cannot write the export {args.output_path!r}: {error.strerror}") from None
    return ExportOut(format=args.format, path=str(target), bytes=written, entities=entities, relations=relations)
