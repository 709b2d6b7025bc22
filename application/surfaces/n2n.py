"""n2n-memory's surface (`--profile n2n`): twelve `n2n_*` tools, each taking the project's
root as `projectPath`, with its replies (`status`, `message`, `_protocol`) and its hot
context beside the graph.

Each tool translates to our own commands and queries on the project's workspace (see
`projectroot`), so the events, history, time travel and audit are the same as ours.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from chronograph.application.core import context as core_context
from chronograph.application.core import entities as core_entities
from chronograph.application.core import graph as core_graph
from chronograph.application.core import relations as core_relations
from chronograph.application.core import search as core_search
from chronograph.application.core.validtime import valid_at
from chronograph.application.engine.arguments import Args, D, Items, Name, ObservationList, Query, TypeName, parse
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.budget import ReplyBudget
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.registry import Registry
from chronograph.application.engine.service import Memory
from chronograph.application.surfaces.projectroot import Project, adopt, resolve_project
from chronograph.eventstore import EntityCreated, ObservationsAdded
from chronograph.projections import new_entity_stream
from msgspec import UNSET, Meta, UnsetType

__all__ = ["N2N", "N2N_TOOLS", "N2nArgs", "Path_", "done", "project_graph"]

N2N = Registry(files="project")
"""n2n-memory's twelve tools. Any of them may write inside the project root: adopting a new one
(`confirmNewProjectRoot`) writes its `.mcp` marker, and n2n_export_markdown its Markdown."""
N2N_TOOLS = ("n2n_add_entities", "n2n_add_observations", "n2n_create_relations", "n2n_read_graph",
             "n2n_get_graph_summary", "n2n_update_context", "n2n_search", "n2n_delete_entities",
             "n2n_delete_observations", "n2n_delete_relations", "n2n_open_nodes", "n2n_export_markdown")
REMINDER = "Remember to call n2n_update_context before 'git commit'."
Path_ = Annotated[str, Meta(min_length=1, max_length=4096)]


class N2nArgs(Args, kw_only=True, dict=True):
    """What every n2n tool takes: the project's root, and its confirmation when new.

    The project is resolved once, the first time it is asked (the access check asks first), and
    kept on the instance (`dict=True`: an attribute, not a field: neither on the wire nor in the
    schema); the workspace the tool reads and writes, the project files' hooks and the Markdown
    export all use that one resolution, so a link flipped after the check changes nothing."""

    project_path: Path_
    confirm_new_project_root: Path_ | UnsetType = UNSET

    def project(self) -> Project:
        """The project `projectPath` names, as this call resolved it.

        Raises:
            ChronographError: If it names no project root (see `resolve_project`).
        """
        found: Project | None = self.__dict__.get("_project")
        if found is None:
            found = self.__dict__["_project"] = resolve_project("n2n", self.project_path)
        return found

    @property
    def workspace(self) -> str:
        """The project's workspace (a new root needs confirming; adopted in the folder resolved)."""
        project = self.project()
        if not self.__dict__.get("_adopted"):
            confirmed = None if self.confirm_new_project_root is UNSET else self.confirm_new_project_root
            adopt("n2n", project, confirmed)
            self.__dict__["_adopted"] = True
        return project.workspace

    def touches(self) -> tuple[str, ...]:
        """The project's workspace, found without adopting the root (the access check comes first)."""
        return (self.project().workspace,)


def done(message: str, action: str = "MEMORY_UPDATED", **fields: Any) -> ObjectOut:
    return object_out(status="success", message=message, **fields,
                      _protocol={"action": action, "reminder": REMINDER})


