"""The same memory on both backends: every kind of call answers the same on a store folder and on
a PostgreSQL log with a local cache, and servers sharing one database see each other's writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application import ConflictError, Memory
from chronograph.application.engine.stores import open_store
from chronograph.eventstore import StoreOpenError, StoreUnavailableError
from chronograph.projections import verify
from freezegun import freeze_time
from support.postgres import database

pytest.importorskip("psycopg")


def scenario(memory: Memory) -> list[Any]:
    """A tour of the surface: the official tools, history, audit, time travel, valid time, context,
    identity, forgetting, the team memory and the other servers' surfaces."""
    out: list[Any] = []

    def write(tool: str, **arguments: Any) -> None:
        out.append(memory.write(tool, arguments, actor="tour").output)

    def read(tool: str, **arguments: Any) -> None:
        out.append(memory.call(tool, arguments, actor="tour").output)

    with freeze_time("2026-05-01T10:00:00Z") as clock:
        write("create_entities", requestId="r1", entities=[
            {"name": n, "entityType": "person", "observations": [f"{n} writes", "likes tea"]}
            for n in ("Ada", "Bob", "Cy", "Dee")])
        clock.tick(1)
        write("create_relations", relations=[{"from": "Ada", "to": "Bob", "relationType": "knows", "confidence": 0.5},
                                             {"from": "Bob", "to": "Cy", "relationType": "knows"}])
        clock.tick(1)
        write("add_observations", observations=[{"entityName": "Ada", "contents": ["born 1815"],
                                                 "validFrom": "1815-12-10T00:00:00Z"}])
        write("update_context", activeTask="the tour", nextSteps=["compare"])
        clock.tick(1)
        write("delete_observations", deletions=[{"entityName": "Bob", "observations": ["likes tea"]}])
        write("rename_entity", name="Dee", newName="Dee II")
        write("merge_entities", target="Cy", sources=["Dee II"])
        clock.tick(1)
        write("delete_entities", entityNames=["Bob"])
        write("revert_entity", name="Bob", toVersion=1)
        write("forget_entity", name="Cy", reason="asked")
        write("memory_knowledge", action="add", scopeType="global", title="Limits", content="1000/min")
        read("memory_knowledge", action="list", scopeType="global")
        for tool, args in (("read_graph", {}), ("search_nodes", {"query": "tea"}),
                           ("search_nodes", {"query": "writs", "mode": "fuzzy"}), ("open_nodes", {"names": ["Ada"]}),
                           ("read_graph", {"asOf": "2026-05-01T10:00:01Z"}), ("get_entity_history", {"name": "Bob"}),
                           ("get_relation_history", {"from": "Ada", "to": "Bob", "relationType": "knows"}),
                           ("get_audit_log", {"limit": 100}), ("get_graph_summary", {}), ("read_context", {}),
                           ("list_workspaces", {}), ("get_related_entities", {"name": "Ada"}),
                           ("open_nodes", {"names": ["Ada"], "validAt": "1800-01-01T00:00:00Z"})):
            read(tool, **args)
    return [_plain(answer) for answer in out]


def _plain(answer: Any) -> Any:
    """An answer without what differs by nature between two stores (random ids, the log's place)."""
    data = msgspec.to_builtins(answer)

    def strip(node: Any) -> Any:
        if isinstance(node, dict):  # a scrub's message counts the pages of its own backend
            return {k: strip(v) for k, v in node.items()
                    if k not in ("stream", "streams", "correlationId", "id", "currentVersionId", "storeBytes")
                    and not (k == "message" and "scrubbed" in node)}
        if isinstance(node, list | tuple):
            return [strip(v) for v in node]
        return "erased:…" if isinstance(node, str) and node.startswith("erased:") else node  # random by design

    return strip(data)


def caught_up(memory: Memory) -> None:
    """Wait until the follower of `memory` has brought its views to the log's head."""
    head = memory.log.head()
    for _ in range(1000):
        if memory.followed >= head and memory.views.erasures_seen is not None:
            return
        memory.stopping.wait(0.01)  # the follower's own clock
    raise AssertionError(f"the follower stopped at {memory.followed}, the head is at {head}")


@pytest.fixture
def url() -> str:
    return database().log_url()


def test_every_kind_of_call_answers_the_same_on_both_backends(tmp_path: Path, url: str) -> None:
    with Memory(tmp_path / "store", sync=False) as embedded:
        expected = scenario(embedded)
    with Memory(url, cache=tmp_path / "cache") as shared:
        assert scenario(shared) == expected


