"""The fold's rules, one at a time, on the in-memory state."""

from __future__ import annotations

from chronograph.eventstore import (
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    Event,
    ObservationsAdded,
    ObservationsDeleted,
    ObservationsInvalidated,
    RelationCreated,
    RelationDeleted,
)
from chronograph.projections import ENTITY, DictGraph, DictState, apply


class Log:
    def __init__(self) -> None:
        self.state = DictState()
        self.position = 0
        self.versions: dict[str, int] = {}

    def __call__(self, stream: str, event: Event, at: int = 0) -> None:
        self.position += 1
        self.versions[stream] = version = self.versions.get(stream, 0) + 1
        apply(self.state, Envelope(self.position, stream, version, at or self.position, 1, "t", "c", None, event))

    @property
    def graph(self) -> DictGraph:
        return DictGraph(self.state)


def created(name: str, *observations: str, workspace: str = "w") -> EntityCreated:
    return EntityCreated(workspace=workspace, name=name, entity_type="person", observations=observations)


def test_observations_keep_their_order_and_never_repeat() -> None:
    log = Log()
    log("e1", created("ada", "b", "a", "b"))
    log("e1", ObservationsAdded(observations=("c", "a", "c")))
    assert tuple(log.graph.entity("w", "ada").observations) == ("b", "a", "c")  # type: ignore[union-attr]


def test_deleting_observations_removes_only_those_present() -> None:
    log = Log()
    log("e1", created("ada", "a", "b", "c"))
    log("e1", ObservationsDeleted(observations=("b", "zzz")))
    record = log.graph.entity("w", "ada")
    assert record is not None and tuple(record.observations) == ("a", "c") and record.version == 2


def test_an_update_replaces_only_the_fields_it_sets() -> None:
    log = Log()
    log("e1", created("ada", "a"))
    log("e1", EntityUpdated(metadata={"k": 1}))
    record = log.graph.entity("w", "ada")
    assert record is not None
    assert (record.entity_type, tuple(record.observations), record.metadata) == ("person", ("a",), {"k": 1})


def test_version_and_updated_at_follow_the_stream_while_created_at_stays() -> None:
    log = Log()
    log("e1", created("ada"), at=100)
    log("e1", ObservationsAdded(observations=("x",)), at=200)
    record = log.graph.entity("w", "ada")
    assert record is not None and (record.version, record.created_at, record.updated_at) == (2, 100, 200)


def test_a_recreated_name_is_a_new_entity_and_keeps_the_old_history_reachable() -> None:
    log = Log()
    log("e1", created("ada", "old"))
    log("e1", EntityDeleted())
    log("e2", created("ada", "new"))
    record = log.graph.entity("w", "ada")
    assert record is not None and (record.stream, record.version) == ("e2", 1)
    assert log.graph.name_streams("w", "ada") == ("e1", "e2")


def test_events_on_unknown_or_deleted_streams_change_nothing() -> None:
    log = Log()
    log("ghost", ObservationsAdded(observations=("x",)))
    log("e1", created("ada"))
    log("e1", EntityDeleted())
    log("e1", ObservationsAdded(observations=("y",)))
    assert log.state.entities == {} and log.graph.type_counts("w", ENTITY) == {}


def test_relations_and_counts_follow_creation_and_deletion() -> None:
    log = Log()
    log("e1", created("ada"))
    log("e2", created("bob"))
    log("r1", RelationCreated(workspace="w", source="ada", target="bob", relation_type="knows"))
    assert [r.target for r in log.graph.relations_of("w", "ada", "out")] == ["bob"]
    assert log.graph.workspace("w").relations == 1  # type: ignore[union-attr]
    log("r1", RelationDeleted())
    log("r1", RelationCreated(workspace="w", source="ada", target="bob", relation_type="knows"))
    relation = log.graph.relation("w", "ada", "knows", "bob")
    assert relation is None  # the stream name is not the relation's identity stream
    assert log.graph.relations_of("w", "bob", "in")[0].version == 3


def test_context_updates_merge_into_the_current_context() -> None:
    log = Log()
    log("c", ContextUpdated(workspace="w", active_task="plan", status="PLANNING"))
    log("c", ContextUpdated(workspace="w", status="IN_PROGRESS", next_steps=("ship",)))
    context = log.graph.context("w")
    assert context is not None
    assert (context.active_task, context.status, context.next_steps, context.version) == (
        "plan", "IN_PROGRESS", ("ship",), 2
    )


def test_workspaces_never_see_each_others_entities() -> None:
    log = Log()
    log("e1", created("ada", workspace="one"))
    log("e2", created("ada", workspace="two"))
    assert [e.stream for e in log.graph.entities("one")] == ["e1"]
    assert [e.stream for e in log.graph.entities("two")] == ["e2"]


def test_an_observation_stated_again_takes_the_event_s_span_and_keeps_its_place() -> None:
    log = Log()
    log("e1", created("ada", "a", "b", "c"))
    log("e1", ObservationsInvalidated(observations=("a", "b"), at=10))
    log("e1", ObservationsAdded(observations=("a",)))  # stated again without a span: it has none now
    log("e1", ObservationsAdded(observations=("b",), valid_from=20))
    ada = log.graph.entity("w", "ada")
    assert ada is not None and ada.observations == ["a", "b", "c"] and ada.validity == {"b": (20, None)}


def test_a_valid_time_bound_at_the_epoch_is_a_bound_not_none() -> None:
    log = Log()
    log("e1", created("ada"))
    log("e2", created("bob"))
    log("e1", ObservationsAdded(observations=("a",), valid_from=-10, valid_until=0))
    log("e1", ObservationsAdded(observations=("b",), valid_from=0))
    log("r1", RelationCreated(workspace="w", source="ada", target="bob", relation_type="knew",
                              valid_from=-10, valid_until=0))
    ada = log.graph.entity("w", "ada")
    assert ada is not None and ada.validity == {"a": (-10, 0), "b": (0, None)}
    knew = log.graph.relations_of("w", "ada", "out")[0]
    assert (knew.valid_from, knew.valid_until) == (-10, 0)
