"""A segment of the log folded over views already written: how a rebuild bounds its memory.

A rebuild folds the log in memory until its state holds `FOLD_RECORDS` records, lays that
state into the idle slot, and folds the rest a segment at a time: each `Segment` reads
the records its events touch from what is written so far (an `Overlay`, so the fold is the
one every state uses) and keeps only what they changed, which `writes()` then turns into
the changes `LmdbState` makes event by event. The tables end byte for byte as an inline
fold leaves them, which the tests check.

The name index is settled first (each name's live stream as the segment left it, and the
streams created under it in creation order), so the records' own writes find it
already right; entities forgotten in the segment are purged from it last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from chronograph.projections.keys import record_key
from chronograph.projections.records import EntityRecord, RelationRecord
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.states.overlay import Overlay

__all__ = ["Segment", "Write"]

Write = Callable[[LmdbState], None]
"""One change to the written views, made inside a write transaction."""


class Segment(Overlay):
    """The views written so far (read through `base`) with the next events folded on top."""

    def __init__(self, base: LmdbState) -> None:
        super().__init__(base)
        self._seen: dict[str, None] = {}
        self._forgotten: list[tuple[str, str]] = []

    @property
    def size(self) -> int:
        """How many records the segment holds (touched entities and relations, gone ones too)."""
        return len(self._entities) + len(self._relations)

    def saw_workspace(self, workspace: str) -> None:
        self._seen[workspace] = None

    def forget_entity(self, stream: str, workspace: str) -> None:
        super().forget_entity(stream, workspace)
        self._forgotten.append((stream, workspace))

    def writes(self) -> Iterator[Write]:
        """The changes that bring the written views to this segment's end, in the order to make
        them (records in key order); make them in as many transactions as you like."""
        for (workspace, name), live in self._names.items():  # every name an entity was added under is here
            yield partial(LmdbState.settle_name, workspace=workspace, name=name, live=live,
                          streams=self._new_streams.get((workspace, name), ()))
        for stream in sorted(self._entities, key=record_key):
            yield partial(_entity, stream, self._entities[stream])
        for stream in sorted(self._relations, key=record_key):
            yield partial(_relation, stream, self._relations[stream])
        for context in self._contexts.values():
            yield partial(LmdbState.save_context, context=context)
        for workspace in self._seen:
            yield partial(LmdbState.saw_workspace, workspace=workspace)
        for stream, workspace in self._forgotten:
            yield partial(LmdbState.forget_entity, stream=stream, workspace=workspace)


def _entity(stream: str, new: EntityRecord | None, target: LmdbState) -> None:
    old = target.get_entity(stream)
    if old is not None and (new is None or old.seq != new.seq):  # a rename changes in place: names are settled
        target.remove_entity(old)
        old = None
    if new is not None:
        if old is None:
            target.add_entity(new)
        else:
            target.changed_entity(new, old.entity_type)


def _relation(stream: str, new: RelationRecord | None, target: LmdbState) -> None:
    old = target.get_relation(stream)
    if old is not None and (new is None or old.seq != new.seq):
        target.remove_relation(old)
        old = None
    if new is not None:
        if old is None:
            target.add_relation(new)
        else:
            target.changed_relation(new)
