"""The Kuzu memory graph's surface (`--profile kuzu`): its seven tools, snake_case arguments
and `{"status": ...}` replies, over our own commands and queries.

A Kuzu database is a workspace of the same name (its primary, "memory", included); the
names are checked so that no database name carries a path. A database exists once
something was written to it (the primary always does); any other name is refused as
the Kuzu server refuses a database it has no folder for, so that a misspelt name cannot
split an agent's memory in two. `create_entity` with `create: true` is the one call that
makes a new database. The replies add nothing Kuzu's clients would trip over;
`semantic_search` needs the embeddings of the retrieval work (`--embeddings local`).
With them, `create_entity` and `add_observations` embed the entity in the call once the
model is loaded and answer `embedded` / `reembedded` truthfully.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from chronograph.application.core import search as core_search
from chronograph.application.core import traversal
from chronograph.application.core.validtime import observations_at, read_moment, relation_span, restated, statement
from chronograph.application.engine.access import readable
from chronograph.application.engine.arguments import Args, D, Limits, Name, ObservationList, TypeName
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.registry import Registry
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError, NotFoundError
from chronograph.eventstore import EntityCreated, ObservationsAdded, RelationCreated, RelationUpdated
from chronograph.eventstore.clock import isoformat
from chronograph.projections import (
    ENTITY,
    RELATION,
    EntityRecord,
    Graph,
    new_entity_stream,
    relation_stream,
    unique,
)
from msgspec import UNSET, Meta, UnsetType

__all__ = ["KUZU", "KUZU_TOOLS", "PRIMARY", "databases"]

KUZU = Registry()
"""The Kuzu memory graph's seven tools."""
KUZU_TOOLS = ("create_entity", "create_relationship", "add_observations", "search_entities", "semantic_search",
              "get_related_entities", "get_graph_summary")
PRIMARY = "memory"
"""Kuzu's primary database (a workspace of that name here)."""

DATABASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
Database = Annotated[str, Meta(min_length=1, max_length=Limits.WORKSPACE),
                     D(description="Database name (kuzu://databases/list lists them)")]


class KuzuArgs(Args, rename=None, kw_only=True):
    """Kuzu spells its arguments in snake_case; `database` is the workspace."""

    database: Database

    @property
    def workspace(self) -> str:
        return self.database


LISTED = 20
"""Databases an unknown-database error names (the resource lists them all)."""


def _checked(tool: str, database: str) -> str:
    if not DATABASE.fullmatch(database):
        raise InvalidArgumentsError(tool, f"database: Invalid parameter: {database!r} must be letters, digits, "
                                    "'_' or '-' (no paths)")
    return database


def _existing(tool: str, graph: Graph, database: str) -> str:
    """`database`, if it is a well-formed name of a database that exists.

    Raises:
        InvalidArgumentsError: If the name could be a path.
        NotFoundError: If no database has that name (nothing is created).
    """
    _checked(tool, database)
    if database == PRIMARY or graph.workspace(database) is not None:
        return database
    names = _names(graph)
    shown = ", ".join(names[:LISTED]) + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
    raise NotFoundError(f"Database '{database}' not found. Available databases: {shown}. To create it, call "
                        "create_entity with create: true.")


def _names(graph: Graph) -> list[str]:
    """The databases the caller may read, the primary first."""
    names = [w.name for w in graph.workspaces() if w.name != PRIMARY and _listed(w.name)]
    return [PRIMARY, *names] if readable(PRIMARY) else names


def _listed(workspace: str) -> bool:
    """Whether a workspace is a database here: the caller may read it, and its name is one a
    database may have (another profile may have written a workspace called `my notes`)."""
    return DATABASE.fullmatch(workspace) is not None and readable(workspace)


def _known(memory: Memory, tool: str, database: str) -> str:
    with memory.timeline.at(tool) as moment:
        return _existing(tool, moment.graph, database)


def _entity(entity: EntityRecord, now: int) -> dict[str, Any]:
    """An entity as the Kuzu server gives it, with its observations true at `now`."""
    return {"name": entity.name, "type": entity.entity_type, "observations": observations_at(entity, now),
            "created_date": isoformat(entity.created_at)[:10]}


class CreateEntity(KuzuArgs, kw_only=True):
    name: Name
    entity_type: TypeName
    observations: ObservationList = []
    create: Annotated[bool, D(description="Create the database if it does not exist yet (without it an unknown "
                                          "database is refused, so a misspelt name cannot start a new one)")] = False


@KUZU.command("create_entity", "Create Entity", "Creates a new entity in the specified knowledge graph "
              "(status created, or exists with the stored one)")
