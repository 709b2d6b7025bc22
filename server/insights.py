"""Overviews of the graph: summaries, workspaces, the working context, related entities."""

from __future__ import annotations

from collections import deque

from msgspec import UNSET

from eventstore import clock
from projections import ENTITY, RELATION, ContextRecord, Graph
from server import more_schemas as m
from server.errors import NotFoundError
from server.outputs import entity_out

__all__ = ["context_out", "graph_summary", "related_entities", "workspaces"]


def graph_summary(graph: Graph, args: m.GetGraphSummary) -> m.SummaryOut:
    """Counts, counts per type, and a page of the names-and-types index."""
    totals = graph.workspace(args.workspace)
    index = [
        m.IndexEntryOut(name=e.name, entity_type=e.entity_type)
        for e in graph.entities(args.workspace, args.offset, args.limit)
    ]
    entities = 0 if totals is None else totals.entities
    more = args.offset + len(index) < entities
    return m.SummaryOut(
        workspace=args.workspace,
        entities=entities,
        relations=0 if totals is None else totals.relations,
        entity_types=graph.type_counts(args.workspace, ENTITY),
        relation_types=graph.type_counts(args.workspace, RELATION),
        index=index,
        next_offset=args.offset + len(index) if more else UNSET,
    )


def workspaces(graph: Graph) -> m.WorkspacesOut:
    """Every workspace ever written to, with its counts."""
    return m.WorkspacesOut(workspaces=[
        m.WorkspaceOut(name=w.name, entities=w.entities, relations=w.relations,
                       has_context=graph.context(w.name) is not None)
        for w in graph.workspaces()
    ])


def context_out(workspace: str, record: ContextRecord | None) -> m.ContextOut:
    """A workspace's context (version 0 and nothing set when it never was)."""
    if record is None:
        return m.ContextOut(workspace=workspace, version=0)
    return m.ContextOut(
        workspace=workspace,
        active_task=record.active_task,
        status=record.status,
        reason=record.reason,
        next_steps=None if record.next_steps is None else list(record.next_steps),
        last_commit=record.last_commit,
        version=record.version,
        updated_at=clock.isoformat(record.updated_at),
    )


def related_entities(graph: Graph, args: m.GetRelatedEntities) -> m.RelatedEntitiesOut:
    """Breadth-first from `name`: nearest first, each with the path that reached it.

    Raises:
        NotFoundError: If there is no entity called `name`.
    """
    ws = args.workspace
    if graph.entity(ws, args.name) is None:
        raise NotFoundError(f"Entity with name {args.name} not found")
    wanted = None if args.relation_types is UNSET else set(args.relation_types)
    seen = {args.name}
    queue: deque[tuple[str, list[str], list[str], list[float | None]]] = deque([(args.name, [args.name], [], [])])
    related: list[m.RelatedOut] = []
    while queue and len(related) < args.limit:
        name, path, kinds, confidences = queue.popleft()
        if len(kinds) == args.max_depth:
            continue
        for relation in graph.relations_of(ws, name, args.direction):
            if wanted is not None and relation.relation_type not in wanted:
                continue
            other = relation.target if relation.source == name else relation.source
            if other in seen:
                continue
            seen.add(other)
            record = graph.entity(ws, other)
            if record is None:
                continue
            step = (other, [*path, other], [*kinds, relation.relation_type], [*confidences, relation.confidence])
            related.append(m.RelatedOut(
                entity=entity_out(record), distance=len(step[2]), path=step[1],
                relation_path=step[2], confidence_path=step[3],
            ))
            if len(related) == args.limit:
                break
            queue.append(step)
    return m.RelatedEntitiesOut(start=args.name, related=related)
