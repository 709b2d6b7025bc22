"""relations_touching: the same relations, oldest first, whether it looks each name up or reads
the workspace's relations in one pass (a page of many names)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.projections.states import graph as module
from chronograph.projections.states.graph import relations_touching
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99), st.sampled_from(["a", "b"])), max_size=150),
       asked=st.sets(st.integers(0, 120), max_size=100), deleted=st.sets(st.integers(0, 99), max_size=5))
def test_one_pass_and_lookups_find_the_same_relations(tmp_path_factory: pytest.TempPathFactory,
                                                      edges: list[tuple[int, int, str]], asked: set[int],
                                                      deleted: set[int]) -> None:
    store: Path = tmp_path_factory.mktemp("touching") / "store"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [
            {"name": f"n{i}", "entityType": "t", "observations": []} for i in range(100)]}, actor="t")
        if edges:
            memory.write("create_relations", {"relations": [
                {"from": f"n{a}", "to": f"n{b}", "relationType": kind} for a, b, kind in edges]}, actor="t")
        if deleted:
            memory.write("delete_entities", {"entityNames": [f"n{i}" for i in deleted]}, actor="t")
        names = [f"n{i}" for i in sorted(asked)]
        with memory.timeline.at("t") as moment:
            share = module.SCAN_SHARE
            try:
                module.SCAN_SHARE = 0  # always look each name up
                looked_up = relations_touching(moment.graph, "default", names)
                module.SCAN_SHARE = 10**9  # always one pass (given more than 64 names)
                scanned = relations_touching(moment.graph, "default", names)
            finally:
                module.SCAN_SHARE = share
        assert [r.stream for r in scanned] == [r.stream for r in looked_up]


def test_an_entity_s_record_leaves_its_stream_to_its_key_and_reads_back_whole(tmp_path: Path) -> None:
    from chronograph.eventstore import EntityCreated, StreamWrite
    from chronograph.projections import Views
    from chronograph.projections.keys import record_key

    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]},
                     actor="t")
        other = "entity-imported-by-hand"  # a stream of another shape keeps its text in its record
        memory.log.append([StreamWrite(other, [EntityCreated(workspace="default", name="Bob", entity_type="t")])],
                          actor="t")
        views: Views = memory.views
        with views.read() as graph:
            ada, bob = graph.entity("default", "Ada"), graph.entity("default", "Bob")
            assert ada is not None and bob is not None and bob.stream == other
            listed = {e.name: e.stream for e in graph.entities("default")}
            stored = {name: bytes(graph.txn.get(record_key(e.stream), db=graph.tables.entities))
                      for name, e in (("Ada", ada), ("Bob", bob))}
        assert ada.stream.startswith("entity-") and listed == {"Ada": ada.stream, "Bob": other}
        assert ada.stream.encode() not in stored["Ada"] and other.encode() in stored["Bob"]


@pytest.mark.parametrize("folded", ["as written", "by a rebuild", "by a rebuild in segments"])
def test_a_relation_s_record_leaves_its_stream_to_its_fields_and_reads_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folded: str
) -> None:
    from chronograph.eventstore import RelationCreated, StreamWrite
    from chronograph.projections import Views
    from chronograph.projections.keys import record_key, workspace_key
    from chronograph.projections.streams import relation_stream

    rebuilding = importlib.import_module("chronograph.projections.live.rebuild")  # the module, not its function

    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": n, "entityType": "t", "observations": []}
                                                      for n in ("Ada", "Bob")]}, actor="t")
        memory.write("create_relations", {"relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}]},
                     actor="t")
        other = "relation-imported-by-hand"  # a stream its fields do not spell keeps its text in its record
        memory.log.append([StreamWrite(other, [RelationCreated(workspace="default", source="Bob", target="Ada",
                                                               relation_type="knows")])], actor="t")
        views: Views = memory.views
        if folded != "as written":
            if folded == "by a rebuild in segments":
                monkeypatch.setattr(rebuilding, "FOLD_RECORDS", 2)
            views.rebuild()
        spelled = relation_stream("default", "Ada", "knows", "Bob")
        with views.read() as graph:
            assert [r.stream for r in graph.relations("default")] == [spelled, other]
            assert [r.stream for r in graph.relations_of("default", "Ada")] == [spelled, other]
            assert [r.stream for r in graph.relations_of("default", "Bob", "out")] == [other]
            found = graph.relation("default", "Ada", "knows", "Bob")
            assert found is not None and found.stream == spelled
            by_stream = graph.relation_by_stream(other)
            assert by_stream is not None and (by_stream.source, by_stream.stream) == ("Bob", other)
            identities = {stream: bytes(graph.txn.get(record_key(stream), db=graph.tables.identities))
                          for stream in (spelled, other)}
            assert [len(identities[spelled]), len(identities[other])] == [8, 12]  # a spelled one: no workspace
            keys = {stream: workspace_key(1) + value if len(value) == 8 else value
                    for stream, value in identities.items()}
            stored = {stream: bytes(graph.txn.get(key, db=graph.tables.relations)) for stream, key in keys.items()}
        assert spelled.encode() not in stored[spelled] and b"relation:" not in stored[spelled]
        assert b"default" not in stored[spelled] and b"default" in stored[other]
        assert other.encode() in stored[other]
        memory.write("add_observations", {"observations": [{"entityName": "Ada", "contents": ["x"]}]}, actor="t")
        memory.write("delete_relations", {"relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}]},
                     actor="t")
        with views.read() as graph:
            assert [r.stream for r in graph.relations("default")] == [other]


def test_relations_lie_in_creation_order_found_by_identity_and_an_identity_pointing_elsewhere_is_damage(
    tmp_path: Path,
) -> None:
    from chronograph.eventstore.keys import pack_u64
    from chronograph.projections import Views
    from chronograph.projections.errors import ViewsDamagedError
    from chronograph.projections.keys import INCOMING, OUTGOING, adjacency_end, record_key, relation_key, workspace_key
    from chronograph.projections.streams import relation_stream

    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": n, "entityType": "t", "observations": []}
                                                      for n in ("A", "B", "C")]}, actor="t")
        for a, b in (("C", "A"), ("A", "B"), ("B", "C")):
            memory.write("create_relations", {"relations": [{"from": a, "to": b, "relationType": "k"}]}, actor="t")
        views: Views = memory.views
        streams = [relation_stream("default", a, "k", b) for a, b in (("C", "A"), ("A", "B"), ("B", "C"))]
        with views.read() as graph:
            keys = [bytes(key) for key in graph.txn.cursor(graph.tables.relations).iternext(values=False)]
            seqs = [r.seq for r in graph.relations("default")]
            assert keys == [relation_key(workspace_key(1), s) for s in seqs] and seqs == sorted(seqs)  # 1: met first
            assert [bytes(graph.txn.get(record_key(s), db=graph.tables.identities)) for s in streams] == [
                key[4:] for key in keys]  # its workspace: the one its stream spells
            ends = [(bytes(k), bytes(v)) for k, v in graph.txn.cursor(graph.tables.adjacency)]
            assert len(ends) == 6 and {len(k) for k, _ in ends} == {20}  # a name once, its relation ends duplicates
            assert len({k for k, _ in ends}) == 3  # one key a name, whatever the directions of its ends
            assert sorted(adjacency_end(v) for _, v in ends) == sorted(
                (way, pack_u64(s)) for s in seqs for way in (INCOMING, OUTGOING))
        with views.env.env.begin(write=True) as txn:  # C -> A's identity now names A -> B's record
            txn.put(record_key(streams[0]), keys[1][4:], db=views.tables.identities)
        with views.read() as graph, pytest.raises(ViewsDamagedError, match="points at another record"):
            graph.relation_by_stream(streams[0])


def test_every_read_puts_back_the_creation_and_last_change_a_record_leaves_out(tmp_path: Path) -> None:
    import msgspec
    from chronograph.projections.keys import record_key
    from freezegun import freeze_time

    with freeze_time("2026-11-25 12:00:00") as frozen, Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": n, "entityType": "t", "observations": []}
                                                      for n in ("A", "B")]}, actor="t")
        memory.write("create_relations", {"relations": [{"from": "A", "to": "B", "relationType": "k"}]}, actor="t")
        frozen.tick(5)
        memory.write("add_observations", {"observations": [{"entityName": "B", "contents": ["later"]}]}, actor="t")
        with memory.views.read() as graph:
            a, b = graph.entity("default", "A"), graph.entity("default", "B")
            assert a is not None and b is not None and a.created_at > 0
            assert (a.updated_at, b.updated_at) == (a.created_at, a.created_at + 5_000_000)
            assert [(e.name, e.updated_at) for e in graph.entities("default")] == [("A", a.updated_at),
                                                                                 ("B", b.updated_at)]
            relation = graph.relation("default", "A", "k", "B")
            assert relation is not None and relation.seq == 3 and relation.updated_at == relation.created_at > 0
            assert list(graph.relations("default")) == [relation] == graph.relations_of("default", "A")
            assert graph.relations_of("default", "B", "in") == [relation] == graph.relations_of("default", "B")
            stored = msgspec.msgpack.decode(graph.txn.get(record_key(a.stream), db=graph.tables.entities))
            kept = msgspec.msgpack.decode(next(iter(graph.txn.cursor(graph.tables.relations).iternext(keys=False))))
            assert stored[8] == 0 and (kept[9], kept[10]) == (0, 0)  # updated_at, and a relation's seq


def test_a_name_with_more_relation_ends_than_a_page_finds_each_direction_apart(tmp_path: Path) -> None:
    """Adjacency keeps one key a name, each end's direction in its duplicate (view format 10): a
    hub's ends fill a tree of their own, and each direction is still read apart, a relation to
    itself once."""
    names = [f"n{i}" for i in range(400)]
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": n, "entityType": "t", "observations": []}
                                                      for n in ["hub", *names]]}, actor="t")
        memory.write("create_relations", {"relations": [
            *({"from": "hub", "to": n, "relationType": "out"} for n in names),
            *({"from": n, "to": "hub", "relationType": "in"} for n in names[:300]),
            {"from": "hub", "to": "hub", "relationType": "self"}]}, actor="t")
        memory.write("delete_relations", {"relations": [{"from": "hub", "to": "n7", "relationType": "out"},
                                                        {"from": "n9", "to": "hub", "relationType": "in"}]}, actor="t")
        with memory.views.read() as graph:
            out, into, both = (graph.relations_of("default", "hub", way) for way in ("out", "in", "both"))
            assert sorted(r.target for r in out) == sorted([*(n for n in names if n != "n7"), "hub"])
            assert sorted(r.source for r in into) == sorted([*(n for n in names[:300] if n != "n9"), "hub"])
            assert len(both) == 399 + 299 + 1 and [r.seq for r in both] == sorted(r.seq for r in both)
            assert [r.source for r in graph.relations_of("default", "n5", "in")] == ["hub"]
            assert [r.target for r in graph.relations_of("default", "n5", "out")] == ["hub"]
            assert graph.relations_of("default", "n350", "out") == []
            (hub, count), (other, two) = graph.most_connected("default", 2)
            assert (hub, count, two) == ("hub", 699, 2) and other in set(names[:300]) - {"n7", "n9"}
