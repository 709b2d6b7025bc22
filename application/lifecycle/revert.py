"""Reverting an entity to an earlier version: `revert_entity`.

A revert appends events; it never rewrites. The entity reverted is the one called `name` now
or, if none is, the one that bore the name last (`tenures.last_bearer`). It restores the state
of the version asked for: type, observations, metadata and name (a rename undone moves the
relations back). A live entity gets an `EntityUpdated` naming the version (`revertedTo`); a
deleted or merged one comes back with an `EntityRestored`, which names the version and the log
position it restores and keeps the entity's createdAt, and with the relations its deletion or
its merge took, between the entities they joined, where those are in the graph now; a merge's
copies of them leave the target; and with the relations with it that entities restored while it
was gone could not get back then (`undoing`). A revert to the state the entity already has
writes nothing.
"""

from __future__ import annotations

from typing import Annotated

from chronograph.application.core.entities import plural
from chronograph.application.core.guards import check_entity
from chronograph.application.core.tenures import last_bearer
from chronograph.application.engine.arguments import D, Name, Version, WriteArgs
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.jsonvalues import same_json
from chronograph.application.engine.outputs import EntitiesOut, entity_out
from chronograph.application.engine.registry import CORE
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, NotFoundError
from chronograph.application.lifecycle.identity import rename
from chronograph.application.lifecycle.undoing import Given, Taking, give_back, taken_from
from chronograph.eventstore import EntityRestored, EntityUpdated
from chronograph.projections import EntityRecord, versions_of
from msgspec import UNSET, Meta, UnsetType

__all__ = ["RevertEntity", "RevertOut"]


class RevertEntity(WriteArgs, kw_only=True):
    name: Annotated[Name, D(description="Its name, even if deleted")]
    to_version: Annotated[int, Meta(ge=1), D(description="The version whose state to restore")]
    expected_version: Version | UnsetType = UNSET


class RevertOut(EntitiesOut, kw_only=True):
    message: Annotated[str, D(description="What the revert did")]
    relations_restored: Annotated[int, D(
        description="Relations its deletion or its merge had taken, restored")] = 0
    relations_not_restored: Annotated[list[str], D(
        description="Relations it had that could not come back, each with why (an end is gone)")] | UnsetType = UNSET
    copies_removed: Annotated[int, D(
        description="Copies of its relations its merge had made on the target, taken back")] = 0
    copies_kept: Annotated[list[str], D(
        description="Copies its merge had made that were changed since, left on the target")] | UnsetType = UNSET


@CORE.command("revert_entity", "Revert Entity",
              "Restore an entity (a deleted or merged one too, with its relations) to an earlier version; the "
              "revert is recorded")
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
    check_entity(batch, args.name, args.expected_version, live)
    state = target.state
    holder = batch.entity(state.name)
    if holder is not None and holder.stream != stream:
        raise DuplicateError(
            f"Entity {args.name!r} was called {state.name!r} at version {args.to_version}, and another entity "
            "has that name now; rename or merge that one first; nothing was written")
    if live is not None and _same(live, state):
        return RevertOut(entities=[entity_out(live)], message=(
            f"{live.name!r} is already as it was at version {args.to_version}; nothing was written"))
    given = Given(0, [], 0, [])
    taking: Taking | None = None
    if live is not None:
        batch.emit(stream, EntityUpdated(
            entity_type=state.entity_type, observations=tuple(state.observations), metadata=state.metadata,
            reverted_to=args.to_version, validity=dict(state.validity),
        ))
        if live.name != state.name:  # a rename undone: the relations follow the name back
            rename(batch, live, state.name)
    else:
        taking = taken_from(batch, stream)
        batch.emit(stream, EntityRestored(
            workspace=batch.workspace, name=state.name, entity_type=state.entity_type,
            observations=tuple(state.observations), metadata=state.metadata, reverted_to=args.to_version,
            restores=target.position, created_at=state.created_at, validity=dict(state.validity),
        ))
        if taking is not None:
            given = give_back(batch, taking, stream)
    restored = batch.state.get_entity(stream)
    assert restored is not None
    return RevertOut(entities=[entity_out(restored)], relations_restored=given.restored,
                     relations_not_restored=given.not_restored or UNSET, copies_removed=given.removed,
                     copies_kept=given.kept or UNSET,
                     message=_told(restored.name, args.to_version, taking, given))


def _told(name: str, version: int, taking: Taking | None, given: Given) -> str:
    """What the revert did, in a sentence."""
    told = f"Restored {name!r} to version {version}"
    how = "its deletion removed" if taking is None or taking.into is None else f"its merge into {taking.into!r} moved"
    if given.restored:
        told += f" with {given.restored} {plural(given.restored, 'relation', 'relations')} {how}"
    if given.removed:
        told += f"; took back the {given.removed} {plural(given.removed, 'copy', 'copies')} the merge made of them"
    if given.undone:
        told += (f"; put back as before the merge {given.undone} {plural(given.undone, 'relation', 'relations')} "
                 "the target held, which it had joined with this entity's")
    if given.owed:
        told += (f"; gave back {given.owed} {plural(given.owed, 'relation', 'relations')} of entities restored while "
                 "it was gone, which their reverts could not")
    if given.not_restored:
        told += (f"; {len(given.not_restored)} {plural(len(given.not_restored), 'relation', 'relations')} "
                 "could not come back (relationsNotRestored says why)")
    if given.kept:
        told += f"; {len(given.kept)} changed since the merge stayed (copiesKept)"
    return told


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
    return (live.name, live.entity_type, live.observations, live.validity) == (
        state.name, state.entity_type, state.observations, state.validity) and same_json(live.metadata, state.metadata)