def test_a_write_of_one_server_is_read_by_another_once_it_followed(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        b.follow()
        a.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]}, actor="a")
        caught_up(b)
        assert [e.name for e in b.read("read_graph", {}).entities] == ["Ada"]


def test_a_follower_folds_a_burst_of_another_servers_writes_in_a_few_looks(
        tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronograph.application.engine import background

    monkeypatch.setattr(background, "FOLLOW_PAUSE", 2.0)  # the burst is over before it looks again
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        looks: list[int | None] = []
        catch_up = b.views.catch_up
        monkeypatch.setattr(b.views, "catch_up", lambda *args, **kwargs: looks.append(kwargs.get("until")) or
                            catch_up(*args, **kwargs))
        b.follow()
        for n in range(20):
            a.write("create_entities", {"entities": [{"name": f"E{n}", "entityType": "t", "observations": []}]},
                    actor="a")
        for _ in range(3):  # the follower's pause, and its next look
            caught_up(b)
        assert len(b.read("read_graph", {}).entities) == 20
    assert 1 <= len(looks) <= 3


def test_a_follower_says_an_error_it_did_not_expect_and_follows_on_once_it_passes(
        tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        watch, failing = b.log.watch, [True]

        def flaky(after: int, timeout: float) -> tuple[int, int]:
            if failing[0]:
                raise RuntimeError("the driver's socket was closed under it")
            return watch(after, timeout)

        monkeypatch.setattr(b.log, "watch", flaky)
        b.follow()
        for _ in range(500):  # before: the thread died, and nothing said so
            if b.reachable is not None:
                break
            b.stopping.wait(0.01)
        assert b.reachable is not None and "RuntimeError" in b.reachable
        failing[0] = False
        a.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]}, actor="a")
        caught_up(b)
        assert b.reachable is None and [e.name for e in b.read("read_graph", {}).entities] == ["Ada"]


def test_a_write_decides_against_the_database_not_a_stale_cache(tmp_path: Path, url: str) -> None:
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        a.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]}, actor="a")
        b.read("read_graph", {})  # b's views are behind: no follower, no write of its own yet
        b.write("add_observations", {"observations": [{"entityName": "Ada", "contents": ["seen by b"],
                                                       "expectedVersion": 1}]}, actor="b")
        with pytest.raises(ConflictError, match="version 2.*seen by b"):
            a.write("add_observations", {"observations": [{"entityName": "Ada", "contents": ["stale"],
                                                           "expectedVersion": 1}]}, actor="a")
        a.follow()
        caught_up(a)
        assert a.read("open_nodes", {"names": ["Ada"]}).entities[0].observations == ["seen by b"]


def test_forgetting_on_one_server_empties_the_caches_of_the_others(tmp_path: Path, url: str) -> None:
    secret = "Zebulon Fairweather-Quist"
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        a.write("create_entities", {"entities": [{"name": secret, "entityType": "p",
                                                  "observations": ["hides at Quistmoor Hall"]}]}, actor="a")
        b.follow()
        caught_up(b)
        assert b.read("search_nodes", {"query": "quistmoor"}).entities  # b's cache and index hold it
        a.write("forget_entity", {"name": secret, "reason": "asked"}, actor="a")
        caught_up(b)
        b.read("read_graph", {})  # the next use of the store catches up with the erasure
        assert b.read("search_nodes", {"query": "quistmoor"}).entities == []
    for cache in ("a", "b"):
        for file in (tmp_path / cache).iterdir():
            assert b"Quistmoor" not in file.read_bytes() and secret.encode() not in file.read_bytes()



