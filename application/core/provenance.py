"""Where each observation came from: the event that put it there (when, who, which call).

Asked for with `includeProvenance` on open_nodes and search_nodes. It is read from the
entity's own stream, not stored twice: an observation's provenance is the latest event
that stated it while it was absent or no longer true (created, added, stated again, or
brought by a whole-list update or a revert), up to the moment the read answers for. One a
merge moved here (`ObservationsAdded.moved_from`) is followed to the entity that recorded it,
as that entity's stream said before the merge; the merge is named beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

from chronograph.application.engine.outputs import ObservationProvenanceOut
from chronograph.eventstore import (
    EntityCreated,
    EntityRestored,
    EntityUpdated,
    Envelope,
    LogReader,
    ObservationsAdded,
    ObservationsDeleted,
    clock,
)
from chronograph.projections import EntityRecord
from msgspec import UNSET, UnsetType

__all__ = ["provenance_of", "recorded"]


def provenance_of(log: LogReader, entity: EntityRecord, position: int | None = None,
                  shown: Sequence[str] | UnsetType | None = None) -> list[ObservationProvenanceOut]:
    """The provenance of each of `entity`'s observations (of those `shown`, when an answer shows
    only some: never of one it leaves out), in the entity's order."""
    found = recorded(log, entity, position)
    answered = None if shown is None or shown is UNSET else set(shown)
    out = []
    for observation in entity.observations:
        if (pair := found.get(observation)) is None or (answered is not None and observation not in answered):
            continue
        first, merge = pair
        out.append(ObservationProvenanceOut(
            observation=observation, recorded_at=clock.isoformat(first.recorded_at), actor=first.actor,
            correlation_id=first.correlation_id, position=first.position,
            moved_at=UNSET if merge is None else clock.isoformat(merge.recorded_at),
            moved_by=UNSET if merge is None else merge.correlation_id))
    return out


def recorded(log: LogReader, entity: EntityRecord,
             position: int | None = None) -> dict[str, tuple[Envelope, Envelope | None]]:
    """observation -> (the event that recorded it, the merge that moved it here or None), for
    `entity`'s observations as of `position`: what the stale check orders facts by."""
    since = _since(log, entity.stream, entity.version, position)
    sources: dict[tuple[str, int], dict[str, Envelope]] = {}
    found: dict[str, tuple[Envelope, Envelope | None]] = {}
    for observation in entity.observations:
        envelope = since.get(observation)
        if envelope is not None:
            found[observation] = (_origin(log, observation, envelope, sources), _moved(envelope))
    return found


def _since(log: LogReader, stream: str, version: int | None, position: int | None) -> dict[str, Envelope]:
    """observation -> the latest event of `stream` that stated it while it was absent or no longer
    true, up to `version` and `position` (an observation held then, and only those)."""
    since: dict[str, Envelope] = {}
    for envelope in log.stream(stream, 1, version):
        if position is not None and envelope.position > position:
            break
        event = envelope.event
        if isinstance(event, EntityRestored):  # what it says again, it said since then
            since = {o: since.get(o, envelope) for o in event.observations}
        elif isinstance(event, EntityCreated):
            since = {o: envelope for o in event.observations}
        elif isinstance(event, ObservationsAdded):
            # one it held already is stated again (its valid time had ended): recorded anew
            since.update(dict.fromkeys(event.observations, envelope))
        elif isinstance(event, ObservationsDeleted):
            for observation in event.observations:
                since.pop(observation, None)
        elif isinstance(event, EntityUpdated) and event.observations is not UNSET:
            since = {o: since.get(o, envelope) for o in event.observations}
    return since


def _moved(envelope: Envelope) -> Envelope | None:
    event = envelope.event
    return envelope if isinstance(event, ObservationsAdded) and event.moved_from is not UNSET else None


def _origin(log: LogReader, observation: str, envelope: Envelope,
            sources: dict[tuple[str, int], dict[str, Envelope]]) -> Envelope:
    """The event that recorded `observation`, following the merges that moved it (each to the
    stream it came from, as that stream was before the merge; positions fall, so it ends)."""
    while (merge := _moved(envelope)) is not None:
        assert isinstance(merge.event, ObservationsAdded) and isinstance(merge.event.moved_from, str)
        key = (merge.event.moved_from, merge.position)
        if key not in sources:
            sources[key] = _since(log, merge.event.moved_from, None, merge.position - 1)
        earlier = sources[key].get(observation)
        if earlier is None:  # the source was forgotten since: the merge is all there is to say
            return envelope
        envelope = earlier
    return envelope
