"""Finding team entries across scopes (`memory_query`: search and context).

Both read a scope and, with `inherit` (the default), its parents up to global: a
session sees its project's entries, a project its organisation's, everyone the global
ones; nearer scopes come first. `asOf` answers as the memory stood then.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from chronograph.application.engine.arguments import Args, AsOf
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError
from chronograph.application.team.common import TEAM, Short, Team, TeamArgs
from chronograph.application.team.entries import KINDS, entry_out, is_live, read_field
from chronograph.application.team.links import tags_of
from chronograph.application.team.semantic import DEFAULT_THRESHOLD, TEXT_FIELDS, similarities
from chronograph.projections.search.matching import NEAR, best, word_scores
from chronograph.projections.team.state import Entry
from msgspec import UNSET, Meta, UnsetType

__all__ = ["MemoryQuery"]

Plural = Literal["tools", "guidelines", "knowledge"]
TYPE_OF = {"tools": "tool", "guidelines": "guideline", "knowledge": "knowledge"}
Names = Annotated[list[Short], Meta(max_length=100)]


class ScopeArg(Args, kw_only=True):
    type: Literal["global", "org", "project", "session"]
    id: Short | UnsetType = UNSET
    inherit: bool = True


class TagFilter(Args, kw_only=True):
    include: Names = []
    require: Names = []
    exclude: Names = []


class RelatedTo(Args, kw_only=True):
    type: Short
    id: Short
    relation: Short | UnsetType = UNSET


MATCHES = 3
"""matchedObservations per result of a search unless `matchesPerEntity` says otherwise."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


class MemoryQuery(TeamArgs, kw_only=True):
    action: Literal["search", "context"]
    types: list[Plural] | UnsetType = UNSET
    scope: ScopeArg | UnsetType = UNSET
    scope_type: Literal["global", "org", "project", "session"] | UnsetType = UNSET
    scope_id: Short | UnsetType = UNSET
    inherit: bool = True
    tags: TagFilter | UnsetType = UNSET
    search: Annotated[str, Meta(max_length=2048)] | UnsetType = UNSET
    related_to: RelatedTo | UnsetType = UNSET
    limit: Annotated[int, Meta(ge=1, le=1000)] | UnsetType = UNSET
    offset: Annotated[int, Meta(ge=0)] = 0
    include_versions: bool = False
    include_inactive: bool = False
    compact: bool = False
    semantic_search: bool | UnsetType = UNSET
    semantic_threshold: Annotated[float, Meta(ge=0, le=1)] | UnsetType = UNSET
    matches_per_entity: Annotated[int, Meta(ge=0, le=1000)] = MATCHES
    as_of: AsOf | UnsetType = UNSET


@TEAM.query("memory_query", "Query", "Cross-reference search across tools, guidelines and knowledge (types, scope "
            "with inherit, tags include/require/exclude, search text, relatedTo, limit) and context: everything "
            "relevant to a scope, aggregated. asOf answers as the memory stood then. Actions: search, context")
def memory_query(memory: Memory | Batch, args: MemoryQuery) -> ObjectOut:
    team = Team.of(memory, "memory_query", args.as_of)
    if args.action == "context":
        return _context(team, args)
    return _search(team, args, memory if isinstance(memory, Memory) else None)


def _scope(team: Team, args: MemoryQuery) -> tuple[list[tuple[str, str | None]] | None, dict[str, Any] | None]:
    """The scopes to read, nearest first (None: every scope), and the scope as the reply names it."""
    if args.scope is not UNSET:
        scope_type, scope_id, inherit = args.scope.type, args.scope.id, args.scope.inherit
    elif args.scope_type is not UNSET:
        scope_type, scope_id, inherit = args.scope_type, args.scope_id, args.inherit
    else:
        if args.action == "context":
            raise InvalidArgumentsError("memory_query", "scopeType is required for action 'context'")
        return None, None
    checked = team.check_scope("memory_query", scope_type, scope_id)
    return team.chain(scope_type, checked, inherit=inherit), {"type": scope_type, "id": checked}


def _entries(team: Team, args: MemoryQuery, chain: list[tuple[str, str | None]] | None) -> list[Entry]:
    state = team.state
    types = {TYPE_OF[t] for t in (args.types or TYPE_OF)} if args.types is not UNSET else set(KINDS)
    if chain is None:
        candidates: Any = state.entries.values()
    else:
        candidates = (state.entries[i] for link in chain for i in state.in_scope.get(link, ()))
    return [e for e in candidates if e.type in types and is_live(e, team.now, include_inactive=args.include_inactive)]


def _tagged(team: Team, entries: list[Entry], tags: TagFilter) -> list[Entry]:
    names = team.state.tag_names
    include = {names[n] for n in tags.include if n in names}
    require = [names.get(n) for n in tags.require]
    exclude = {names[n] for n in tags.exclude if n in names}
    if None in require or (tags.include and not include):
        return []
    kept = []
    for entry in entries:
        own = team.state.tags_of.get(entry.id, {})
        if include and not include.intersection(own):
            continue
        if any(tag not in own for tag in require) or exclude.intersection(own):
            continue
        kept.append(entry)
    return kept


def _related(team: Team, entries: list[Entry], related: RelatedTo) -> list[Entry]:
    linked = set()
    for relation in team.state.relations.values():
        if related.relation is not UNSET and relation.relation_type != related.relation:
            continue
        if (relation.target_type, relation.target_id) == (related.type, related.id):
            linked.add(relation.source_id)
        if (relation.source_type, relation.source_id) == (related.type, related.id):
            linked.add(relation.target_id)
    return [e for e in entries if e.id in linked]


