"""Finding entities: search_nodes in five modes, with filters and pages, and semantic_search.

- substring (the default): the official rule, the query inside a name, type or
  observation, any case; entities oldest first.
- ranked: BM25 over the query's words; fuzzy: the same, forgiving typos; semantic: by
  meaning (embeddings), a near-duplicate of a better hit ranked lower
  (projections/search/novelty.py); hybrid: fuzzy and semantic scores, normalised and weighed
  (projections/search/fusion.py). Best first, each entity with its score.

Filters (entityTypes, relationTypes, metadata) and the page (offset, limit) apply after
ranking, so `total` counts what matches the filters. Ranked modes rank at most the best
`DEPTH` entities. The relations answered are those with an end on the page (with
relationTypes, only relations of those types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Literal, NamedTuple

from chronograph.application.core.filters import Filter, everything
from chronograph.application.core.matched import MATCHES, RERANK, point_at_facts, pointed, reranked
from chronograph.application.core.provenance import provenance_of
from chronograph.application.core.validtime import (
    VALID_AT,
    ValidTime,
    hide_invalid,
    observations_at,
    read_moment,
)
from chronograph.application.engine.arguments import AsOf, D, Items, Metadata, Query, ReadArgs, TypeName
from chronograph.application.engine.budget import SAMPLE, ReplyBudget
from chronograph.application.engine.outputs import (
    MatchedOut,
    Out,
    PageEntityOut,
    PageRelationOut,
    entity_out,
    page_relations,
)
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.application.engine.timeline import Moment
from chronograph.application.errors import InvalidArgumentsError, ReplyTooLargeError, UnavailableError
from chronograph.projections import EntityRecord, WorkspaceIndex, matches
from chronograph.projections.search.fusion import fuse
from chronograph.projections.search.hubs import unhubbed
from chronograph.projections.search.novelty import spread
from chronograph.projections.search.selection import Selection
from chronograph.projections.search.terms import query_terms, terms
from msgspec import UNSET, Meta, UnsetType

__all__ = ["DEPTH", "SearchNodes", "SearchOut", "SemanticSearch", "SemanticSearchOut"]

Mode = Literal["substring", "ranked", "fuzzy", "semantic", "hybrid"]
DEPTH = 1000
"""Ranked modes rank at most this many entities."""
RANKED_LIMIT = 20
"""Entities per answer in ranked modes unless `limit` says otherwise."""
SEMANTIC_FLOOR = 0.2
"""search_nodes' semantic matches below this similarity (a cosine, moved towards 1 by term
weights where the store keeps them) are not matches at all."""
FUZZY_WORDS = 32
"""Words a fuzzy query may have (each is matched against the whole vocabulary)."""

Hit = tuple[EntityRecord, float | None]
Found = tuple[str, float | None, EntityRecord | None]
"""A stream that answers, its score, and its record if it was read on the way."""


class SearchNodes(ReadArgs, kw_only=True):
    query: Annotated[
        Query, D(description="The search query to match against entity names, types, and observation content")
    ]
    mode: Annotated[Mode, D(description=(
        "substring (default), ranked (BM25), fuzzy (forgives typos), semantic (by meaning), "
        "hybrid (both); all but substring answer best first"
    ))] | UnsetType = UNSET
    ranked: Annotated[bool, D(description="Mode ranked")] = False
    limit: Annotated[int, Meta(ge=1, le=DEPTH), D(
        description=f"At most this many entities (ranked modes: {RANKED_LIMIT} unless set)")] | UnsetType = UNSET
    offset: Annotated[int, Meta(ge=0), D(description="Skip this many: the last nextOffset")] = 0
    entity_types: Annotated[Items[TypeName], D(description="Only entities of these types")] | UnsetType = UNSET
    relation_types: Annotated[Items[TypeName], D(
        description="Only entities with relations of these types, and only those")] | UnsetType = UNSET
    metadata: Annotated[Metadata, D(
        description="Only entities whose metadata has these pairs")] | UnsetType = UNSET
    summary_mode: Annotated[bool, D(description="Names and types only")] = False
    include_provenance: Annotated[bool, D(description="Each observation's recordedAt, actor and call")] = False
    include_metadata: bool = False
    matches_per_entity: Annotated[int, Meta(ge=0, le=DEPTH), D(
        description=f"matchedObservations per entity in ranked modes (default {MATCHES})")] | UnsetType = UNSET
    observations_limit: Annotated[int, Meta(ge=0, le=DEPTH), D(
        description="At most this many observations per entity, the best matching")] | UnsetType = UNSET
    as_of: AsOf | UnsetType = UNSET
    valid_at: Annotated[ValidTime, VALID_AT] | UnsetType = UNSET


class SearchOut(Out, kw_only=True):
    entities: list[PageEntityOut]
    relations: list[PageRelationOut]
    scores: list[float] | UnsetType = UNSET
    total: int | UnsetType = UNSET
    total_is_lower_bound: Annotated[bool, D(description="More may match than total says (counting stopped early)")] | (
        UnsetType) = UNSET
    next_offset: int | UnsetType = UNSET
    embedded_through: int | UnsetType = UNSET
    head: int | UnsetType = UNSET
    as_of: int | UnsetType = UNSET


@CORE.query("search_nodes", "Search Nodes", "Search for nodes in the knowledge graph based on a query")
def search_nodes(memory: Memory, args: SearchNodes) -> SearchOut:
    """Entities matching the query in the chosen mode, filtered and paged, with their relations."""
    mode = _mode(args)
    paged = mode != "substring" or args.limit is not UNSET or args.offset > 0
    limit = args.limit if args.limit is not UNSET else RANKED_LIMIT if mode != "substring" else None
    if mode in ("semantic", "hybrid") and memory.semantic is not None and args.as_of is UNSET:
        memory.semantic.settle()
    # The word indexes' lock before the snapshot, so that the indexes only move forward (see SearchIndex)
    with memory.views.search.holding() as done, memory.timeline.at("search_nodes", args.as_of) as moment:
        wanted = _filter(moment, args)
        budget = ReplyBudget("search_nodes", memory.limit_for(search_nodes), summary=args.summary_mode,
                             observations=None if args.observations_limit is UNSET else args.observations_limit)
        through: int | None = None
        if mode == "substring":
            found = _substring(memory, moment, args, wanted, limit, budget)
        elif mode in ("ranked", "fuzzy"):
            found = _words(memory, moment, args, mode, limit if not wanted.active else None)
        else:
            found, through = _meaning(memory, moment, args, mode, wanted)
        if isinstance(found, _Counted):  # the index counted every match: only the page is read
            page: list[Hit] = [(record, score) for stream, score in found.page  # as of then, where asked
                               if (record := moment.graph.entity_by_stream(stream)) is not None]
            counted = _Count(found.total, False)
        else:
            page, counted = _examine(memory, moment, args, found, wanted, limit, budget)
        done()  # the answer is built without the word indexes
        return _answer(memory, moment, args, page, wanted, mode, counted if paged else None, through)


class _Counted(NamedTuple):
    """A page of matches and the exact count of all of them, both from the index."""

    page: list[tuple[str, float | None]]
    total: int


class _Found(NamedTuple):
    """Candidates in answer order, to be examined, and whether some were left out of them
    (ranked at most so deep)."""

    candidates: Iterable[Found]
    cut: bool


class _Count(NamedTuple):
    total: int
    lower_bound: bool
    """Whether counting stopped early: more may match than `total` says."""


def _examine(memory: Memory, moment: Moment, args: SearchNodes, found: _Found, wanted: Filter, limit: int | None,
             budget: ReplyBudget) -> tuple[list[Hit], _Count]:
    """The page of the candidates that pass the filters (and the substring rule, where the index
    only narrowed them down), and how many pass: every one when there are few, else those among
    the page and the `DEPTH` candidates after it (a lower bound, said so)."""
    graph = moment.graph
    page: list[Hit] = []
    total = examined_after = 0
    full = limit is not None and limit == 0
    stopped = False
    for stream, score, record in found.candidates:  # a record is read only where a filter or the page needs it
        if full:
            if examined_after >= DEPTH:
                stopped = True
                break
            examined_after += 1
        if wanted.active:
            record = record or graph.entity_by_stream(stream)
            if record is None or not wanted(record):
                continue
        if args.offset <= total and (limit is None or len(page) < limit):
            record = record or graph.entity_by_stream(stream)
            if record is None:
                continue
            page.append((record, score))
            if budget.add(record):
                raise _too_large(memory, moment, args, wanted, budget, budget.spent, len(page), page, budget.fitted)
            full = limit is not None and len(page) >= limit
        total += 1
    return page, _Count(total, stopped or found.cut)


def _too_large(memory: Memory, moment: Moment, args: SearchNodes, wanted: Filter, budget: ReplyBudget, bound: int,
               count: int, records: list[Hit], fits: int) -> ReplyTooLargeError:
    def sample(size: int) -> tuple[SearchOut, int]:
        few = records[:size]
        return _answer(memory, moment, args, few, wanted, "substring", None, None), len(few)

    return budget.refuse(bound, count, sample, (
        f"Page through it: search_nodes with limit {{fit}} and offset {args.offset}, then each answer's "
        "nextOffset; or observationsLimit to keep the best matching observations of each; or summaryMode true for "
        "names and types only; or narrow it with entityTypes, relationTypes or metadata."), fits=fits, alone=(
        f"Not even the match at offset {args.offset} fits on its own: observationsLimit keeps the best matching "
        "observations of each entity (a smaller one, if it was set), summaryMode true names and types only."))


def _mode(args: SearchNodes) -> Mode:
    mode: Mode = "ranked" if args.ranked else "substring"
    if args.mode is not UNSET:
        if args.ranked and args.mode != "ranked":
            raise InvalidArgumentsError("search_nodes", f"ranked: true means mode ranked, not {args.mode}; give one")
        mode = args.mode
    if mode == "substring":
        return mode
    words = terms(args.query)
    if not words and (mode in ("ranked", "fuzzy") or not args.query.strip()):
        raise InvalidArgumentsError("search_nodes", f"query: mode {mode} needs words to look for")
    if mode == "fuzzy" and len(query_terms(args.query)) > FUZZY_WORDS:
        raise InvalidArgumentsError(
            "search_nodes", f"query: mode fuzzy takes at most {FUZZY_WORDS} distinct words, this query has "
            f"{len(query_terms(args.query))}; use mode ranked or semantic for a long text")
    return mode


def _substring(memory: Memory, moment: Moment, args: SearchNodes, wanted: Filter, limit: int | None,
               budget: ReplyBudget) -> _Found | _Counted:
    ws, query = args.workspace, args.query
    selection = None if moment.is_past else memory.views.search_index(moment.snapshot, ws).select(query)
    if selection is None:  # the past (no standing index), or no word to look up: every entity is checked
        return _Found(((e.stream, None, e) for e in moment.graph.entities(ws) if matches(e, query)), False)
    if terms(query) == [query.lower()]:
        # One run of word characters lies in a text exactly when one of its terms contains it:
        # the candidates are the answer, and no entity needs reading to know it.
        if not wanted.active:
            if budget.active:
                bound = budget.selection(selection, offset=args.offset, limit=limit)
                if budget.limit is not None and bound > budget.limit:
                    raise _too_large_selection(memory, moment, args, wanted, budget, bound, selection, limit)
            return _Counted([(stream, None) for stream in selection.streams(args.offset, limit)], selection.count)
        return _Found(((stream, None, None) for stream in selection.each()), False)
    live = moment.live
    return _Found(((stream, None, record) for stream in selection.each()
                   if (record := live.entity_by_stream(stream)) is not None and matches(record, query)), False)


def _too_large_selection(memory: Memory, moment: Moment, args: SearchNodes, wanted: Filter, budget: ReplyBudget,
                         bound: int, selection: Selection, limit: int | None) -> ReplyTooLargeError:
    live = moment.live
    count = max(0, min(selection.count, selection.count if limit is None else args.offset + limit) - args.offset)
    first: list[Hit] = [(record, None) for stream in selection.streams(args.offset, SAMPLE)
                        if (record := live.entity_by_stream(stream)) is not None]
    fits = budget.fitting(selection, offset=args.offset, limit=limit)
    return _too_large(memory, moment, args, wanted, budget, bound, count, first, fits)


def _index(memory: Memory, moment: Moment, workspace: str) -> WorkspaceIndex:
    if not moment.is_past:
        return memory.views.search_index(moment.snapshot, workspace)
    index = WorkspaceIndex(workspace)  # no standing index for the past: one for this question
    for record in moment.graph.entities(workspace):
        index.put(record)
    return index


def _words(memory: Memory, moment: Moment, args: SearchNodes, mode: Mode, limit: int | None) -> _Found | _Counted:
    """The ranking of a ranked or fuzzy search: with `limit` (no filter), only the page is kept
    and the total is exact; else the best `DEPTH` (or as deep as the page), for filters to pick from."""
    index = _index(memory, moment, args.workspace)
    depth = args.offset + limit if limit is not None else max(DEPTH, args.offset + (args.limit or RANKED_LIMIT))
    ranking = index.ranking(args.query, fuzzy=mode == "fuzzy", depth=depth)
    if limit is not None:
        return _Counted([(stream, score) for stream, score in ranking.hits[args.offset:]], ranking.total)
    return _Found([(stream, score, None) for stream, score in ranking.hits], len(ranking.hits) < ranking.total)


def _meaning(memory: Memory, moment: Moment, args: SearchNodes, mode: Mode, wanted: Filter) -> tuple[_Found, int]:
    if moment.is_past:
        raise InvalidArgumentsError(
            "search_nodes", f"asOf: mode {mode} ranks the present only (embeddings are of current "
            "versions); use mode substring, ranked or fuzzy with asOf")
    near, through = nearest(memory, moment, args.workspace, args.query, SEMANTIC_FLOOR,
                            wanted.valid, spread_among=wanted if wanted.active else everything)
    meaning: list[Found] = [(record.stream, score, record) for record, score in near]
    cut = len(near) >= DEPTH  # there may be more above the floor
    if mode == "semantic":
        return _Found(meaning, cut), through
    fuzzy = len(query_terms(args.query)) <= FUZZY_WORDS
    index = _index(memory, moment, args.workspace)
    ranking = index.ranking(args.query, fuzzy=fuzzy, depth=DEPTH)
    cut = cut or len(ranking.hits) < ranking.total
    records = {stream: record for stream, _, record in meaning}
    fused = fuse([(stream, score or 0.0) for stream, score in ranking.hits],
                 [(stream, score or 0.0) for stream, score, _ in meaning], index.full_score(args.query, fuzzy))
    return _Found([(stream, score, records.get(stream)) for stream, score in fused[:DEPTH]],
                  cut or len(fused) > DEPTH), through


def nearest(memory: Memory, moment: Moment, workspace: str, query: str, threshold: float, valid: int,
            spread_among: Callable[[EntityRecord], bool] | None = None) -> tuple[list[Hit], int]:
    """The live entities nearest `query` in meaning, at least `threshold` similar, and the
    position the embeddings are current through. An entity is near by what it holds true at
    `valid` (µs): an observation whose valid time ended (or has not begun) finds nothing. With
    `spread_among`, a hit of one observation it accepts that nearly repeats a better one it
    accepts ranks lower (and scores less: `novelty.spread`), after the threshold; those it
    refuses (an answer's filters) come last, as they were.

    Raises:
        UnavailableError: If semantic search is off, not installed, or cannot embed the query.
    """
    semantic = memory.semantic
    if semantic is None:
        raise UnavailableError(memory.semantic_off)
    found, through = semantic.nearness.nearest(moment.snapshot, workspace, query, DEPTH)
    hits: list[Hit] = []
    for rank, (stream, version, score) in enumerate(found):
        if score < threshold and rank >= RERANK:  # the first ones may pass by their best observation
            break
        record = moment.live.entity_by_stream(stream)
        if record is not None and record.version == version:  # never by what it used to say
            hits.append((record, score))
    ranked, rows = reranked(memory, moment, query, hits, valid)
    kept = [(r, s) for r, s in ranked if (s or 0.0) >= threshold]
    if spread_among is None:
        return kept, through
    shown: list[Hit] = []
    hidden: list[Hit] = []
    for hit in kept:
        (shown if spread_among(hit[0]) else hidden).append(hit)
    records = {record.stream: record for record, _ in shown}
    alone = {record.stream for record, _ in shown if len(record.observations) == 1}  # see novelty.py
    spread_out = spread(unhubbed([(r.stream, s) for r, s in shown], rows), rows, alone)
    return [(records[stream], score) for stream, score in spread_out] + hidden, through


def _filter(moment: Moment, args: SearchNodes) -> Filter:
    return Filter(moment.graph, args.workspace, valid=read_moment("search_nodes", args.valid_at),
                  types=None if args.entity_types is UNSET else args.entity_types,
                  relation_types=None if args.relation_types is UNSET else args.relation_types,
                  metadata=None if args.metadata is UNSET else args.metadata)


def _answer(
    memory: Memory, moment: Moment, args: SearchNodes, page: list[Hit], wanted: Filter, mode: Mode,
    counted: _Count | None, through: int | None,
) -> SearchOut:
    if args.summary_mode:
        entities = [PageEntityOut(name=r.name, entity_type=r.entity_type) for r, _ in page]
    valid = wanted.valid
    if not args.summary_mode:
        entities = [entity_out(r, PageEntityOut, metadata=args.include_metadata) for r, _ in page]
        hide_invalid(entities, [r for r, _ in page], valid)
        if args.include_provenance:
            for out, (record, _) in zip(entities, page, strict=True):
                out.provenance = provenance_of(moment.log, record, moment.position, out.observations)
        point_at_facts(memory, moment, args.query, mode, page, entities, args.matches_per_entity,
                       args.observations_limit)
    total = None if counted is None else counted.total
    lower_bound = counted is not None and counted.lower_bound
    more = total is not None and (args.offset + len(page) < total or (lower_bound and bool(page)))
    return SearchOut(
        entities=entities,
        relations=page_relations(wanted.relations(r.name for r, _ in page), args.summary_mode, args.include_metadata),
        scores=[round(score or 0.0, 6) for _, score in page] if mode != "substring" else UNSET,
        total=UNSET if total is None else total,
        total_is_lower_bound=True if lower_bound else UNSET,
        next_offset=args.offset + len(page) if more else UNSET,
        embedded_through=UNSET if through is None else through,
        head=UNSET if through is None else moment.live.position,
        as_of=UNSET if moment.position is None else moment.position,
    )


# --- semantic_search ----------------------------------------------------------------------------


class SemanticSearch(ReadArgs, kw_only=True):
    query: Annotated[Query, Meta(min_length=1), D(description="What to look for, in any words")]
    limit: Annotated[int, Meta(ge=1, le=DEPTH), D(description="At most this many entities")] = 10
    threshold: Annotated[float, Meta(ge=0.0, le=1.0), D(description="Minimum similarity, 0 to 1")] = 0.3


class SimilarOut(Out, kw_only=True):
    name: str
    entity_type: str
    observations: list[str]
    similarity: float
    matched_observations: list[MatchedOut] | UnsetType = UNSET


class SemanticSearchOut(Out, kw_only=True):
    query: str
    workspace: str
    entities: list[SimilarOut]
    count: int
    threshold: float
    embedded_through: int
    head: int


@CORE.query("semantic_search", "Semantic Search", "Find entities by meaning, most similar first")
def semantic_search(memory: Memory, args: SemanticSearch) -> SemanticSearchOut:
    """The entities nearest the query in meaning, each with its similarity (0 to 1: the cosine of
    its nearest observation, moved towards 1 by its term weights where the store keeps them)."""
    return similar(memory, args)


def similar(memory: Memory, args: SemanticSearch, matches: int | UnsetType = UNSET,
            limit: int | UnsetType = UNSET) -> SemanticSearchOut:
    """semantic_search's answer, each entity with its best `matches` observations (UNSET: the
    default) and at most `limit` observations (UNSET: all).

    Raises:
        InvalidArgumentsError: If the query is blank.
        UnavailableError: If semantic search is off or cannot embed the query.
    """
    if not args.query.strip():
        raise InvalidArgumentsError("semantic_search", "query: say what to look for")
    if memory.semantic is not None:
        memory.semantic.settle()
    with memory.timeline.at("semantic_search") as moment:
        now = read_moment("semantic_search", UNSET)
        hits, through = nearest(memory, moment, args.workspace, args.query, args.threshold, now)
        entities = []
        for r, score in hits[: args.limit]:
            kept, matched = pointed(memory, moment, args.query, "semantic", r, list(observations_at(r, now)), matches,
                                    limit)
            entities.append(SimilarOut(name=r.name, entity_type=r.entity_type, observations=kept,
                                       similarity=round(score or 0.0, 4),
                                       matched_observations=UNSET if matched is None else matched))
        return SemanticSearchOut(query=args.query, workspace=args.workspace, entities=entities, count=len(entities),
                                 threshold=args.threshold, embedded_through=through, head=moment.live.position)
