"""Exporting a graph: the official JSONL file, JSON, Markdown, Mermaid and Graphviz DOT.

Every format escapes names, so any name renders: quotes, brackets, newlines, pipes.

An export is written a piece at a time into a `Sink`, from the records as the views yield
them: a file (or stdout) receives the text as it is made, so an export of a million entities
holds no more than a page of it; an answer holds its text and stops as soon as it passes
the reply limit, so a refusal costs what the limit allows, not the whole graph. Markdown,
grouped by type, is written once every entity is read: what passes `sink.SPILL` characters of it
waits in a temporary file.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any, Literal

import msgspec
from chronograph.application.core.context import context_out
from chronograph.application.engine.access import caller
from chronograph.application.engine.arguments import AsOf, D, ReadArgs
from chronograph.application.engine.budget import CHAR
from chronograph.application.engine.exportdir import ExportRefused
from chronograph.application.engine.outputs import AS_OF_POSITION, Out, entity_out, relation_out
from chronograph.application.engine.principal import LOCAL_PRINCIPAL
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.application.engine.sink import Overflow, Sink, json_list
from chronograph.application.errors import InvalidArgumentsError, ReplyTooLargeError, StorageError
from chronograph.eventstore.lmdb import resident
from msgspec import UNSET, Meta, UnsetType

__all__ = [
    "FORMATS", "ExportGraph", "ExportOut", "Format", "Overflow", "Sink", "checked", "export", "jsonl_line", "render",
    "render_into",
]

Format = Literal["jsonl", "json", "markdown", "mermaid", "dot"]
FORMATS: tuple[Format, ...] = ("jsonl", "json", "markdown", "mermaid", "dot")

CONTEXT_FIELDS = ("activeTask", "status", "reason", "nextSteps", "lastCommit")
"""The context's fields an export carries (as update_context takes them)."""

Graph = dict[str, Any]
"""A read_graph answer as plain data: {"entities": [...], "relations": [...]}."""
MAPPED = 64 << 20
"""The store pages a file export keeps resident while it reads the entities, in key order (see `resident`;
checked every `TICK`). Relations are read in creation order from a table keyed otherwise, at random:
their pages stay (given back, they were read again at a cost of 15-45% of the export's time)."""
TICK = 4096
CHUNK = 256
"""Records converted to plain data at a time (a multiple of it is `TICK`)."""
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_INDENTED = json.JSONEncoder(ensure_ascii=False, indent=2)
_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})
"""Characters JSON leaves raw in a string that readers splitting lines at every Unicode break
(Python's `str.splitlines`) take for a line's end: escaped in a JSONL line, read back alike."""


_DOT = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "&": "&amp;"})
"""A DOT string's escapes (& too: Graphviz reads entities in a label)."""


def jsonl_line(record: Any) -> str:
    """`record` as one line of a JSONL file (compact, non-ASCII as itself but for `_BREAKS`)."""
    line = _COMPACT.encode(record)
    if "\u2028" in line or "\u2029" in line or "\x85" in line:  # rare: looking costs 1/40 of translating
        line = line.translate(_BREAKS)
    return line
STAGES = ("entities", "relations")
Progress = Callable[[str, int, int], None]
Renderer = Callable[[Iterable[dict[str, Any]], Iterable[dict[str, Any]], dict[str, Any] | None, str, Sink], None]


def render(graph: Graph, fmt: Format, workspace: str = "default") -> str:
    """`graph` in format `fmt`."""
    sink = Sink()
    _RENDERERS[fmt](graph["entities"], graph["relations"], graph.get("context"), workspace, sink)
    return sink.text()


def render_into(sink: Sink, fmt: Format, entities: Iterable[dict[str, Any]], relations: Iterable[dict[str, Any]],
                context: dict[str, Any] | None = None, workspace: str = "default") -> None:
    """Write the graph of `entities` and `relations` (plain data, each iterated once, as lazily as
    they come) in `fmt` into `sink`, and close it; if that fails, what the sink held is dropped.

    Raises:
        Overflow: If `sink` passes its limit.
    """
    try:
        _RENDERERS[fmt](entities, relations, context, workspace, sink)
    except BaseException:
        sink.discard()
        raise
    sink.close()