def _score(entry: Entry, phrase: str, terms: list[str]) -> float:
    """How well `entry` matches the search (0: not at all): every term must occur."""
    name = entry.name.lower()
    fields = entry.current.fields
    body = " ".join(str(fields[k]) for k in ("description", "content", "rationale", "constraints", "category",
                                             "source") if fields.get(k) is not None).lower()
    score = 0.0
    for term in terms:
        if term in name:
            score += 2.0
        elif term in body:
            score += 1.0
        else:
            return 0.0
    if phrase in name:
        score += 5.0
    elif phrase in body:
        score += 2.5
    return score + _priority(entry) / 100


def _priority(entry: Entry) -> int:
    """A guideline's priority (a null one read as the default), 0 for the other kinds."""
    return read_field(entry.type, entry.current.fields, "priority") or 0


def _sentences(entry: Entry) -> list[str]:
    """What an entry says, sentence by sentence: the observations of a team entry."""
    fields = entry.current.fields
    return [part for key in TEXT_FIELDS if fields.get(key)
            for part in _SENTENCE.split(str(fields[key]).strip()) if part]


def _matched(entry: Entry, search: str, count: int) -> list[dict[str, Any]]:
    """The sentences of `entry` that best match `search`, as {text, score}, best first."""
    sentences = _sentences(entry)
    scores = word_scores(search, sentences)
    return [{"text": sentences[i], "score": round(scores[i], 4)} for i in best(scores, count, NEAR)]


def _item(team: Team, entry: Entry, args: MemoryQuery, score: float | None) -> dict[str, Any]:
    kind = KINDS[entry.type]
    body: dict[str, Any]
    if args.compact:
        body = {"id": entry.id, kind.label: entry.name}
        if "priority" in entry.current.fields:
            body["priority"] = _priority(entry)
    else:
        body = entry_out(entry, versions=args.include_versions)
    item: dict[str, Any] = {"type": entry.type, "id": entry.id, "scopeType": entry.scope_type,
                            "scopeId": entry.scope_id}
    if score is not None:
        item["score"] = round(score, 3)
    if args.search is not UNSET and args.search.strip() and args.matches_per_entity:
        item["matchedObservations"] = _matched(entry, args.search, args.matches_per_entity)
    item["tags"] = tags_of(team, entry.id)
    item[entry.type] = body
    return item


def _filtered(team: Team, args: MemoryQuery, chain: list[tuple[str, str | None]] | None) -> list[Entry]:
    entries = _entries(team, args, chain)
    if args.tags is not UNSET:
        entries = _tagged(team, entries, args.tags)
    if args.related_to is not UNSET:
        entries = _related(team, entries, args.related_to)
    return entries


def _search(team: Team, args: MemoryQuery, memory: Memory | None) -> ObjectOut:
    chain, _ = _scope(team, args)
    entries = _filtered(team, args, chain)
    scored: list[tuple[float, Entry]]
    semantic = None
    if args.search is not UNSET and args.search.strip():
        phrase = args.search.strip().lower()
        terms = phrase.split()
        if args.semantic_search is True and memory is not None:  # opt-in: see docs/decisions.md
            semantic = similarities(memory, entries, args.search)
        threshold = DEFAULT_THRESHOLD if args.semantic_threshold is UNSET else args.semantic_threshold
        scored = []
        for entry in entries:
            score = _score(entry, phrase, terms)
            similarity = None if semantic is None else semantic[entry.id]
            if similarity is not None and similarity >= threshold:
                score += 10 * similarity
            if score > 0:
                scored.append((score, entry))
        scored.sort(key=lambda pair: -pair[0])
    else:
        scored = [(1.0 + _priority(e) / 100, e) for e in entries]
    limit = 20 if args.limit is UNSET else args.limit
    chosen = scored[args.offset: args.offset + limit]
    more = args.offset + len(chosen) < len(scored)
    meta: dict[str, Any] = {"totalCount": len(scored), "returnedCount": len(chosen), "truncated": more,
                            "hasMore": more}
    if semantic is not None or args.semantic_search is True:
        meta["semantic"] = semantic is not None  # said, not pretended: without embeddings, words only
    return object_out(results=[_item(team, e, args, s) for s, e in chosen], meta=meta)


def _context(team: Team, args: MemoryQuery) -> ObjectOut:
    chain, scope = _scope(team, args)
    entries = _filtered(team, args, chain)
    limit = None if args.limit is UNSET else args.limit
    grouped: dict[str, list[Entry]] = {"tool": [], "guideline": [], "knowledge": []}
    for entry in entries:
        grouped[entry.type].append(entry)
    grouped["guideline"].sort(key=lambda e: -_priority(e))
    answer: dict[str, Any] = {"scope": scope}
    total = returned = 0
    truncated = False
    for entry_type, found in grouped.items():
        shown = found if limit is None else found[:limit]
        total += len(found)
        returned += len(shown)
        truncated = truncated or len(shown) < len(found)
        answer[KINDS[entry_type].plural] = [_item(team, e, args, None)[entry_type] | {"tags": tags_of(team, e.id)}
                                            for e in shown]
    answer["meta"] = {"totalCount": total, "returnedCount": returned, "truncated": truncated, "hasMore": truncated}
    return object_out(**answer)
