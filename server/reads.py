"""Read tools: each parses its arguments, picks the moment (now, or asOf), and queries."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec
from msgspec import UNSET

from eventstore import clock
from projections import EntityView, WorkspaceIndex
from server import history, insights, queries
from server import more_schemas as m
from server import schemas as s
from server.errors import InvalidArgumentsError
from server.export import render, safe_output_path
from server.timeline import Moment

if TYPE_CHECKING:
    from server.memory import Memory

__all__ = ["READS", "Read"]


class Read(NamedTuple):
    """A read tool: how its arguments parse and how it answers."""

    arguments: type[Any]
    run: Callable[[Memory, Any], Any]


def _read_graph(memory: Memory, args: s.ReadGraph) -> s.GraphPageOut:
    with memory.timeline.at("read_graph", args.as_of) as moment:
        return queries.read_graph(moment.graph, args, moment.position)


def _search_nodes(memory: Memory, args: s.SearchNodes) -> s.GraphOut:
    with memory.timeline.at("search_nodes", args.as_of) as moment:
        if args.ranked:
            return _ranked(memory, moment, args)
        return queries.search_nodes(moment.graph, args.workspace, args.query,
                                    None if moment.is_past else _indexed(memory, moment), moment.position)


def _ranked(memory: Memory, moment: Moment, args: s.SearchNodes) -> s.GraphOut:
    if moment.is_past:  # no standing index for the past: one for this question
        index = WorkspaceIndex(args.workspace)
        for record in moment.graph.entities(args.workspace):
            index.put(record)
    else:
        index = memory.views.search_index(moment.live, args.workspace)
    ranked = index.ranked(args.query, args.limit)
    found = [(r, score) for stream, score in ranked if (r := moment.graph.entity_by_stream(stream))]
    out = queries.graph_out(moment.graph, args.workspace, [r for r, _ in found], moment.position)
    return msgspec.structs.replace(out, scores=[round(score, 6) for _, score in found])


def _indexed(memory: Memory, moment: Moment) -> queries.Search:
    def search(workspace: str, query: str) -> list[EntityView]:
        index = memory.views.search_index(moment.live, workspace)
        return [r for stream in index.substring(query) if (r := moment.live.entity_by_stream(stream))]

    return search


def _open_nodes(memory: Memory, args: s.OpenNodes) -> s.GraphOut:
    with memory.timeline.at("open_nodes", args.as_of) as moment:
        return queries.open_nodes(moment.graph, args.workspace, args.names, moment.position)


def _entity_history(memory: Memory, args: m.GetEntityHistory) -> m.HistoryOut:
    with memory.timeline.at("get_entity_history", args.as_of) as moment:
        return history.entity_history(moment, args)


def _relation_history(memory: Memory, args: m.GetRelationHistory) -> m.HistoryOut:
    with memory.timeline.at("get_relation_history") as moment:
        return history.relation_history(moment, args)


def _audit_log(memory: Memory, args: m.GetAuditLog) -> m.AuditOut:
    since = until = None
    with memory.timeline.at("get_audit_log") as moment:
        if args.since is not UNSET:
            since = moment.log.position_at(_moment("since", args.since) - 1) + 1
        if args.until is not UNSET:
            until = moment.log.position_at(_moment("until", args.until))
        return history.audit_log(moment, args, since, until)


def _moment(field: str, text: str) -> int:
    try:
        return clock.parse_iso(text)
    except ValueError as error:
        raise InvalidArgumentsError("get_audit_log", f"{field}: {error}") from None


def _graph_summary(memory: Memory, args: m.GetGraphSummary) -> m.SummaryOut:
    with memory.timeline.at("get_graph_summary", args.as_of) as moment:
        return insights.graph_summary(moment.graph, args)


def _read_context(memory: Memory, args: m.ReadContext) -> m.ContextOut:
    with memory.timeline.at("read_context", args.as_of) as moment:
        return insights.context_out(args.workspace, moment.graph.context(args.workspace))


def _related_entities(memory: Memory, args: m.GetRelatedEntities) -> m.RelatedEntitiesOut:
    with memory.timeline.at("get_related_entities") as moment:
        return insights.related_entities(moment.graph, args)


def _list_workspaces(memory: Memory, args: m.ListWorkspaces) -> m.WorkspacesOut:
    with memory.timeline.at("list_workspaces") as moment:
        return insights.workspaces(moment.graph)


def _export(memory: Memory, args: m.ExportGraph) -> m.ExportOut:
    graph = msgspec.to_builtins(_read_graph(memory, s.ReadGraph(workspace=args.workspace, as_of=args.as_of)))
    content = render(graph, args.format, args.workspace)
    size = len(content.encode())
    counts = {"entities": len(graph["entities"]), "relations": len(graph["relations"])}
    if args.output_path is UNSET:
        return m.ExportOut(format=args.format, content=content, bytes=size, **counts)
    if memory.export_dir is None:
        raise InvalidArgumentsError(
            "export_graph", "outputPath: this server writes no files; start it with --export-dir DIR "
            "to allow exports into DIR, or leave outputPath out to get the content back")
    try:
        target = safe_output_path(memory.export_dir, args.output_path)
    except ValueError as error:
        raise InvalidArgumentsError("export_graph", str(error)) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return m.ExportOut(format=args.format, path=str(target), bytes=size, **counts)


READS: dict[str, Read] = {
    "read_graph": Read(s.ReadGraph, _read_graph),
    "search_nodes": Read(s.SearchNodes, _search_nodes),
    "open_nodes": Read(s.OpenNodes, _open_nodes),
    "get_entity_history": Read(m.GetEntityHistory, _entity_history),
    "get_relation_history": Read(m.GetRelationHistory, _relation_history),
    "get_audit_log": Read(m.GetAuditLog, _audit_log),
    "get_graph_summary": Read(m.GetGraphSummary, _graph_summary),
    "read_context": Read(m.ReadContext, _read_context),
    "get_related_entities": Read(m.GetRelatedEntities, _related_entities),
    "list_workspaces": Read(m.ListWorkspaces, _list_workspaces),
    "export_graph": Read(m.ExportGraph, _export),
}
"""Every read tool, by name."""
