"""Moving team entries in and out (`memory_export`, `memory_import`).

Export writes JSON (what import reads back), Markdown or YAML, as text in the reply, an entry
at a time (`documents`): an answer over the reply limit is refused where it passes it.
Import is all or nothing: the whole file is checked first (its shape, its scopes, and
with `conflictStrategy: "error"` every existing entry), then written in one transaction.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from chronograph.application.engine.arguments import Args, parse
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.budget import CHAR
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.service import Memory
from chronograph.application.engine.sink import Overflow, Sink
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, ReplyTooLargeError
from chronograph.application.team.common import TEAM, Short, Team, TeamArgs, new_id
from chronograph.application.team.documents import write_document
from chronograph.application.team.entries import ARGUMENTS, KINDS, entry_fields, entry_out, is_live, new_fields
from chronograph.application.team.links import RelationType, Taggable, is_target, relation_out
from chronograph.eventstore import ContentErased, clock
from chronograph.eventstore.teamevents import (
    EntryAdded,
    EntryDeactivated,
    EntryReactivated,
    EntryRelationCreated,
    EntryUpdated,
    TagAttached,
    TagCreated,
)
from chronograph.projections.team.state import Entry
from msgspec import UNSET, Meta, UnsetType

__all__ = ["MemoryExport", "MemoryImport"]

PLURALS = {"tools": "tool", "guidelines": "guideline", "knowledge": "knowledge"}
Plural = Literal["tools", "guidelines", "knowledge"]
ScopeType = Literal["global", "org", "project", "session"]
TOOL = "memory_import"


class MemoryExport(TeamArgs, kw_only=True):
    action: Literal["export"]
    types: list[Plural] | UnsetType = UNSET
    scope_type: ScopeType | UnsetType = UNSET
    scope_id: Short | UnsetType = UNSET
    tags: Annotated[list[Short], Meta(max_length=100)] | UnsetType = UNSET
    format: Literal["json", "markdown", "yaml"] = "json"
    include_versions: bool = False
    include_inactive: bool = False


@TEAM.query("memory_export", "Export", "Export entries to JSON, Markdown or YAML (types, scopeType/scopeId, tags "
            "(any of), includeVersions, includeInactive); the text is in the reply's content")
def memory_export(memory: Memory, args: MemoryExport) -> ObjectOut:
    team = Team.of(memory, "memory_export")
    state = team.state
    types = [PLURALS[t] for t in args.types] if args.types is not UNSET and args.types else list(KINDS)
    scope_id = None
    if args.scope_type is not UNSET:
        scope_id = team.check_scope("memory_export", args.scope_type, args.scope_id)
    wanted = {state.tag_names[n] for n in args.tags if n in state.tag_names} if args.tags is not UNSET else None
    chosen: list[Entry] = [
        e for e in state.entries.values()
        if e.type in types and is_live(e, team.now, include_inactive=args.include_inactive)
        and (args.scope_type is UNSET or (e.scope_type, e.scope_id) == (args.scope_type, scope_id))
        and (wanted is None or wanted.intersection(state.tags_of.get(e.id, ())))
    ]
    at = clock.isoformat(team.now)
    by_kind: dict[str, list[Entry]] = {KINDS[t].plural: [] for t in types}
    for entry in chosen:
        by_kind[KINDS[entry.type].plural].append(entry)

    def shaped(entries: list[Entry]) -> Iterator[dict[str, Any]]:
        for entry in entries:
            out = entry_out(entry, versions=args.include_versions)
            out["tags"] = [state.tags[t].name for t in state.tags_of.get(entry.id, ())]
            yield out

    ids = {e.id for e in chosen}
    relations = (relation_out(r) for r in state.relations.values() if r.source_id in ids or r.target_id in ids)
    limit = memory.limit_for(memory_export)
    sink = Sink(limit=None if limit is None else limit // CHAR)  # the reply carries the text twice
    try:
        write_document(args.format, sink, at, {plural: shaped(entries) for plural, entries in by_kind.items()},
                       relations)
    except Overflow as over:
        assert limit is not None
        raise ReplyTooLargeError("memory_export", over.chars * CHAR, limit, "Export fewer entries at a time: name "
                                 "types, scopeType/scopeId or tags.", at_least=True) from None
    content = sink.text()
    metadata = {"exportedAt": at, "entryCount": len(chosen), "types": [KINDS[t].plural for t in types],
                "scopeType": None if args.scope_type is UNSET else args.scope_type, "scopeId": scope_id}
    return object_out(success=True, format=args.format, content=content,
                 metadata={k: v for k, v in metadata.items() if v is not None})


class ScopeTarget(TeamArgs, kw_only=True):
    type: ScopeType
    id: Short | UnsetType = UNSET


class MemoryImport(TeamArgs, kw_only=True):
    action: Literal["import"]
    content: Annotated[str, Meta(max_length=32 * 2**20)]
    format: Literal["json", "markdown", "yaml"] = "json"
    conflict_strategy: Literal["skip", "update", "replace", "error"] = "update"
    scope_mapping: dict[str, ScopeTarget] = {}
    generate_new_ids: bool = False
    imported_by: Short | UnsetType = UNSET


class _Own(Args, kw_only=True):
    """An entry's id and tags in a file, held to what the tools take."""

    id: Short | UnsetType = UNSET
    tags: list[Short] = []


