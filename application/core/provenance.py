"""Where each observation came from: the event that put it there (when, who, which call).

Asked for with `includeProvenance` on open_nodes and search_nodes. It is read from the
entity's own stream, not stored twice: an observation's provenance is the latest event
that stated it while it was absent or no longer true (created, added, stated again, or
brought by a whole-list update or a revert), up to the moment the read answers for.
"""

from __future__ import annotations

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
from msgspec import UNSET

__all__ = ["provenance_of"]


def provenance_of(log: LogReader, entity: EntityRecord, position: int | None = None) -> list[ObservationProvenanceOut]:
    """The provenance of each of `entity`'s observations, in the entity's order."""
    since: dict[str, Envelope] = {}
    for envelope in log.stream(entity.stream, 1, entity.version):
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
    return [
        ObservationProvenanceOut(observation=o, recorded_at=clock.isoformat(e.recorded_at), actor=e.actor,
                                 correlation_id=e.correlation_id, position=e.position)
        for o in entity.observations if (e := since.get(o)) is not None
    ]
