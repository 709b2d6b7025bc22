"""Version history and time travel for one entity or relation, read from its own stream."""

from __future__ import annotations

from chronograph.eventstore import (
    NO_STREAM,
    EntityCreated,
    EntityDeleted,
    EntityRenamed,
    EntityUpdated,
    LmdbLog,
    ObservationsAdded,
    RelationCreated,
    RelationDeleted,
    StreamWrite,
    clock,
)
from chronograph.projections import Views, entity_as_of, new_entity_stream, position_of, relation_stream, stream_history
from freezegun import freeze_time


def write(views: Views, stream: str, event, actor: str = "t") -> None:  # type: ignore[no-untyped-def]
    views.transact(lambda tx, state: tx.append([StreamWrite(stream, [event])], actor=actor))


def test_every_version_says_who_changed_what_when_and_the_state_after(store: LmdbLog) -> None:
    views = Views(store)
    stream = new_entity_stream()
    with freeze_time("2026-01-01T10:00:00Z"):
        write(views, stream, EntityCreated(workspace="w", name="Ada", entity_type="person"), "claude")
    with freeze_time("2026-01-01T11:00:00Z"):
        write(views, stream, ObservationsAdded(observations=("math",)), "cursor")
    with freeze_time("2026-01-01T12:00:00Z"):
        write(views, stream, EntityDeleted(), "claude")
    with store.read() as reader:
        history = stream_history(reader, stream)
    assert [(v.version, v.event_type, v.actor) for v in history] == [
        (1, "entity_created", "claude"), (2, "observations_added", "cursor"), (3, "entity_deleted", "claude")
    ]
    assert history[1].changes == {"observations": ("math",)}
    assert history[1].state is not None and list(history[1].state.observations) == ["math"]
    assert history[2].state is None
    assert clock.isoformat(history[1].recorded_at) == "2026-01-01T11:00:00.000000Z"


def test_entity_as_of_picks_the_incarnation_live_at_that_moment(store: LmdbLog) -> None:
    views = Views(store)
    first, second = new_entity_stream(), new_entity_stream()
    with freeze_time("2026-01-01T10:00:00Z"):
        write(views, first, EntityCreated(workspace="w", name="Ada", entity_type="v1"))
    with freeze_time("2026-01-01T11:00:00Z"):
        write(views, first, EntityDeleted())
    with freeze_time("2026-01-01T12:00:00Z"):
        views.transact(lambda tx, s: tx.append(
            [StreamWrite(second, [EntityCreated(workspace="w", name="Ada", entity_type="v2")], NO_STREAM)],
            actor="t"))
        write(views, second, EntityUpdated(entity_type="v3"))
    with views.read() as graph, store.read() as reader:
        def at(moment: str):  # type: ignore[no-untyped-def]
            found = entity_as_of(reader, graph, "w", "Ada", position_of(reader, moment))
            return None if found is None else found.entity_type

        assert at("2026-01-01T09:00:00Z") is None
        assert at("2026-01-01T10:30:00Z") == "v1"
        assert at("2026-01-01T11:30:00Z") is None
        assert at("2026-01-01T12:00:00Z") == "v3"
        assert at("3") == "v2"


def test_entity_as_of_gives_a_name_to_the_entity_that_took_it_last(store: LmdbLog) -> None:
    views = Views(store)
    first, second = new_entity_stream(), new_entity_stream()
    write(views, first, EntityCreated(workspace="w", name="Ada", entity_type="person"))
    write(views, first, EntityRenamed(name="Ada (old)", previous="Ada"))
    write(views, second, EntityCreated(workspace="w", name="Ada", entity_type="robot"))
    write(views, second, EntityRenamed(name="Robo", previous="Ada"))
    write(views, first, EntityRenamed(name="Ada", previous="Ada (old)"))
    with views.read() as graph, store.read() as reader:
        assert graph.name_streams("w", "Ada") == (first, second)  # by when each first bore it
        found = entity_as_of(reader, graph, "w", "Ada", reader.head())
        assert found is not None and found.entity_type == "person"
        assert entity_as_of(reader, graph, "w", "Robo", reader.head()) is not None


def test_relation_history_continues_on_its_stream_after_a_delete(store: LmdbLog) -> None:
    views = Views(store)
    stream = relation_stream("w", "Ada", "knows", "Bob")
    created = RelationCreated(workspace="w", source="Ada", target="Bob", relation_type="knows")
    for event in (created, RelationDeleted(), created):
        write(views, stream, event)
    with store.read() as reader:
        history = stream_history(reader, stream)
    assert [v.version for v in history] == [1, 2, 3]
    assert history[1].state is None and history[2].state is not None


def test_position_of_reads_positions_timestamps_and_rejects_nonsense(store: LmdbLog) -> None:
    views = Views(store)
    with freeze_time("2026-01-01T10:00:00Z"):
        write(views, new_entity_stream(), EntityCreated(workspace="w", name="a", entity_type="t"))
    with store.read() as reader:
        assert position_of(reader, 7) == 1
        assert position_of(reader, "2025-12-31") == 0
        assert position_of(reader, "2026-01-01T10:00:00+00:00") == 1
        for bad in (-1, "tomorrow", True):
            try:
                position_of(reader, bad)  # type: ignore[arg-type]
            except ValueError:
                continue
            raise AssertionError(f"{bad!r} was accepted")