def test_a_cache_lets_go_of_the_relations_another_servers_forgetting_erased_and_keeps_the_one_on_its_stream(
    tmp_path: Path, url: str
) -> None:
    """The forgetting of Ann erases `Ann knows Bob` and the first events of the stream of `Ada knows
    Bob`, which named her before she was renamed; a later Ada took up that stream with a relation of
    its own, which stays, in the writer's views and in a cache that learns of the forgetting from
    the log (and in one that folds it all at once)."""
    def people(*names: str) -> dict[str, Any]:
        return {"entities": [{"name": n, "entityType": "person", "observations": [n]} for n in names]}

    def relations(memory: Memory) -> list[tuple[str, str, str]]:
        return [(r.source, r.relation_type, r.target) for r in memory.read("read_graph", {}).relations]

    def touch(memory: Memory) -> None:  # a write catches the cache up with the log first
        memory.write("add_observations", {"observations": [{"entityName": "Bob", "contents": [os.urandom(4).hex()]}]},
                     actor="b")

    knows = {"relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}]}
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        a.write("create_entities", people("Ada", "Bob"), actor="a")
        a.write("create_relations", knows, actor="a")
        a.write("rename_entity", {"name": "Ada", "newName": "Ann"}, actor="a")  # the relation goes with her
        a.write("create_entities", people("Ada"), actor="a")  # another takes the name, and the relation's stream
        a.write("create_relations", knows, actor="a")
        touch(b)
        assert sorted(relations(b)) == [("Ada", "knows", "Bob"), ("Ann", "knows", "Bob")]
        a.write("forget_entity", {"name": "Ann", "reason": "asked"}, actor="a")
        touch(b)
        assert relations(a) == relations(b) == [("Ada", "knows", "Bob")]
        assert verify(b.views) == []
        assert not a.write("create_relations", knows, actor="a").changed  # still there
        touch(b)
        assert relations(a) == relations(b) == [("Ada", "knows", "Bob")]
        assert verify(b.views) == []
    with Memory(url, cache=tmp_path / "c") as c:  # a cache that was away meanwhile folds it all at once
        assert relations(c) == [("Ada", "knows", "Bob")]


def test_a_cache_that_was_offline_during_a_forget_keeps_nothing_of_it_when_it_comes_back(
    tmp_path: Path, url: str
) -> None:
    secret, said = "Zebulon Fairweather-Quist", "hides at Quistmoor Hall"
    with Memory(url, cache=tmp_path / "a") as a:
        a.write("create_entities", {"entities": [{"name": secret, "entityType": "p", "observations": [said]}]},
                actor="a")
        for i in range(30):
            a.write("create_entities", {"entities": [{"name": f"Other {i}", "entityType": "t",
                                                      "observations": [f"note {i}"]}]}, actor="a")
        a.write("add_observations", {"observations": [{"entityName": secret, "contents": ["again"]}]}, actor="a")
        before = a.log.head()
        a.views.snapshots.spacing = 10
        assert a.read("read_graph", {"asOf": before}).entities  # a snapshot of the past, kept in the cache
        assert a.read("search_nodes", {"query": "quistmoor"}).entities
        a.prepare_search()  # a search image, kept in the cache
    with Memory(url, cache=tmp_path / "b") as b:  # a is offline meanwhile
        assert b.write("forget_entity", {"name": secret, "reason": "asked"}, actor="b").output.scrubbed
    assert any(b"Quistmoor" in file.read_bytes() for file in (tmp_path / "a").iterdir())
    with Memory(url, cache=tmp_path / "a") as a:
        for file in (tmp_path / "a").iterdir():  # at open, before any call
            assert b"Quistmoor" not in file.read_bytes() and secret.encode() not in file.read_bytes()
        assert a.read("search_nodes", {"query": "quistmoor"}).entities == []
        assert secret not in [e.name for e in a.read("read_graph", {"asOf": before}).entities]
    for file in (tmp_path / "a").iterdir():
        assert b"Quistmoor" not in file.read_bytes() and secret.encode() not in file.read_bytes()


def test_a_forget_racing_another_servers_forget_leaves_nothing_of_either_in_its_cache_or_its_seed(
    tmp_path: Path, url: str
) -> None:
    """Server a looks for erasures before it forgets Y and finds none; b forgets X before a takes
    the log's lock. a's erasure then folds b's first: a's snapshots of the past and search images,
    which held X, go too, so neither a's cache nor the seed it keeps, nor a cache started from
    that seed, holds anything of X."""
    secret, said = "Zebulon Fairweather-Quist", "hides at Quistmoor Hall"
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        a.write("create_entities", {"workspace": "w1", "entities": [
            {"name": secret, "entityType": "p", "observations": [said]}]}, actor="a")
        for i in range(30):
            a.write("create_entities", {"workspace": "w1", "entities": [
                {"name": f"Other {i}", "entityType": "t", "observations": [f"note {i}"]}]}, actor="a")
        before = a.log.head() - 1
        a.views.snapshots.spacing = 10
        assert secret in [e.name for e in a.read("read_graph", {"workspace": "w1", "asOf": before}).entities]
        assert a.views.snapshots.positions()  # a snapshot of the past holding X, kept in a's cache
        assert a.read("search_nodes", {"workspace": "w1", "query": "quistmoor"}).entities
        a.prepare_search()  # a search image of w1 (its words compressed), kept in a's cache
        with a.views.snapshot() as snapshot:
            assert a.views.search.kept_at(snapshot.graph, "w1") >= 0
        a.write("create_entities", {"entities": [{"name": "Yolanda", "entityType": "p", "observations": []}]},
                actor="a")
        looks = a.lock.on_first
        assert looks is not None

        def look_then_b_forgets() -> None:
            looks()
            a.lock.on_first = lambda: None  # later looks of this call hear of b's erasure too late (a
            # follower that has not announced it yet)
            b.write("forget_entity", {"workspace": "w1", "name": secret, "reason": "asked"}, actor="b")

        a.lock.on_first = look_then_b_forgets
        assert a.write("forget_entity", {"name": "Yolanda", "reason": "asked"}, actor="a").output.scrubbed
        a.lock.on_first = looks
        with a.views.snapshot() as snapshot:
            assert a.views.search.kept_at(snapshot.graph, "w1") == -1  # it held X's words
        assert secret not in [e.name for e in a.read("read_graph", {"workspace": "w1", "asOf": before}).entities]
        assert a.read("search_nodes", {"workspace": "w1", "query": "quistmoor"}).entities == []
        for file in (tmp_path / "a").iterdir():
            assert b"Quistmoor" not in file.read_bytes() and secret.encode() not in file.read_bytes()
        assert a.keep_seed_now(spacing=0)
    with Memory(url, cache=tmp_path / "c") as c:  # started from a's seed
        assert secret not in [e.name for e in c.read("read_graph", {"workspace": "w1", "asOf": before}).entities]
        assert c.read("search_nodes", {"workspace": "w1", "query": "quistmoor"}).entities == []
    for file in (tmp_path / "c").iterdir():
        assert b"Quistmoor" not in file.read_bytes() and secret.encode() not in file.read_bytes()


def test_a_cache_of_another_log_is_refused(tmp_path: Path, url: str) -> None:
    Memory(url, cache=tmp_path / "cache").close()
    with pytest.raises(StoreOpenError, match="views of another log"):
        open_store(database().log_url(), cache=tmp_path / "cache")


def test_a_store_named_as_a_cache_is_refused_and_left_as_it_was(tmp_path: Path, url: str) -> None:
    """A cache writes its views where a store keeps its own: a store's folder as --cache would be
    taken over (issue 27: a PostgreSQL store's cache is a store's files too)."""
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="t")
    before = (tmp_path / "store" / "data.mdb").read_bytes()
    with pytest.raises(StoreOpenError, match="holds a store's log, not a cache"):
        open_store(url, cache=tmp_path / "store")
    assert (tmp_path / "store" / "data.mdb").read_bytes() == before
    Memory(url, cache=tmp_path / "cache").close()
    with pytest.raises(StoreOpenError, match="not a Chronograph store"):  # and a cache is no store either
        open_store(tmp_path / "cache")