def _jsonl(entities: Iterable[dict[str, Any]], relations: Iterable[dict[str, Any]], context: dict[str, Any] | None,
           workspace: str, out: Sink) -> None:
    """The official server's memory.jsonl: entities, then relations, one compact object per line.

    What the official format has no field for rides along where it exists (an entity's
    metadata, a relation's confidence and metadata, a last line with the workspace's
    context), so that an import brings it back; the official server ignores it.
    """
    gap = ""
    for e in entities:
        entity = {"type": "entity", "name": e["name"], "entityType": e["entityType"], "observations": e["observations"]}
        entity.update((key, e[key]) for key in ("metadata", "validity") if e.get(key))
        out(gap + jsonl_line(entity))
        gap = "\n"
    for r in relations:
        relation = {"type": "relation", "from": r["from"], "to": r["to"], "relationType": r["relationType"]}
        relation.update((key, r[key]) for key in ("confidence", "metadata", "validFrom", "validUntil")
                        if r.get(key) not in (None, {}))
        out(gap + jsonl_line(relation))
        gap = "\n"
    if context:
        out(gap + jsonl_line({"type": "context", **context}))


def _json(entities: Iterable[dict[str, Any]], relations: Iterable[dict[str, Any]], context: dict[str, Any] | None,
          workspace: str, out: Sink) -> None:
    """`json.dumps({"entities", "relations"[, "context"]}, indent=2)`, an item at a time."""
    out("{")
    for key, items in (("entities", entities), ("relations", relations)):
        out(("\n" if key == "entities" else ",\n") + f'  "{key}": ')
        json_list(out, items, "  ")
    if context:
        out(',\n  "context": ' + _INDENTED.encode(context).replace("\n", "\n  "))
    out("\n}")


def _markdown(entities: Iterable[dict[str, Any]], relations: Iterable[dict[str, Any]],
              context: dict[str, Any] | None, workspace: str, out: Sink) -> None:
    def md(text: str) -> str:
        escaped = "".join("\\" + c if c in "\\`*_{}[]<>()#+-.!|&" else c for c in text)  # &: no entity
        return " ".join(escaped.split())  # a newline would end the bullet

    types: set[str] = set()
    counted = related = 0
    for entity in entities:  # under its type's heading, made in the type's section
        entity_type = entity["entityType"]
        if entity_type not in types:
            types.add(entity_type)
            out(f"## {md(entity_type)}\n\n", (1, entity_type))
        lines = [f"### {md(entity['name'])}"]
        lines += [f"- {md(o)}" for o in entity["observations"]] or ["- *(no observations)*"]
        out("\n".join(lines) + "\n\n", (1, entity_type))
        counted += 1
    out("## Relations\n\n", (2, ""))
    for r in relations:
        out(f"- **{md(r['from'])}** {md(r['relationType'])} **{md(r['to'])}**\n", (2, ""))
        related += 1
    if not related:
        out("*(none)*\n", (2, ""))
    out(f"# Knowledge graph: {md(workspace)}\n\n{counted} entities, {related} relations.\n\n")


def _mermaid(entities: Iterable[dict[str, Any]], relations: Iterable[dict[str, Any]],
             context: dict[str, Any] | None, workspace: str, out: Sink) -> None:
    def label(text: str) -> str:
        entities = {"&": "#amp;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", "\n": " ", "|": "#124;",
                    "`": "#96;", "%": "#37;"}  # a backtick opens Markdown text; %% a comment or a directive
        return "".join(entities.get(c, c) for c in text)

    ids: dict[str, str] = {}
    out("graph LR\n")
    for e in entities:
        ids[e["name"]] = node = f"n{len(ids)}"
        out(f'    {node}["{label(e["name"])}<br/><i>{label(e["entityType"])}</i>"]\n')
    for relation in relations:
        for end in (relation["from"], relation["to"]):
            if end not in ids:  # an end outside this graph still gets a node
                ids[end] = f"n{len(ids)}"
                out(f'    {ids[end]}["{label(end)}"]\n')
        out(f'    {ids[relation["from"]]} -->|"{label(relation["relationType"])}"| {ids[relation["to"]]}\n')


def _dot(entities: Iterable[dict[str, Any]], relations: Iterable[dict[str, Any]], context: dict[str, Any] | None,
         workspace: str, out: Sink) -> None:
    def quoted(text: str) -> str:
        return '"' + text.translate(_DOT) + '"'

    out(f"digraph {quoted('memory: ' + workspace)} {{\n    rankdir=LR;\n    node [shape=box];\n")
    for e in entities:
        out(f"    {quoted(e['name'])} [label={quoted(e['name'] + chr(10) + '(' + e['entityType'] + ')')}];\n")
    for r in relations:
        out(f"    {quoted(r['from'])} -> {quoted(r['to'])} [label={quoted(r['relationType'])}];\n")
    out("}\n")