class _Link(Args, kw_only=True):
    """A relation of the file, held to what memory_relation takes."""

    source_type: Taggable
    source_id: Short
    target_type: Taggable
    target_id: Short
    relation_type: RelationType


LINK_FIELDS = ("sourceType", "sourceId", "targetType", "targetId", "relationType")


class _Item:
    """One entry of the file, checked."""

    def __init__(self, entry_type: str, raw: dict[str, Any], scope: tuple[str, str | None], fields: dict[str, Any],
                 own: _Own) -> None:
        self.type = entry_type
        self.id = None if own.id is UNSET else own.id
        self.name: str = raw[KINDS[entry_type].label]
        self.scope = scope
        self.fields = fields
        """What the file sets (an update writes these)."""
        self.whole = new_fields(KINDS[entry_type], TOOL, fields, "import")
        """With what `add` sets by default (a new entry, or one the file replaces, is this)."""
        self.tags = own.tags
        self.active: bool | None = raw.get("isActive")
        """What the file says of it (None: nothing; an export with includeInactive says false)."""


@TEAM.command("memory_import", "Import", "Import entries from a JSON export: conflictStrategy skip, update "
              "(default), replace or error; scopeMapping {\"project:old\": {type, id}}; generateNewIds. All or "
              "nothing: a bad file writes nothing")
