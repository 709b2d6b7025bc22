"""The subject of every event names its entity (or project) as it was called at that event, in
the audit, read either way, at a cost of at most the events of the streams it names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from random import Random
from typing import Any

from chronograph.application import ChronographError, Memory
from chronograph.application.core.audit import AuditOut
from chronograph.application.core.subjects import Subjects, live_names
from chronograph.eventstore import EntityCreated, Envelope, LogReader
from chronograph.eventstore.events import EntityRenamed
from chronograph.eventstore.teamevents import ProjectCreated, ProjectUpdated
from msgspec import UNSET


def entity(name: str, kind: str = "person") -> dict[str, object]:
    return {"name": name, "entityType": kind, "observations": ["x"]}


def observe(memory: Memory, name: str, text: str) -> None:
    memory.write("add_observations", {"observations": [{"entityName": name, "contents": [text]}]}, actor="t")


def audit(memory: Memory, **arguments: Any) -> list[tuple[int, str, str]]:
    answer = memory.read("get_audit_log", {"order": "oldest", **arguments})
    assert isinstance(answer, AuditOut)
    return [(e.position, e.type, e.subject) for e in answer.events]


def test_a_renamed_entity_s_later_changes_and_its_deletion_bear_its_new_name_not_its_first(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [entity("Ada")]}, actor="t")
        memory.write("rename_entity", {"name": "Ada", "newName": "Augusta"}, actor="t")
        observe(memory, "Augusta", "notes")
        memory.write("create_entities", {"entities": [entity("Ada", "language")]}, actor="t")
        memory.write("delete_entities", {"entityNames": ["Augusta"]}, actor="t")
        expected = [(1, "entity_created", "Ada"), (2, "entity_renamed", "Ada -> Augusta"),
                    (3, "observations_added", "Augusta"), (4, "entity_created", "Ada"),
                    (5, "entity_deleted", "Augusta")]
        assert audit(memory) == expected
        newest = memory.read("get_audit_log", {})
        assert isinstance(newest, AuditOut)
        assert [(e.position, e.type, e.subject) for e in newest.events] == expected[::-1]
        assert audit(memory, entityName="Augusta") == [row for row in expected if row[0] != 4]


def test_a_restore_a_merge_and_a_rename_undone_are_each_named_as_the_entity_was_called_then(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [entity("Ada"), entity("Bob")]}, actor="t")
        memory.write("rename_entity", {"name": "Ada", "newName": "Augusta"}, actor="t")
        memory.write("delete_entities", {"entityNames": ["Augusta"]}, actor="t")
        memory.write("revert_entity", {"name": "Augusta", "toVersion": 1}, actor="t")  # back as Ada
        memory.write("rename_entity", {"name": "Ada", "newName": "Countess"}, actor="t")
        memory.write("revert_entity", {"name": "Countess", "toVersion": 4}, actor="t")  # the rename undone
        memory.write("merge_entities", {"target": "Bob", "sources": ["Ada"]}, actor="t")
        subjects = [(kind, subject) for _, kind, subject in audit(memory)]
    assert subjects == [
        ("entity_created", "Ada"), ("entity_created", "Bob"), ("entity_renamed", "Ada -> Augusta"),
        ("entity_deleted", "Augusta"), ("entity_restored", "Ada"), ("entity_renamed", "Ada -> Countess"),
        ("entity_updated", "Countess"), ("entity_renamed", "Countess -> Ada"), ("entity_merged", "Ada")]


def test_a_renamed_project_s_events_bear_the_name_it_had_then(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        made = memory.write("memory_project", {"action": "create", "name": "Web"}, actor="t").output
        project = made.reply["project"]["id"]  # type: ignore[attr-defined]
        memory.write("memory_project", {"action": "update", "id": project, "name": "Site"}, actor="t")
        memory.write("memory_project", {"action": "update", "id": project, "description": "public"}, actor="t")
        answer = memory.read("get_audit_log", {"workspace": "agent-memory", "allWorkspaces": True,
                                               "order": "oldest"})
    assert isinstance(answer, AuditOut)
    assert [e.subject for e in answer.events] == ["project 'Web'", "project 'Web' -> 'Site'", "project 'Site'"]


class Counting:
    """A log reader that counts the events it reads by stream."""

    def __init__(self, log: LogReader) -> None:
        self.log, self.read = log, 0

    def stream(self, stream: str, from_version: int = 1, to_version: int | None = None) -> Iterator[Envelope]:
        for envelope in self.log.stream(stream, from_version, to_version):
            self.read += 1
            yield envelope

    def stream_backward(self, stream: str, from_version: int | None = None) -> Iterator[Envelope]:
        for envelope in self.log.stream_backward(stream, from_version):
            self.read += 1
            yield envelope


def test_naming_every_event_of_a_long_history_reads_each_of_its_events_at_most_once(tmp_path: Path) -> None:
    # newest first (the audit's default), oldest first, and in no order at all
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [entity("E0")]}, actor="t")
        for index in range(1, 302):
            name = f"E{index // 50}"
            if index % 50 == 0:
                memory.write("rename_entity", {"name": f"E{index // 50 - 1}", "newName": name}, actor="t")
            else:
                observe(memory, name, str(index))
        with memory.timeline.at("test") as moment:
            events = list(moment.log.all())
            for order in (events[::-1], events, Random(7).sample(events, len(events))):
                for current in (None, live_names(moment.live)):
                    counting = Counting(moment.log)
                    subjects = Subjects(counting, current)  # type: ignore[arg-type]
                    named = {e.position: subjects.of(e)[1] for e in order}
                    assert counting.read <= len(events)
                    assert named[2] == named[50] == "E0" and named[51] == "E0 -> E1"
                    assert named[301] == "E5 -> E6" and named[302] == "E6"
            # Newest first with the live name at hand, a name is read forward from the present: the
            # first event, and the event before each rename
            counting = Counting(moment.log)
            subjects = Subjects(counting, live_names(moment.live))  # type: ignore[arg-type]
            for envelope in events[::-1]:
                subjects.of(envelope)
            assert counting.read <= 2 + 6


def test_an_event_just_before_a_rename_is_named_as_before_it_when_asked_first(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [entity("Ada")]}, actor="t")
        for text in ("a", "b", "c", "d"):
            observe(memory, "Ada", text)
        memory.write("rename_entity", {"name": "Ada", "newName": "Augusta"}, actor="t")
        with memory.timeline.at("test") as moment:
            *_, before, rename = moment.log.all()
            subjects = Subjects(moment.log, live_names(moment.live))  # the views name it Augusta at version 6
            assert subjects.of(before)[1] == "Ada" and subjects.of(rename)[1] == "Ada -> Augusta"


def folded(events: list[Envelope]) -> dict[int, str]:
    """Each entity or project event's subject, by a fold of its stream from the start."""
    names: dict[str, str] = {}
    out: dict[int, str] = {}
    for envelope in events:  # log order is each stream's order
        event, stream = envelope.event, envelope.stream
        if isinstance(event, EntityRenamed):
            out[envelope.position] = f"{event.previous} -> {event.name}"
        elif isinstance(event, ProjectUpdated) and isinstance(event.name, str) and event.name != names[stream]:
            out[envelope.position] = f"project {names[stream]!r} -> {event.name!r}"
        if isinstance(event, EntityCreated | EntityRenamed | ProjectCreated | ProjectUpdated):
            names[stream] = names[stream] if isinstance(event, ProjectUpdated) and event.name is UNSET else event.name
        if stream.startswith("am/project/"):
            out.setdefault(envelope.position, f"project {names[stream]!r}")
        elif stream in names:
            out.setdefault(envelope.position, names[stream])
    return out


