"""The overlay: the fold over the live views, changed in dictionaries, the views untouched."""

from __future__ import annotations

import pytest
from chronograph.eventstore import (
    NO_STREAM,
    EntityCreated,
    EntityDeleted,
    Envelope,
    Event,
    LmdbLog,
    ObservationsAdded,
    RelationCreated,
    StreamWrite,
)
from chronograph.projections import LmdbState, Overlay, Views, apply, relation_stream
from chronograph.projections.errors import ViewsDamagedError
from chronograph.projections.keys import record_key


def envelope(position: int, stream: str, version: int, event: Event) -> Envelope:
    return Envelope(position, stream, version, position, 1, "t", "c", None, event)


def seed(views: Views) -> None:
    events = [
        StreamWrite("e1", [EntityCreated(workspace="w", name="ada", entity_type="person", observations=("a",))],
                    NO_STREAM),
        StreamWrite("e2", [EntityCreated(workspace="w", name="bob", entity_type="person")], NO_STREAM),
        StreamWrite(relation_stream("w", "ada", "knows", "bob"),
                    [RelationCreated(workspace="w", source="ada", target="bob", relation_type="knows")]),
    ]
    views.transact(lambda tx, state: tx.append(events, actor="t"))


def test_changes_fold_into_the_overlay_and_never_into_the_views(store: LmdbLog) -> None:
    views = Views(store)
    seed(views)

    def work(tx, state: LmdbState) -> None:  # type: ignore[no-untyped-def]
        overlay = Overlay(state)
        apply(overlay, envelope(4, "e1", 2, ObservationsAdded(observations=("b",))))
        apply(overlay, envelope(5, "e2", 2, EntityDeleted()))
        assert overlay.entity("w", "ada").observations == ["a", "b"]  # type: ignore[union-attr]
        assert overlay.entity("w", "bob") is None
        assert state.entity("w", "ada").observations == ["a"]  # type: ignore[union-attr]
        assert state.entity("w", "bob") is not None

    views.transact(work)


def test_relations_of_a_name_follow_what_the_overlay_created_and_deleted(store: LmdbLog) -> None:
    views = Views(store)
    seed(views)

    def work(tx, state: LmdbState) -> None:  # type: ignore[no-untyped-def]
        overlay = Overlay(state)
        apply(overlay, envelope(4, "e3", 1, EntityCreated(workspace="w", name="cy", entity_type="person")))
        apply(overlay, envelope(5, relation_stream("w", "cy", "knows", "ada"),
                                1, RelationCreated(workspace="w", source="cy", target="ada", relation_type="knows")))
        known = overlay.relations_of("w", "ada")
        assert [(r.source, r.target) for r in known] == [("ada", "bob"), ("cy", "ada")]
        assert overlay.name_streams("w", "cy") == ("e3",)

    views.transact(work)


def test_the_entities_created_or_restored_after_a_position_follow_the_overlay(store: LmdbLog) -> None:
    views = Views(store)
    seed(views)  # ada at 1, bob at 2
    views.transact(lambda tx, state: tx.append([StreamWrite("e1", [EntityDeleted()])], actor="t"))  # 4
    views.transact(lambda tx, state: tx.append([StreamWrite("e1", [EntityCreated(  # 5: back, later in the order
        workspace="w", name="ada", entity_type="person")])], actor="t"))

    def work(tx, state: LmdbState) -> None:  # type: ignore[no-untyped-def]
        ever, bob = 2**62, state.entity("w", "bob")
        assert bob is not None
        assert list(state.restored_since("w", 0, ever)) == ["e2", "e1"]  # ada's place is her return's
        assert list(state.restored_since("w", 2, ever)) == ["e1"]
        assert list(state.restored_since("w", 0, bob.created_at - 1)) == []  # ada was made again, after bob
        assert list(state.restored_since("elsewhere", 0, ever)) == []
        overlay = Overlay(state)
        apply(overlay, envelope(6, "e3", 1, EntityCreated(workspace="w", name="cy", entity_type="person")))
        apply(overlay, envelope(7, "e1", 4, EntityDeleted()))
        assert overlay.restored_since("w", 1, ever) == ["e2", "e3"]
        assert overlay.restored_since("w", 5, ever) == ["e3"]
        assert overlay.restored_since("w", 5, 5) == []  # cy was created at 6 (µs)

    views.transact(work)


def test_whether_an_entity_exists_is_answered_as_reading_it_would(store: LmdbLog) -> None:
    views = Views(store)
    seed(views)

    def work(tx, state: LmdbState) -> None:  # type: ignore[no-untyped-def]
        overlay = Overlay(state)
        apply(overlay, envelope(4, "e2", 2, EntityDeleted()))
        apply(overlay, envelope(5, "e3", 1, EntityCreated(workspace="w", name="cy", entity_type="person")))
        names = [("w", "ada"), ("w", "bob"), ("w", "cy"), ("w", "nobody"), ("elsewhere", "ada")]
        assert [overlay.has_entity(*name) for name in names] == [True, False, True, False, False]
        assert [overlay.has_entity(*name) for name in names] == [overlay.entity(*name) is not None for name in names]
        assert [state.has_entity(*name) for name in names] == [state.entity(*name) is not None for name in names]
        assert [state.has_entity(*name) for name in names] == [True, True, False, False, False]

    views.transact(work)


def test_whether_an_entity_exists_is_said_of_damaged_views_as_reading_it_would(store: LmdbLog) -> None:
    views = Views(store)
    seed(views)

    def damage(tx, state: LmdbState) -> None:  # type: ignore[no-untyped-def]
        state.txn.delete(record_key("e2"), db=state.tables.entities)  # bob's name is live, his record gone
        value = bytearray(state.txn.get(record_key("e1"), db=state.tables.entities))
        value[-1] ^= 0xFF  # ada's record fails its checksum
        state.txn.put(record_key("e1"), bytes(value), db=state.tables.entities)
        assert not state.has_entity("w", "bob") and state.entity("w", "bob") is None
        for ask in (state.has_entity, state.entity):
            with pytest.raises(ViewsDamagedError):
                ask("w", "ada")

    views.transact(damage)