def memory_import(batch: Batch, args: MemoryImport) -> ObjectOut:
    if args.format != "json":
        raise InvalidArgumentsError(TOOL, f"format: only JSON can be imported ({args.format} is an export-only format)")
    team = Team.of(batch, TOOL)
    items, relations = _parse(team, args)
    state = team.state
    if args.conflict_strategy == "error":
        seen: set[object] = set()  # (kind, scope, name) keys and ids
        clashes = []
        for item in items:  # with the store, or with an entry before it in the file
            key = (item.type, *item.scope, item.name)
            by_id = item.id if item.id and not args.generate_new_ids else None  # new ids: the file's say nothing
            if _existing(team, item, args) is not None or key in seen or (by_id and by_id in seen):
                clashes.append(f"{item.type} {item.name!r}")
            seen.add(key)
            if by_id:
                seen.add(by_id)
        if clashes:
            raise DuplicateError(f"{len(clashes)} entries already exist or come twice in the file "
                                 f"({', '.join(clashes[:5])}{', ...' if len(clashes) > 5 else ''}); nothing was "
                                 "imported")
    by = None if args.imported_by is UNSET else args.imported_by
    details = {kind.plural: {"created": 0, "updated": 0, "skipped": 0} for kind in KINDS.values()}
    new_ids: dict[str, str] = {}
    renamed: list[dict[str, str]] = []
    """entries created under another id than the file's, though it asked to keep them"""
    for item in items:
        counts = details[KINDS[item.type].plural]
        entry = _existing(team, item, args)  # an entry the file named before is there by now
        if entry is None:
            entry_id, continued, why = _id_for(team, item, args)
            if why is not None:
                renamed.append({"id": str(item.id), "newId": entry_id, "reason": why})
            team.emit(f"am/entry/{entry_id}", EntryAdded(
                entry_type=item.type, entry_id=entry_id, scope_type=item.scope[0], scope_id=item.scope[1],  # type: ignore[arg-type]
                name=item.name, fields=item.whole, created_by=by, writer=team.writer), new=not continued)
            counts["created"] += 1
            entry = state.entries[entry_id]
        elif args.conflict_strategy == "skip":
            counts["skipped"] += 1
            continue
        else:
            fields = item.fields
            if args.conflict_strategy == "replace":  # what the file does not set is cleared, or add's default
                fields = {key: None for key in entry.current.fields} | item.whole
            changed = {k: v for k, v in fields.items() if entry.current.fields.get(k) != v}
            if changed:
                team.emit(f"am/entry/{entry.id}", EntryUpdated(
                    fields=changed, change_reason=f"Imported ({args.conflict_strategy})", created_by=by,
                    writer=team.writer))
            activated = item.active is not None and item.active != entry.active
            counts["updated" if changed or activated else "skipped"] += 1
        if item.id:
            new_ids[item.id] = entry.id
        if item.active is not None and item.active != entry.active:  # as the file says, kept in the history
            team.emit(f"am/entry/{entry.id}", EntryReactivated() if item.active else EntryDeactivated(
                reason=f"Imported inactive ({args.conflict_strategy})"))
        _tag(team, entry, item.tags)
    errors: list[str] = []

    # With new ids, one the file gives two entries names neither (else both lines are one entry)
    named = Counter(item.id for item in items if item.id) if args.generate_new_ids else Counter()
    twice = {ident for ident, count in named.items() if count > 1}

    def end(kind: str, old: str) -> str:
        """An end's id here: an imported entry's, or a scope's as scopeMapping maps it."""
        mapped = args.scope_mapping.get(f"{kind}:{old}")
        if old not in new_ids and mapped is not None and mapped.type == kind and mapped.id is not UNSET:
            return mapped.id
        return new_ids.get(old, old)

    for link in relations:
        shared = [ident for ident in (link.source_id, link.target_id) if ident in twice]
        if shared:
            errors.append(f"relation {link.source_id} {link.relation_type} {link.target_id} not imported: the file "
                          f"gives the id {shared[0]} to more than one entry")
            continue
        source, target = end(link.source_type, link.source_id), end(link.target_type, link.target_id)
        missing = [f"{kind} {ident}" for kind, ident in ((link.source_type, source), (link.target_type, target))
                   if not is_target(team, kind, ident)]
        if missing:
            errors.append(f"relation {link.source_id} {link.relation_type} {link.target_id} not imported: no "
                          f"{' and no '.join(missing)} here (map a scope with scopeMapping)")
            continue
        if not any(
            (r.source_id, r.target_id, r.relation_type) == (source, target, link.relation_type)
            for r in state.relations.values()
        ):
            relation_id = new_id("rel")
            team.emit(f"am/relation/{relation_id}", EntryRelationCreated(
                relation_id=relation_id, source_type=link.source_type, source_id=source,
                target_type=link.target_type, target_id=target, relation_type=link.relation_type), new=True)
    totals = {key: sum(d[key] for d in details.values()) for key in ("created", "updated", "skipped")}
    said = {"newIds": renamed} if renamed else {}
    return object_out(success=True, **totals, errors=errors, details=details, **said)


