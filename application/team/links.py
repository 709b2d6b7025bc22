"""What ties team entries together: tags and explicit relations (`memory_tag`, `memory_relation`)."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError, NotFoundError
from chronograph.application.team.common import TEAM, Page, Short, Team, iso, new_id, page, require
from chronograph.eventstore.teamevents import (
    EntryRelationCreated,
    EntryRelationDeleted,
    TagAttached,
    TagCreated,
    TagDetached,
)
from chronograph.projections.team.state import EntryRelation, Tag
from msgspec import UNSET, UnsetType

__all__ = ["RELATION_TYPES", "RelationType", "Taggable", "check_target", "is_target", "relation_out", "tag_out",
           "tags_of"]

Taggable = Literal["tool", "guideline", "knowledge", "project"]
RelationType = Literal["applies_to", "depends_on", "conflicts_with", "related_to"]
RELATION_TYPES: tuple[str, ...] = get_args(RelationType)
_SLUG = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def tag_out(tag: Tag) -> dict[str, Any]:
    return {"id": tag.id, "name": tag.name, "category": tag.category, "description": tag.description,
            "isPredefined": False, "createdAt": iso(tag.created_at)}


def tags_of(team: Team, entry_id: str) -> list[dict[str, str]]:
    """The tags of an entry, as queries show them: id and name."""
    tags = team.state.tags
    return [{"id": tag_id, "name": tags[tag_id].name} for tag_id in team.state.tags_of.get(entry_id, ())]


def relation_out(relation: EntryRelation) -> dict[str, Any]:
    return {"id": relation.id, "sourceType": relation.source_type, "sourceId": relation.source_id,
            "targetType": relation.target_type, "targetId": relation.target_id,
            "relationType": relation.relation_type, "createdAt": iso(relation.created_at)}


def check_target(team: Team, entry_type: str, entry_id: str) -> None:
    """Raise NotFoundError unless an entry (or project) of that type and id exists."""
    if not is_target(team, entry_type, entry_id):
        raise NotFoundError(f"{entry_type.capitalize()} {entry_id!r} not found")


def is_target(team: Team, entry_type: str, entry_id: str) -> bool:
    """Whether an entry (or project) of that type and id exists."""
    state = team.state
    if entry_type == "project":
        return entry_id in state.projects
    entry = state.entries.get(entry_id)
    return entry is not None and entry.type == entry_type


class MemoryTag(Page, kw_only=True):
    action: Literal["create", "list", "attach", "detach", "for_entry"]
    name: Short | UnsetType = UNSET
    category: Short | UnsetType = UNSET
    description: Short | UnsetType = UNSET
    is_predefined: bool | UnsetType = UNSET
    entry_type: Taggable | UnsetType = UNSET
    entry_id: Short | UnsetType = UNSET
    tag_id: Short | UnsetType = UNSET
    tag_name: Short | UnsetType = UNSET


@TEAM.command("memory_tag", "Tags", "Manage tags for categorizing entries. Actions: create (returns the existing "
              "tag with existed: true), list, attach (tagId or tagName, created if missing), detach, for_entry",
              kind="delete", reads={"list", "for_entry"})
def memory_tag(host: Batch | Memory, args: MemoryTag) -> ObjectOut:
    team = Team.of(host, "memory_tag")
    state = team.state
    if args.action == "list":
        tags = [t for t in state.tags.values() if (args.category is UNSET or t.category == args.category)
                and args.is_predefined is not True]
        chosen, meta = page(tags, args)
        return object_out(tags=[tag_out(t) for t in chosen], meta=meta)
    if args.action == "create":
        require("memory_tag", "create", name=args.name)
        held = state.tag_names.get(str(args.name))
        if held is not None:
            return object_out(success=True, existed=True, tag=tag_out(state.tags[held]))
        tag = _create(team, str(args.name), args)
        return object_out(success=True, existed=False, tag=tag_out(tag))
    require("memory_tag", args.action, entryType=args.entry_type, entryId=args.entry_id)
    entry_type, entry_id = str(args.entry_type), str(args.entry_id)
    check_target(team, entry_type, entry_id)
    if args.action == "for_entry":
        return object_out(tags=[tag_out(state.tags[t]) for t in state.tags_of.get(entry_id, ())])
    if args.tag_id is not UNSET:
        if args.tag_id not in state.tags:
            raise NotFoundError(f"Tag {args.tag_id!r} not found")
        tag = state.tags[args.tag_id]
    elif args.tag_name is not UNSET:
        held = state.tag_names.get(args.tag_name)
        if held is None and args.action == "detach":
            raise NotFoundError(f"Tag named {args.tag_name!r} not found")
        tag = state.tags[held] if held is not None else _create(team, args.tag_name, args, plain=True)
    else:
        raise InvalidArgumentsError("memory_tag", f"tagId or tagName is required for action {args.action!r}")
    attached = tag.id in state.tags_of.get(entry_id, ())
    stream = f"am/tagging/{entry_id}"
    if args.action == "attach" and not attached:
        team.emit(stream, TagAttached(entry_type=entry_type, entry_id=entry_id, tag_id=tag.id))
    elif args.action == "detach" and attached:
        team.emit(stream, TagDetached(entry_type=entry_type, entry_id=entry_id, tag_id=tag.id))
    return object_out(success=True, entryType=entry_type, entryId=entry_id, tag=tag_out(tag),
                 changed=attached != (args.action == "attach"))


def _create(team: Team, name: str, args: MemoryTag, *, plain: bool = False) -> Tag:
    """A new tag called `name`: ``tag_<name>`` when that is an identifier no tag holds, else a fresh id.

    A reset empties the state but not the log, so the name's stream may be there already: it goes
    on (a tag is never erased, so nothing it held is brought back), and the name keeps its id.
    """
    slug = f"tag_{name}" if _SLUG.fullmatch(name) else ""
    tag_id = slug if slug and slug not in team.state.tags else new_id("tag")
    team.emit(f"am/tag/{tag_id}", TagCreated(
        tag_id=tag_id, name=name, category=None if plain or args.category is UNSET else args.category,
        description=None if plain or args.description is UNSET else args.description), new=tag_id != slug)
    return team.state.tags[tag_id]


class MemoryRelation(Page, kw_only=True):
    action: Literal["create", "list", "delete"]
    id: Short | UnsetType = UNSET
    source_type: Taggable | UnsetType = UNSET
    source_id: Short | UnsetType = UNSET
    target_type: Taggable | UnsetType = UNSET
    target_id: Short | UnsetType = UNSET
    relation_type: RelationType | UnsetType = UNSET


@TEAM.command("memory_relation", "Entry Relations", "Create explicit links between entries (applies_to, depends_on, "
              "conflicts_with, related_to). Actions: create, list, delete (by id or by its fields)",
              kind="delete", reads={"list"})
def memory_relation(host: Batch | Memory, args: MemoryRelation) -> ObjectOut:
    team = Team.of(host, "memory_relation")
    matching = [r for r in team.state.relations.values() if _matches(r, args)]
    if args.action == "list":
        chosen, meta = page(matching, args)
        return object_out(relations=[relation_out(r) for r in chosen], meta=meta)
    if args.action == "delete":
        if args.id is not UNSET:
            relation = team.state.relations.get(args.id)
            if relation is None:
                raise NotFoundError(f"Relation {args.id!r} not found")
        else:
            require("memory_relation", "delete", sourceType=args.source_type, sourceId=args.source_id,
                    targetType=args.target_type, targetId=args.target_id, relationType=args.relation_type)
            if not matching:
                raise NotFoundError("No relation with these sourceType, sourceId, targetType, targetId and "
                                    "relationType")
            relation = matching[0]
        team.emit(f"am/relation/{relation.id}", EntryRelationDeleted())
        return object_out(success=True, deleted=relation_out(relation))
    require("memory_relation", "create", sourceType=args.source_type, sourceId=args.source_id,
            targetType=args.target_type, targetId=args.target_id, relationType=args.relation_type)
    check_target(team, str(args.source_type), str(args.source_id))
    check_target(team, str(args.target_type), str(args.target_id))
    if matching:
        return object_out(success=True, existed=True, relation=relation_out(matching[0]))
    relation_id = new_id("rel")
    team.emit(f"am/relation/{relation_id}", EntryRelationCreated(
        relation_id=relation_id, source_type=str(args.source_type), source_id=str(args.source_id),
        target_type=str(args.target_type), target_id=str(args.target_id), relation_type=str(args.relation_type)),
        new=True)
    return object_out(success=True, relation=relation_out(team.state.relations[relation_id]))


def _matches(relation: EntryRelation, args: MemoryRelation) -> bool:
    return all(wanted is UNSET or getattr(relation, field) == wanted for field, wanted in (
        ("source_type", args.source_type), ("source_id", args.source_id), ("target_type", args.target_type),
        ("target_id", args.target_id), ("relation_type", args.relation_type)))