_RENDERERS: dict[str, Renderer] = {
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
    as_of: Annotated[int, AS_OF_POSITION] | UnsetType = UNSET


@CORE.query("export_graph", "Export Graph",
            "Export the graph, now or as of then, as JSONL, JSON, Markdown, Mermaid or Graphviz DOT",
            kind="export")
def export_graph(memory: Memory, args: ExportGraph) -> ExportOut:
    """The graph rendered in `format`, returned, or written inside the export directory."""
    at: list[int] = []  # the position an export as of a moment is of
    if args.output_path is UNSET:
        limit = memory.limit_for(export_graph)
        sink = Sink(limit=None if limit is None else limit // CHAR)  # the reply carries the text twice
        try:
            entities, relations = export(memory, args.workspace, args.format, args.as_of, sink, answered=at.append)
        except Overflow as over:
            assert limit is not None
            raise ReplyTooLargeError("export_graph", over.chars * CHAR, limit, _hint(memory), at_least=True) from None
        content = sink.text()
        return ExportOut(format=args.format, content=content, bytes=len(content.encode()), entities=entities,
                         relations=relations, as_of=at[0] if at else UNSET)
    if memory.export_dir is None:
        raise InvalidArgumentsError(
            "export_graph", "outputPath: this server writes no files; start it with --export-dir DIR "
            "to allow exports into DIR, or leave outputPath out to get the content back")
    try:
        principal = caller()  # another's exports are not this one's to replace, or to learn of
        owner = None if principal.name == LOCAL_PRINCIPAL.name else principal.name
        with memory.export_dir.writing(args.output_path, overwrite=args.overwrite, owner=owner) as file:
            entities, relations = export(memory, args.workspace, args.format, args.as_of, Sink(file.write),
                                         answered=at.append)
    except ExportRefused as error:
        raise InvalidArgumentsError("export_graph", str(error)) from None
    except OSError as error:
        raise StorageError(f"cannot write the export {args.output_path!r}: {error.strerror}") from None
    return ExportOut(format=args.format, path=str(file.path), bytes=file.written, entities=entities,
                     relations=relations, as_of=at[0] if at else UNSET)


def _hint(memory: Memory) -> str:
    """How to have an export too large for a reply: a file, where this server writes them."""
    cli = "chronograph export --format ... -o FILE"
    if memory.export_dir is None:
        return f"Export with the CLI instead: {cli}."
    return (f"Pass outputPath to write it to a file in this server's export directory (up to "
            f"{memory.export_dir.max_export:,} bytes), or export with the CLI: {cli}.")


def checked(memory: Memory, as_of: Any) -> None:
    """Check that `as_of` names a moment an export can be of.

    Raises:
        InvalidArgumentsError: If it is neither a position nor an ISO-8601 time (as export_graph's).
    """
    with memory.timeline.at("export_graph", as_of):
        pass


def export(memory: Memory, workspace: str, fmt: Format, as_of: Any, sink: Sink,
           progress: Progress | None = None, answered: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Write the graph of `workspace` (as of `as_of`, UNSET: now) in `fmt` into `sink`, a record at
    a time from one read snapshot, and close it; how many entities and relations it holds.
    `progress(stage, done, total)` hears of each `CHUNK` read ("entities", then "relations");
    `answered(position)`, with an `as_of`, of the position the export is of (one past the head: the head).

    Raises:
        Overflow: If `sink` passes its limit (what it held is dropped).
        InvalidArgumentsError: If `as_of` is neither a position nor a time.
    """
    checked(memory, as_of)  # a bad asOf is refused as the export's, before anything is written
    counts, bulk = [0, 0], sink.limit is None  # an answer stops at its limit; a file reads every page

    def plain(records: Iterator[Any], shape: Callable[..., Any], kind: int) -> Iterator[dict[str, Any]]:
        """Each record as plain data (whole, timestamps too), converted `CHUNK` at a time (an
        answer, a few at a time: it stops at its limit)."""
        while chunk := list(itertools.islice(records, CHUNK if bulk else 8)):
            counts[kind] += len(chunk)
            if progress is not None:
                progress(STAGES[kind], counts[kind], max(totals[kind], counts[kind]))
            yield from msgspec.to_builtins([shape(record, metadata=True) for record in chunk])
            if bulk and kind == 0 and not counts[kind] % TICK:
                resident.release(MAPPED)  # read in key order, once: the pages behind need not stay

    with memory.timeline.at("export_graph", as_of) as moment:  # every fact, true now or not
        if answered is not None and moment.position is not None:
            answered(moment.position)
        context = context_out(workspace, moment.graph.context(workspace))  # of the same snapshot
        shown = None
        if context.version:
            shown = {key: value for key, value in msgspec.to_builtins(context).items()
                     if key in CONTEXT_FIELDS and value is not None}
        held = moment.graph.workspace(workspace) if progress is not None else None
        totals = (held.entities, held.relations) if held is not None else (0, 0)
        entities = plain(moment.graph.entities(workspace), entity_out, 0)
        relations = plain(moment.graph.relations(workspace), relation_out, 1)
        render_into(sink, fmt, entities, relations, shown, workspace)
    return counts[0], counts[1]