def test_in_whatever_order_events_are_asked_about_each_is_named_as_a_fold_of_its_stream_names_it(
        tmp_path: Path) -> None:
    rng = Random(20261206)
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [entity(f"N{i}") for i in range(4)]}, actor="t")
        made = memory.write("memory_project", {"action": "create", "name": "P0"}, actor="t").output
        project = made.reply["project"]["id"]  # type: ignore[attr-defined]
        for step in range(400):
            live = [e.name for e in memory.read("read_graph", {}).entities]  # type: ignore[attr-defined]
            name, other = rng.choice(live or ["N0"]), rng.choice(live or ["N1"])
            calls: list[tuple[str, dict[str, Any]]] = [
                ("add_observations", {"observations": [{"entityName": name, "contents": [f"o{step}"]}]}),
                ("rename_entity", {"name": name, "newName": f"N{step}x"}),
                ("delete_entities", {"entityNames": [name]}),
                ("revert_entity", {"name": rng.choice(["N0", "N1", "N2", "N3", name]), "toVersion": 1}),
                ("merge_entities", {"target": name, "sources": [other]}),
                ("create_entities", {"entities": [entity(rng.choice(["N0", "N1", f"N{step}y"]))]}),
                ("memory_project", {"action": "update", "id": project,
                                    **rng.choice([{"name": f"P{step}"}, {"description": str(step)}])})]
            tool, arguments = calls[rng.choice([0, 0, 0, 1, 1, 2, 3, 4, 5, 6])]
            try:
                memory.write(tool, arguments, actor="t")
            except ChronographError:
                pass
        with memory.timeline.at("test") as moment:
            log = moment.log
            events = list(log.all())
            expected = folded(events)
            for current in (None, live_names(moment.live)):
                for order in (events[::-1], events, rng.sample(events, len(events))):
                    subjects = Subjects(log, current)
                    named = {e.position: subjects.of(e)[1] for e in order}
                    assert {p: named[p] for p in expected} == expected