def _parse(team: Team, args: MemoryImport) -> tuple[list[_Item], list[_Link]]:
    try:
        document = json.loads(args.content)
    except (ValueError, RecursionError) as error:
        raise InvalidArgumentsError(TOOL, f"content is not JSON: {error}; nothing was imported") from None
    if not isinstance(document, dict) or not isinstance(document.get("entries"), dict):
        raise InvalidArgumentsError(TOOL, "content must be a JSON object with an `entries` object (what "
                                    "memory_export writes); nothing was imported")
    items, problems = [], []
    for plural, entries in document["entries"].items():
        if plural not in PLURALS or not isinstance(entries, list):
            problems.append(f"entries.{plural}: expected tools, guidelines or knowledge, each a list")
            continue
        kind = KINDS[PLURALS[plural]]
        for index, raw in enumerate(entries):
            where = f"entries.{plural}[{index}]"
            problem = _problem(kind.label, raw)
            if problem:
                problems.append(f"{where}: {problem}")
                continue
            key = f"{raw['scopeType']}:{raw.get('scopeId') or ''}"
            mapped = args.scope_mapping.get(key)
            scope_type = mapped.type if mapped else raw["scopeType"]
            scope_id = (None if mapped.id is UNSET else mapped.id) if mapped else raw.get("scopeId")
            try:
                checked = team.check_scope(TOOL, scope_type, scope_id)
            except Exception as error:  # noqa: BLE001 (collected, reported together below)
                problems.append(f"{where}: {error} (map it with scopeMapping {{\"{key}\": {{...}}}})")
                continue
            current = raw.get("currentVersion") or {}
            known = (*kind.main, *kind.versioned)
            given = {k: v for k, v in {**raw, **current}.items() if k in known and v is not None}
            tags = raw.get("tags") or []
            own = {"tags": [t for t in tags if isinstance(t, str) and t] if isinstance(tags, list) else tags}
            if isinstance(raw.get("id"), str):
                own["id"] = raw["id"]
            try:
                parsed = parse(TOOL, {"action": "add", kind.label: raw[kind.label], **given}, ARGUMENTS[kind.type])
                fields = entry_fields(kind, TOOL, parsed)
                items.append(_Item(kind.type, raw, (scope_type, checked), fields, parse(TOOL, own, _Own)))
            except InvalidArgumentsError as error:
                problems.append(f"{where}: {error.problem}")
    relations = []
    links = document.get("relations") or []
    for index, raw in enumerate(links if isinstance(links, list) else [links]):
        try:
            if not isinstance(raw, dict):
                raise InvalidArgumentsError(TOOL, "expected an object")
            relations.append(parse(TOOL, {k: raw[k] for k in LINK_FIELDS if k in raw}, _Link))
        except InvalidArgumentsError as error:
            problems.append(f"relations[{index}]: {error.problem}")
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise InvalidArgumentsError(TOOL, f"content: {len(problems)} entries or relations cannot be imported: "
                                    f"{shown}; nothing was imported")
    return items, relations


def _problem(label: str, raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return "expected an object"
    if not isinstance(raw.get(label), str) or not raw[label].strip():
        return f"{label} is missing"
    if raw.get("scopeType") not in ("global", "org", "project", "session"):
        return "scopeType must be global, org, project or session"
    if "currentVersion" in raw and not isinstance(raw["currentVersion"], dict):
        return "currentVersion must be an object"
    if raw.get("isActive") is not None and not isinstance(raw["isActive"], bool):
        return "isActive must be true or false"
    return None


def _existing(team: Team, item: _Item, args: MemoryImport) -> Entry | None:
    """The entry `item` is: the one of its id, if of its type in the scope it goes to (as mapped),
    else the one of its name there. An id held in another scope is another entry: writing the
    file's content there would change the source of a copy instead of making the copy."""
    if item.id and not args.generate_new_ids:
        entry = team.state.entries.get(item.id)
        if entry is not None and entry.type == item.type and (entry.scope_type, entry.scope_id) == item.scope:
            return entry
    return team.state.entry_named(item.type, item.scope[0], item.scope[1], item.name)


def _id_for(team: Team, item: _Item, args: MemoryImport) -> tuple[str, bool, str | None]:
    """The id a new entry of `item` gets, whether its stream is continued, and why it is not the
    file's id (None: it is, or the file gave none, or new ids were asked for).

    The file's id is kept when no entry holds it: a stream the log holds for it from before a
    reset goes on (the entry's history stays one); one that forgetting erased is never written
    again (its erasure stays whole and a later forget finds the entry), nor one of another kind.
    """
    fresh = new_id(KINDS[item.type].prefix)
    if not item.id or args.generate_new_ids:
        return fresh, False, None
    held = team.state.entries.get(item.id)
    if held is not None:
        where = "the global scope" if held.scope_id is None else f"{held.scope_type} {held.scope_id}"
        return fresh, False, f"{item.id} is a {held.type} of {where} here"
    first = team.first_in_log(f"am/entry/{item.id}")
    if first is None:
        return item.id, False, None
    if isinstance(first, EntryAdded) and first.entry_type == item.type:
        return item.id, True, None
    if isinstance(first, ContentErased):
        return fresh, False, f"{item.id} was forgotten here"
    return fresh, False, f"{item.id} was another kind of entry here"


def _tag(team: Team, entry: Entry, names: list[str]) -> None:
    state = team.state
    for name in names:
        tag_id = state.tag_names.get(name)
        if tag_id is None:
            tag_id = new_id("tag")
            team.emit(f"am/tag/{tag_id}", TagCreated(tag_id=tag_id, name=name), new=True)
        if tag_id not in state.tags_of.get(entry.id, ()):
            team.emit(f"am/tagging/{entry.id}", TagAttached(entry_type=entry.type, entry_id=entry.id, tag_id=tag_id))