def _similar(text: str) -> str:
    """What two observations share when n2n would call them the same: case, spacing, end punctuation."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".!;,").casefold()


class Entity(Args, kw_only=True):
    name: Name
    entity_type: TypeName
    observations: ObservationList = []


class AddEntities(N2nArgs, kw_only=True):
    entities: Items[Entity]


@N2N.command("n2n_add_entities", "Add Entities", "Create new entities or merge observations into existing entities "
             "with the same name (their type is kept; near-duplicate observations are skipped)")
def n2n_add_entities(batch: Batch, args: AddEntities) -> ObjectOut:
    created, merged = [], 0
    for item in args.entities:
        entity = batch.entity(item.name)
        if entity is None:
            kept: dict[str, str] = {}
            for observation in item.observations:
                kept.setdefault(_similar(observation), observation)
            batch.emit(new_entity_stream(), EntityCreated(workspace=batch.workspace, name=item.name,
                                                          entity_type=item.entity_type,
                                                          observations=tuple(kept.values())), new=True)
            created.append(item.name)
        else:
            merged += _add(batch, entity.name, item.observations)
    return done(f"Created {len(created)} entities; merged {merged} new observations into existing ones",
                 created=created, mergedObservations=merged)


def _add(batch: Batch, name: str, contents: list[str]) -> int:
    entity = batch.entity(name)
    assert entity is not None
    spans, now = entity.validity, batch.recorded_at  # a text no longer true is stated again (validtime.restated)
    known = {_similar(o) for o in entity.observations if o not in spans or valid_at(spans[o], now)}
    fresh = []
    for content in contents:
        key = _similar(content)
        if key not in known:
            known.add(key)
            fresh.append(content)
    if fresh:
        batch.emit(entity.stream, ObservationsAdded(observations=tuple(fresh)))
    return len(fresh)


class Addition(Args, kw_only=True):
    entity_name: Name
    contents: ObservationList


class AddObservations(N2nArgs, kw_only=True):
    observations: Items[Addition]


@N2N.command("n2n_add_observations", "Add Observations", "Append observations to existing entities (missing "
             "entities are skipped); reports how many were added after deduplication")
def n2n_add_observations(batch: Batch, args: AddObservations) -> ObjectOut:
    added, skipped = 0, []
    for item in args.observations:
        if batch.entity(item.entity_name) is None:
            skipped.append(item.entity_name)
        else:
            added += _add(batch, item.entity_name, item.contents)
    return done(f"Added {added} observations" + (f"; skipped missing entities {skipped}" if skipped else ""),
                 addedCount=added, skippedEntities=skipped)


class Relation(Args, kw_only=True):
    source: Name = msgspec.field(name="from")
    target: Name = msgspec.field(name="to")
    relation_type: TypeName


class CreateRelations(N2nArgs, kw_only=True):
    relations: Items[Relation]


def _core(tool: str, batch_or_memory: Any, handler: Any, arguments: dict[str, Any], into: type[Any], ws: str) -> Any:
    return handler(batch_or_memory, parse(tool, {**arguments, "workspace": ws}, into))


@N2N.command("n2n_create_relations", "Create Relations", "Create directed relations between existing entities "
             "(duplicates ignored; a relation to a missing entity is refused)")
def n2n_create_relations(batch: Batch, args: CreateRelations) -> ObjectOut:
    raw = [{"from": r.source, "to": r.target, "relationType": r.relation_type} for r in args.relations]
    made = _core("n2n_create_relations", batch, core_relations.create_relations, {"relations": raw},
                 core_relations.CreateRelations, batch.workspace)
    return done(f"Created {len(made.relations)} relations", createdCount=len(made.relations))


N2N_PAGING = ("Page through it: n2n_read_graph with limit {fit} and offset {offset}, then offset by each page's "
              "entities while isTruncated is true; or summaryMode true for names and types only.")
N2N_ALONE = ("Not even the entity at offset {offset} fits on its own: n2n_read_graph with summaryMode true gives "
             "names and types only, and n2n_search with its name as the query and observationsLimit some of its "
             "observations.")


class ReadGraph(N2nArgs, kw_only=True):
    summary_mode: bool = False
    limit: Annotated[int, Meta(ge=1, le=100_000)] | UnsetType = UNSET
    offset: Annotated[int, Meta(ge=0)] = 0


@N2N.query("n2n_read_graph", "Read Graph", "Read the project graph and its hot context together (summaryMode: "
           "names and types; limit/offset page the entities)")
def n2n_read_graph(memory: Memory, args: ReadGraph) -> ObjectOut:
    ws = args.workspace
    arguments: dict[str, Any] = {"offset": args.offset, "summaryMode": args.summary_mode}
    if args.limit is not UNSET:
        arguments["limit"] = args.limit
    limit = memory.limit_for(n2n_read_graph)
    if limit is not None:  # the answer carries every entity of the core's page: refused before it is built
        with memory.timeline.at("n2n_read_graph") as moment:
            core_graph.refuse_early(memory, moment, parse("n2n_read_graph", {**arguments, "workspace": ws},
                                                          core_graph.ReadGraph), limit, "n2n_read_graph", N2N_PAGING,
                                   N2N_ALONE)
    page = _core("n2n_read_graph", memory, core_graph.read_graph, arguments, core_graph.ReadGraph, ws)
    names = {e.name for e in page.entities}
    graph = msgspec.to_builtins(page)
    graph["relations"] = [r for r in graph["relations"] if r["from"] in names and r["to"] in names]
    total = page.total_entities if page.total_entities is not UNSET else len(page.entities)
    context = _core("n2n_read_graph", memory, core_context.read_context, {}, core_context.ReadContext, ws)
    return done("Memory loaded", "MEMORY_LOADED", graph={"entities": graph["entities"],
                 "relations": graph["relations"]}, context=_context(context), totalEntityCount=total,
                 isTruncated=args.offset + len(page.entities) < total)


def _context(out: Any) -> dict[str, Any]:
    shown = msgspec.to_builtins(out)
    shown.pop("workspace", None)
    return shown


class GraphSummary(N2nArgs, kw_only=True):
    limit: Annotated[int, Meta(ge=1, le=100_000)] | UnsetType = UNSET
    offset: Annotated[int, Meta(ge=0)] = 0


@N2N.query("n2n_get_graph_summary", "Graph Summary", "A lightweight entity index plus the total relation count")
def n2n_get_graph_summary(memory: Memory, args: GraphSummary) -> ObjectOut:
    ws = args.workspace
    budget = ReplyBudget("n2n_get_graph_summary", memory.limit_for(n2n_get_graph_summary), summary=True,
                         shape={"name": "", "type": ""})
    with memory.timeline.at("n2n_get_graph_summary") as moment:
        graph = moment.graph
        limit = None if args.limit is UNSET else args.limit
        entities = []
        for entity in graph.entities(ws, args.offset, limit):  # refused as soon as it is over the limit
            entities.append({"name": entity.name, "type": entity.entity_type})
            if budget.add(entity):
                held = graph.workspace(ws)
                raise budget.refuse(budget.spent, (held.entities if held else 0) - args.offset,
                                    lambda size: (_summary(entities[:size], 0, 0, False), len(entities[:size])), (
                                        "Page through it: n2n_get_graph_summary with limit {fit} and offset "
                                        f"{args.offset}, then offset by each page's entities while isTruncated is "
                                        "true."), fits=budget.fitted)
        totals = graph.workspace(ws)
    total = 0 if totals is None else totals.entities
    return _summary(entities, 0 if totals is None else totals.relations, total, args.offset + len(entities) < total)


def _summary(entities: list[dict[str, str]], relations: int, total: int, truncated: bool) -> ObjectOut:
    return object_out(entities=entities, relationCount=relations, totalEntityCount=total, isTruncated=truncated)


class UpdateContext(N2nArgs, kw_only=True):
    active_task: Annotated[str, Meta(max_length=16_384)] | UnsetType = UNSET
    status: core_context.Status | UnsetType = UNSET
    reason: Annotated[str, Meta(max_length=16_384)] | UnsetType = UNSET
    next_steps: Annotated[list[str], Meta(max_length=100)] | UnsetType = UNSET
    last_commit: Annotated[str, Meta(max_length=16_384)] | UnsetType = UNSET


@N2N.command("n2n_update_context", "Update Context", "Update the project's hot context (activeTask, status, reason, "
             "nextSteps, lastCommit); merged with the current one, updatedAt set")
def n2n_update_context(batch: Batch, args: UpdateContext) -> ObjectOut:
    fields = {k: v for k, v in msgspec.to_builtins(args).items()
              if k in ("activeTask", "status", "reason", "nextSteps", "lastCommit")}
    out = _core("n2n_update_context", batch, core_context.update_context, fields, core_context.UpdateContext,
                batch.workspace)
    return done("Context updated", "CONTEXT_SYNCED", context=_context(out))


class Search(N2nArgs, kw_only=True):
    query: Annotated[Query, Meta(min_length=1)]
    limit: Annotated[int, Meta(ge=1, le=1000)] = 20
    offset: Annotated[int, Meta(ge=0)] = 0
    fuzzy: bool = True
    min_score: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.3
    matches_per_entity: Annotated[int, Meta(ge=0, le=1000), D(
        description="Best matching observations per entity, as matchedObservations (default 3; fuzzy)")] = 3
    observations_limit: Annotated[int, Meta(ge=0, le=1000), D(
        description="At most this many observations per entity, the best matching")] | UnsetType = UNSET


@N2N.query("n2n_search", "Search", "Search entities by name, type and observations; fuzzy by default (scores 0-1 "
           "relative to the best match, minScore filters)")
def n2n_search(memory: Memory, args: Search) -> ObjectOut:
    """A page of the matches, paged by the core itself (so every match can be reached), and how
    many there are: fuzzy matches below minScore of the best one end the list. totalResults is
    exact unless `totalIsLowerBound` says counting stopped early (as the core's `total` does)."""
    ws = args.workspace
    mode = "fuzzy" if args.fuzzy else "substring"
    asked: dict[str, Any] = {"query": args.query, "mode": mode, "offset": args.offset, "limit": args.limit,
                             "matchesPerEntity": args.matches_per_entity}
    if args.observations_limit is not UNSET:
        asked["observationsLimit"] = args.observations_limit
    found = _core("n2n_search", memory, core_search.search_nodes, asked, core_search.SearchNodes, ws)
    entities = msgspec.to_builtins(found.entities)
    total = found.total if found.total is not UNSET else args.offset + len(entities)
    lower_bound = found.total_is_lower_bound is True
    scores = list(found.scores) if found.scores is not UNSET else [1.0] * len(entities)  # substring: all 1
    best = 1.0
    kept = list(range(len(entities)))
    if args.fuzzy:
        if args.offset:
            best = next(iter(_scores(memory, args, 0, 1)[0]), 1.0) or 1.0
        elif scores:
            best = scores[0] or 1.0
        floor = args.min_score * best
        kept = [i for i, score in enumerate(scores) if score >= floor]  # the ranking is best first: a prefix
        if kept and len(kept) < len(scores):  # the passing matches end on this page
            total = args.offset + len(kept)
        elif not kept and args.offset:  # they end before it
            total, lower_bound = _passing(memory, args, 0, floor)
        elif args.offset + len(scores) < total and not _passes(memory, args, total - 1, floor):
            more, lower_bound = _passing(memory, args, args.offset + len(scores), floor)  # they end after the page
            total = args.offset + len(scores) + more
    entities = [{**entities[i], "score": round(scores[i] / best, 4)} for i in kept]
    names = {e["name"] for e in entities}
    relations = [r for r in msgspec.to_builtins(found.relations) if r["from"] in names or r["to"] in names]
    answer = object_out(entities=entities, relations=relations, totalResults=total,
                        isTruncated=args.offset + len(entities) < total or (lower_bound and bool(entities)))
    if lower_bound:
        answer.reply["totalIsLowerBound"] = True
    return answer


def _scores(memory: Memory, args: Search, offset: int, limit: int) -> tuple[list[float], bool]:
    """The fuzzy scores of `limit` matches from `offset`, best first (found as names and types
    only), and whether more follow."""
    found = _core("n2n_search", memory, core_search.search_nodes, {
        "query": args.query, "mode": "fuzzy", "offset": offset, "limit": limit, "summaryMode": True},
        core_search.SearchNodes, args.workspace)
    return (list(found.scores) if found.scores is not UNSET else []), found.next_offset is not UNSET


def _passes(memory: Memory, args: Search, at: int, floor: float) -> bool:
    """Whether the fuzzy match at `at` (the last, say) scores at least `floor`."""
    return all(score >= floor for score in _scores(memory, args, at, 1)[0])


def _passing(memory: Memory, args: Search, start: int, floor: float) -> tuple[int, bool]:
    """How many fuzzy matches from `start` score at least `floor`, counted among the core's
    `DEPTH` after it (as the core counts past a page), and whether counting stopped before their end."""
    scores, more = _scores(memory, args, start, core_search.DEPTH)
    passing = sum(1 for score in scores if score >= floor)
    return passing, passing == len(scores) and more


class DeleteEntities(N2nArgs, kw_only=True):
    entity_names: Items[Name]


@N2N.command("n2n_delete_entities", "Delete Entities", "Delete entities and all relations attached to them",
             kind="delete")
def n2n_delete_entities(batch: Batch, args: DeleteEntities) -> ObjectOut:
    out = _core("n2n_delete_entities", batch, core_entities.delete_entities, {"entityNames": args.entity_names},
                core_entities.DeleteEntities, batch.workspace)
    return done(f"Deleted {out.deleted} entities", deletedCount=out.deleted)


class Deletion(Args, kw_only=True):
    entity_name: Name
    observations: ObservationList


class DeleteObservations(N2nArgs, kw_only=True):
    deletions: Items[Deletion]


@N2N.command("n2n_delete_observations", "Delete Observations", "Delete exact observation strings from entities",
             kind="delete")
def n2n_delete_observations(batch: Batch, args: DeleteObservations) -> ObjectOut:
    raw = [{"entityName": d.entity_name, "observations": d.observations} for d in args.deletions]
    out = _core("n2n_delete_observations", batch, core_entities.delete_observations, {"deletions": raw},
                core_entities.DeleteObservations, batch.workspace)
    return done(f"Deleted {out.deleted} observations", deletedCount=out.deleted)


class DeleteRelations(N2nArgs, kw_only=True):
    relations: Items[Relation]


@N2N.command("n2n_delete_relations", "Delete Relations", "Delete exact relation triples", kind="delete")
def n2n_delete_relations(batch: Batch, args: DeleteRelations) -> ObjectOut:
    raw = [{"from": r.source, "to": r.target, "relationType": r.relation_type} for r in args.relations]
    out = _core("n2n_delete_relations", batch, core_relations.delete_relations, {"relations": raw},
                core_relations.DeleteRelations, batch.workspace)
    return done(f"Deleted {out.deleted} relations", deletedCount=out.deleted)


class OpenNodes(N2nArgs, kw_only=True):
    names: Items[Name]


@N2N.query("n2n_open_nodes", "Open Nodes", "Retrieve specific entities by name, with the relations among them")
def n2n_open_nodes(memory: Memory, args: OpenNodes) -> ObjectOut:
    out = _core("n2n_open_nodes", memory, core_graph.open_nodes, {"names": args.names}, core_graph.OpenNodes,
                args.workspace)
    names = {e.name for e in out.entities}
    relations = [r for r in msgspec.to_builtins(out.relations) if r["from"] in names and r["to"] in names]
    return object_out(entities=msgspec.to_builtins(out.entities), relations=relations)


def project_graph(memory: Memory, workspace: str) -> dict[str, Any]:
    """The project's whole graph as plain data, sorted by name: a stable export for git diffs."""
    whole = msgspec.to_builtins(_core("n2n_export_markdown", memory, core_graph.read_graph, {}, core_graph.ReadGraph,
                                      workspace))
    whole["entities"].sort(key=lambda e: e["name"])
    whole["relations"].sort(key=lambda r: (r["from"], r["relationType"], r["to"]))
    return whole