def test_a_database_that_cannot_be_reached_is_said_so_and_leaves_no_cache_behind(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError, match="cannot reach"):
        Memory("postgresql://postgres@127.0.0.1:1/none", cache=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_cache_that_folds_another_servers_forget_keeps_no_name_or_type_of_it_as_a_separator(
    tmp_path: Path, url: str
) -> None:
    """a's cache held the entities b forgets; it takes them out of its views when it next looks at
    the log, with no word of what they were called to look for: a name or type its tables' branch
    pages kept as a separator goes too."""
    from chronograph.eventstore.lmdb.scrub import branch_keys, read_free_list
    from chronograph.projections.tables import TABLES, table_names

    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        a.write("create_entities", {"entities": [
            {"name": f"zqname-{i:04d}-padding-to-fill-the-page", "entityType": f"zqtype-{i:04d}-padding-to-fill",
             "observations": []} for i in range(300)]}, actor="a")
        names = table_names(a.views.tables.generation)
        data = (tmp_path / "a" / "data.mdb").read_bytes()
        found = [key for table in ("names", "workspaces")
                 for key in branch_keys(data, read_free_list(data), names[TABLES.index(table)].encode())]
        markers = [next(key[key.index(b"zq"):].partition(b"-padding")[0] for key in found if kind in key)
                   for kind in (b"zqname-", b"zqtype-")]  # a name and a type, each kept as a separator
        for number in sorted({marker[-4:].decode() for marker in markers}):
            b.write("forget_entity", {"name": f"zqname-{number}-padding-to-fill-the-page", "reason": "asked"},
                    actor="b")
        a.write("create_entities", {"entities": [{"name": "After", "entityType": "t", "observations": []}]},
                actor="a")
        for file in (tmp_path / "a").iterdir():
            assert not [marker for marker in markers if marker in file.read_bytes()]


def test_a_forget_whose_scrub_a_reader_held_advises_a_scrub_of_the_cache_this_server_uses(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`chronograph scrub --store URL` alone opens the per-user cache (folding the whole log into a
    new one when this server keeps its views elsewhere) and leaves this one's old pages as they are."""
    import shlex

    from chronograph.eventstore import Scrubbed

    with Memory(url, cache=tmp_path / "mine") as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="t")
        monkeypatch.setattr(memory, "scrub", lambda needles=(), timeout=10.0: Scrubbed(0, 3))  # a long reader
        out = memory.write("forget_entity", {"name": "Ada", "reason": "asked"}, actor="t").output
    assert not out.scrubbed
    assert f"--store {shlex.quote(memory.log.location)} --cache {shlex.quote(str(tmp_path / 'mine'))}`" in out.message


LONG_NAMES = [  # scattered CJK compresses little: 1,050 bytes a name, and 768 the type (the tools' limits)
    "".join(chr(0x4E00 + (i * 7919 + k * 104729) % 20000) for k in range(350)) for i in (1, 2)]
LONG_TYPE = "".join(chr(0x4E00 + (k * 31337) % 20000) for k in range(256))


def long_relation_tour(memory: Memory) -> list[Any]:
    """A relation whose stream (workspace, both names, type: 2,900 bytes) passes what PostgreSQL
    indexes of a text: made, read, its history, forgotten with one of its entities, scrubbed."""
    out: list[Any] = []
    relation = {"from": LONG_NAMES[0], "to": LONG_NAMES[1], "relationType": LONG_TYPE}
    with freeze_time("2026-05-01T10:00:00Z"):
        out.append(memory.write("create_entities", {"entities": [
            {"name": n, "entityType": "p", "observations": []} for n in LONG_NAMES]}, actor="t").output)
        out.append(memory.write("create_relations", {"relations": [relation]}, actor="t").output)
        out.append(memory.write("create_relations", {"relations": [relation]}, actor="t").output)  # made once
        out.append(memory.read("read_graph", {}))
        out.append(memory.read("get_relation_history", {"from": LONG_NAMES[0], "to": LONG_NAMES[1],
                                                        "relationType": LONG_TYPE}))
        forgotten = memory.write("forget_entity", {"name": LONG_NAMES[1], "reason": "asked"}, actor="t").output
        assert forgotten.scrubbed, forgotten.message
        out.extend([forgotten, memory.read("read_graph", {})])
        out.append(memory.write("create_relations", {"relations": [{**relation, "to": LONG_NAMES[0]}]},
                                actor="t").output)
        out.append(memory.read("read_graph", {}))
    return [_plain(answer) for answer in out]


def test_a_relation_past_what_postgresql_indexes_of_a_text_is_made_forgotten_and_scrubbed_as_on_a_folder(
        tmp_path: Path, url: str) -> None:
    with Memory(tmp_path / "store", sync=False) as embedded:
        expected = long_relation_tour(embedded)
    with Memory(url, cache=tmp_path / "cache") as shared:
        assert long_relation_tour(shared) == expected
        assert [r["relationType"] for r in expected[3]["relations"]] == [LONG_TYPE]
        assert verify(shared.views) == []
        with shared.log.read() as reader:
            assert list(reader.index_problems()) == []


def test_an_import_of_a_relation_past_what_postgresql_indexes_of_a_text_is_read_back(tmp_path: Path, url: str) -> None:
    import json

    from chronograph.application.lifecycle.importing import FileImport

    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        *({"type": "entity", "name": n, "entityType": "p", "observations": ["x"]} for n in LONG_NAMES),
        {"type": "relation", "from": LONG_NAMES[0], "to": LONG_NAMES[1], "relationType": LONG_TYPE}]),
        encoding="utf-8")
    with FileImport(path, "default") as job, Memory(url, cache=tmp_path / "cache") as memory:
        job.survey()
        job.check_ends(memory)
        [(_, report)] = job.write(memory)
        assert (report.created, report.related) == (2, 1)
        relations = memory.read("read_graph", {}).relations
        assert [(r.source, r.target, r.relation_type) for r in relations] == [(*LONG_NAMES, LONG_TYPE)]