def create_entity(batch: Batch, args: CreateEntity) -> ObjectOut:
    if args.create:
        _checked("create_entity", args.database)
    else:
        _existing("create_entity", batch.state.base, args.database)
    held = batch.entity(args.name)
    if held is not None:
        return object_out(status="exists", database=args.database, name=held.name, type=held.entity_type,
                          message="Entity already exists")
    observations = tuple(unique(args.observations))
    batch.emit(new_entity_stream(), EntityCreated(workspace=batch.workspace, name=args.name,
                                                  entity_type=args.entity_type, observations=observations), new=True)
    _embed_afterwards(batch, args.name, "embedded")
    return object_out(status="created", database=args.database, name=args.name, type=args.entity_type,
                      observations_count=len(observations), embedded=False)


def _embed_afterwards(batch: Batch, name: str, field: str) -> None:
    """Once the batch has committed, embed the entity `name` as it now stands and answer in
    `field` whether it is embedded (false: semantic search is off, the model is not loaded
    yet, or it failed; the background projector embeds it then)."""
    embed, record = batch.embed_now, batch.entity(name)
    if embed is None or record is None:
        return

    def then(answer: ObjectOut) -> ObjectOut:
        return ObjectOut(reply={**answer.reply, field: embed([record])})

    batch.unlocked.append(then)


class CreateRelationship(KuzuArgs, kw_only=True):
    from_entity: Name
    to_entity: Name
    relationship_type: TypeName
    confidence: Annotated[float, Meta(ge=0.0, le=1.0)] = 1.0


@KUZU.command("create_relationship", "Create Relationship", "Creates a relationship between two existing entities "
              "in the specified database, with a confidence (0-1, default 1.0)")
def create_relationship(batch: Batch, args: CreateRelationship) -> ObjectOut:
    _existing("create_relationship", batch.state.base, args.database)
    missing = [name for name in (args.from_entity, args.to_entity) if not batch.exists(name)]
    if missing:
        raise NotFoundError(f"One or both entities not found: {', '.join(missing)}")
    held = batch.relation(args.from_entity, args.relationship_type, args.to_entity)
    status = "created"
    if held is None or restated(relation_span(held), (None, None), batch.recorded_at) is not None:
        # new, or no longer true: stated true again on its stream, keeping its metadata
        batch.emit(relation_stream(batch.workspace, args.from_entity, args.relationship_type, args.to_entity)
                   if held is None else held.stream,
                   RelationCreated(workspace=batch.workspace, source=args.from_entity, target=args.to_entity,
                                   relation_type=args.relationship_type, confidence=args.confidence,
                                   metadata={} if held is None else held.metadata))
    elif held.confidence != args.confidence:
        batch.emit(held.stream, RelationUpdated(confidence=args.confidence))
        status = "updated"
    else:
        status = "exists"
    return object_out(status=status, database=args.database, **{"from": args.from_entity}, to=args.to_entity,
                      relationship_type=args.relationship_type, confidence=args.confidence)


class AddObservations(KuzuArgs, kw_only=True):
    entity_name: Name
    observations: ObservationList


@KUZU.command("add_observations", "Add Observations", "Adds new observations to an existing entity in the "
              "specified database (status updated or no_change, with the totals)")
def add_observations(batch: Batch, args: AddObservations) -> ObjectOut:
    _existing("add_observations", batch.state.base, args.database)
    entity = batch.entity(args.entity_name)
    if entity is None:
        raise NotFoundError(f"Entity '{args.entity_name}' not found")
    present, now = set(entity.observations), batch.recorded_at  # one no longer true is stated again
    added = [o for o in unique(args.observations) if statement(entity, present, o, (None, None), now) is not None]
    if added:
        batch.emit(entity.stream, ObservationsAdded(observations=tuple(added)))
        _embed_afterwards(batch, args.entity_name, "reembedded")
    current = batch.entity(args.entity_name)
    assert current is not None
    return object_out(status="updated" if added else "no_change", database=args.database,
                      entity_name=args.entity_name, added_observations=added,
                      total_observations=len(current.observations), reembedded=False)


class SearchEntities(KuzuArgs, kw_only=True):
    query: Annotated[str, Meta(min_length=1, max_length=Limits.QUERY)]
    limit: Annotated[int, Meta(ge=1, le=1000)] = 10


@KUZU.query("search_entities", "Search Entities", "Searches entities by text across names, types and "
            "observations in the specified database")
def search_entities(memory: Memory, args: SearchEntities) -> ObjectOut:
    _known(memory, "search_entities", args.database)
    found = core_search.search_nodes(memory, core_search.SearchNodes(
        query=args.query, workspace=args.database, limit=args.limit))
    with memory.timeline.at("search_entities") as moment:
        records = [moment.graph.entity(args.database, e.name) for e in found.entities]
    now = read_moment("search_entities", UNSET)
    entities = [_entity(r, now) for r in records if r is not None]
    return object_out(query=args.query, database=args.database, entities=entities, count=len(entities))


