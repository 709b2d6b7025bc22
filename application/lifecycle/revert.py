"""Reverting an entity to an earlier version: `revert_entity`.

A revert appends events; it never rewrites. The entity reverted is the one called `name` now
or, if none is, the one that bore the name last (`tenures.last_bearer`). It restores the state
of the version asked for: type, observations, metadata and name (a rename undone moves the relations back).
A live entity gets an `EntityUpdated` naming the version (`revertedTo`); a deleted or
merged one comes back with an `EntityRestored`, which names the version and the log
position it restores and keeps the entity's createdAt, and with the relations its
deletion removed, where their other end exists now. A revert to the state the entity
already has writes nothing.
"""

from __future__ import annotations

from typing import Annotated

from chronograph.application.core.entities import entity_label
from chronograph.application.core.tenures import last_bearer
from chronograph.application.engine.arguments import D, Name, Version, WriteArgs
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import EntitiesOut, entity_out
from chronograph.application.engine.registry import CORE
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, NotFoundError
from chronograph.application.lifecycle.identity import created_again, rename
from chronograph.eventstore import EntityDeleted, EntityRestored, EntityUpdated, RelationDeleted
from chronograph.projections import EntityRecord, RelationRecord, relation_stream, versions_of
from msgspec import UNSET, Meta, UnsetType

__all__ = ["RevertEntity", "RevertOut"]


class RevertEntity(WriteArgs, kw_only=True):
    name: Annotated[Name, D(description="Its name, even if deleted")]
    to_version: Annotated[int, Meta(ge=1), D(description="The version whose state to restore")]
    expected_version: Version | UnsetType = UNSET


class RevertOut(EntitiesOut, kw_only=True):
    message: Annotated[str, D(description="What the revert did")]
    relations_restored: Annotated[int, D(description="Relations a deletion had removed, restored")] = 0


@CORE.command("revert_entity", "Revert Entity",
              "Restore an entity (a deleted one too, with its relations) to an earlier version; the revert "
              "is recorded")
def revert_entity(batch: Batch, args: RevertEntity) -> RevertOut:
    """Restore the state an entity had at `toVersion` by appending events (deleted ones too)."""
    stream = _bearer(batch, args.name)
    top = len(batch.tx.positions(stream))
    if args.to_version > top:
        raise InvalidArgumentsError("revert_entity", f"toVersion: {args.name!r} has versions 1 to {top}")
    [target] = versions_of(batch.tx, stream, [args.to_version])
    if not isinstance(target.state, EntityRecord):
        raise InvalidArgumentsError(
            "revert_entity", f"toVersion: version {args.to_version} of {args.name!r} is its deletion; "
            "choose a version at which it existed"
        )
    live = batch.state.get_entity(stream)  # under whatever name it has now
    batch.check(entity_label(args.name), args.expected_version, live)
    state = target.state
    holder = batch.entity(state.name)
    if holder is not None and holder.stream != stream:
        raise DuplicateError(
            f"Entity {args.name!r} was called {state.name!r} at version {args.to_version}, and another entity "
            "has that name now; rename or merge that one first; nothing was written")
    if live is not None and _same(live, state):
        return RevertOut(entities=[entity_out(live)], message=(
            f"{live.name!r} is already as it was at version {args.to_version}; nothing was written"))
    restored_relations = 0
    if live is not None:
        batch.emit(stream, EntityUpdated(
            entity_type=state.entity_type, observations=tuple(state.observations), metadata=state.metadata,
            reverted_to=args.to_version, validity=dict(state.validity),
        ))
        if live.name != state.name:  # a rename undone: the relations follow the name back
            rename(batch, live, state.name)
    else:
        removed = _removed_with(batch, stream)
        batch.emit(stream, EntityRestored(
            workspace=batch.workspace, name=state.name, entity_type=state.entity_type,
            observations=tuple(state.observations), metadata=state.metadata, reverted_to=args.to_version,
            restores=target.position, created_at=state.created_at, validity=dict(state.validity),
        ))
        restored_relations = _restore(batch, removed, state.name)
    restored = batch.state.get_entity(stream)
    assert restored is not None
    return RevertOut(entities=[entity_out(restored)], relations_restored=restored_relations, message=(
        f"Restored {restored.name!r} to version {args.to_version}"
        + (f" with {restored_relations} relations its deletion removed" if restored_relations else "")))


def _bearer(batch: Batch, name: str) -> str:
    """The stream of the entity called `name` now, or else of the one that bore the name last (the
    names index lists them by when each first bore it, not by who bears it now).

    Raises:
        NotFoundError: If no entity ever bore `name` in the workspace.
    """
    live = batch.entity(name)
    if live is not None:
        return live.stream
    last = last_bearer(batch.tx, batch.state.name_streams(batch.workspace, name), batch.workspace, name)
    if last is None:
        raise NotFoundError(f"Entity with name {name} not found")
    return last[0]


def _same(live: EntityRecord, state: EntityRecord) -> bool:
    return (live.name, live.entity_type, live.observations, live.metadata, live.validity) == (
        state.name, state.entity_type, state.observations, state.metadata, state.validity)


def _removed_with(batch: Batch, stream: str) -> list[tuple[str, RelationRecord]]:
    """The relations the deletion of `stream` removed in the same call: (old entity name, relation)."""
    last = next(iter(batch.tx.stream_backward(stream)), None)
    if last is None or not isinstance(last.event, EntityDeleted):
        return []  # merged, or never deleted: its relations were moved or are its own events
    [before] = versions_of(batch.tx, stream, [last.version - 1])
    assert isinstance(before.state, EntityRecord)
    removed = []
    position = last.position - 1
    while position > 0:
        envelope = batch.tx.get(position)
        if envelope is None or envelope.correlation_id != last.correlation_id:
            break
        if isinstance(envelope.event, RelationDeleted) and envelope.version > 1:
            [prior] = versions_of(batch.tx, envelope.stream, [envelope.version - 1])
            if isinstance(prior.state, RelationRecord) and before.state.name in (prior.state.source,
                                                                                   prior.state.target):
                removed.append((before.state.name, prior.state))
        position -= 1
    return removed[::-1]


def _restore(batch: Batch, removed: list[tuple[str, RelationRecord]], name: str) -> int:
    """Re-create the removed relations whose other end exists now; return how many."""
    restored = 0
    for old, relation in removed:
        source = name if relation.source == old else relation.source
        target = name if relation.target == old else relation.target
        if not batch.exists(source) or not batch.exists(target):
            continue
        if batch.relation(source, relation.relation_type, target) is not None:
            continue
        batch.emit(relation_stream(batch.workspace, source, relation.relation_type, target),
                   created_again(batch.workspace, relation, source, target))
        restored += 1
    return restored