class SemanticSearch(KuzuArgs, kw_only=True):
    query: Annotated[str, Meta(min_length=1, max_length=Limits.QUERY)]
    limit: Annotated[int, Meta(ge=1, le=1000)] = 10
    threshold: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.3
    matches_per_entity: Annotated[int, Meta(ge=0, le=1000), D(
        description="Best matching observations per entity, as matched_observations (default 3)")] = 3
    observations_limit: Annotated[int, Meta(ge=0, le=1000), D(
        description="At most this many observations per entity, the best matching")] | UnsetType = UNSET


@KUZU.query("semantic_search", "Semantic Search", "Performs semantic similarity search using vector embeddings "
            "in the specified database")
def semantic_search(memory: Memory, args: SemanticSearch) -> ObjectOut:
    _known(memory, "semantic_search", args.database)
    found = core_search.similar(memory, core_search.SemanticSearch(
        query=args.query, workspace=args.database, limit=args.limit, threshold=args.threshold),
        args.matches_per_entity, args.observations_limit)
    entities = [{"name": e.name, "type": e.entity_type, "observations": e.observations,
                 "similarity": e.similarity, "matched_observations": [
                     {"text": m.text, "score": m.score} for m in e.matched_observations or ()]}
                for e in found.entities]
    return object_out(query=args.query, database=args.database, entities=entities, count=len(entities),
                      threshold=args.threshold, method="vector_similarity")


class GetRelatedEntities(KuzuArgs, kw_only=True):
    entity_name: Name
    max_depth: Annotated[int, Meta(ge=1, le=6)] = 2
    limit: Annotated[int, Meta(ge=1, le=1000)] = 20


@KUZU.query("get_related_entities", "Related Entities", "Finds entities related to a specified entity through "
            "relationship traversal in the specified database (distance, relationship and confidence paths)")
def get_related_entities(memory: Memory, args: GetRelatedEntities) -> ObjectOut:
    _known(memory, "get_related_entities", args.database)
    try:
        related = traversal.get_related_entities(memory, traversal.GetRelatedEntities(
            name=args.entity_name, workspace=args.database, max_depth=args.max_depth, limit=args.limit))
    except NotFoundError:
        raise NotFoundError(f"Entity '{args.entity_name}' not found") from None
    entities = [{"name": r.entity.name, "type": r.entity.entity_type, "observations": r.entity.observations,
                 "distance": r.distance, "relationship_path": r.relation_path,
                 "confidence_path": [1.0 if c is None else c for c in r.confidence_path]} for r in related.related]
    return object_out(entity_name=args.entity_name, database=args.database, entities=entities,
                      count=len(entities), max_depth=args.max_depth)


class GetGraphSummary(Args, rename=None, kw_only=True):
    database: Database | UnsetType = UNSET

    def touches(self) -> tuple[str, ...]:
        """The database named; none named, every database the caller may read."""
        return () if self.database is UNSET else (self.database,)


@KUZU.query("get_graph_summary", "Graph Summary", "Statistics about one database, or about all of them when "
            "none is named")
def get_graph_summary(memory: Memory, args: GetGraphSummary) -> ObjectOut:
    with memory.timeline.at("get_graph_summary") as moment:
        graph = moment.graph
        if args.database is UNSET:
            every = {w.name: {"entities": w.entities, "relationships": w.relations} for w in graph.workspaces()
                     if _listed(w.name)}
            return object_out(scope="all_databases", databases=every, total_databases=len(every))
        database = _existing("get_graph_summary", graph, args.database)
        totals = graph.workspace(database)
        types = graph.type_counts(database, ENTITY)
        kinds = graph.type_counts(database, RELATION)
    return object_out(
        scope="single_database", database=database,
        stats={"entities": 0 if totals is None else totals.entities,
               "relationships": 0 if totals is None else totals.relations,
               "entity_types": len(types), "relationship_types": len(kinds)},
        entity_types=[{"type": t, "count": n} for t, n in sorted(types.items(), key=lambda item: -item[1])],
        relationship_types=[{"type": t, "count": n} for t, n in sorted(kinds.items(), key=lambda item: -item[1])])


def databases(memory: Memory) -> dict[str, Any]:
    """What the kuzu://databases/list resource holds: every workspace, as a database."""
    with memory.timeline.at("databases") as moment:
        names = _names(moment.graph)
    listed = [{"name": n, "description": f"Database: {n}", "is_primary": n == PRIMARY, "is_attached": True}
              for n in names]
    return {"databases": listed, "count": len(listed), "primary_database": PRIMARY}

