"""forget_entity: every byte of an entity's names, observations and metadata leaves every file of
the store, its relations go with it, the audit keeps who, when and why, and the views equal a
fresh fold of the erased log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import ChronographError, Memory, NotFoundError
from chronograph.eventstore import EntityCreated, RelationCreated
from chronograph.projections import DictState, apply, verify
from chronograph.projections.fold import FIRST
from chronograph.projections.streams import relation_stream

SECRETS = ("Zorgwald Quimby", "lives at 12 Flimwick Lane", "phone 555-0199-xq", "Plumtree-Sanatorium",
           "secretvalue-8841")
"""What the forgotten entity says: its name, observations and a metadata value."""


def write(memory: Memory, tool: str, **arguments: Any) -> Any:
    return memory.write(tool, arguments, actor="test").output


def read(memory: Memory, tool: str, **arguments: Any) -> Any:
    return memory.read(tool, arguments)


def residue(store: Path) -> list[tuple[str, str]]:
    """(file, secret) for each secret found, in any spelling a store keeps, in any file of the store."""
    found = []
    for file in sorted(store.iterdir()):
        data = file.read_bytes()
        for secret in SECRETS:
            for word in (secret, secret.lower(), *secret.split(" "), *secret.lower().split(" ")):
                if len(word) >= 6 and not word.isdigit() and word.encode() in data:
                    found.append((file.name, word))
    return found


def seed_with_churn(memory: Memory) -> None:
    """Ten thousand-odd events around one entity that says the secrets, in every way a store keeps them."""
    name, lives, phone, sanatorium, value = SECRETS
    write(memory, "create_entities", requestId="first", entities=[
        {"name": name, "entityType": "patient", "observations": [lives], "metadata": {"ward": value}},
        {"name": "Bob", "entityType": "person", "observations": ["likes tea"]}])
    write(memory, "create_entities", entities=[
        {"name": f"Filler {i}", "entityType": "thing", "observations": [f"note {i}", f"more {i}"]} for i in range(600)])
    write(memory, "create_relations", relations=[
        {"from": "Bob", "to": name, "relationType": "visits"},
        {"from": name, "to": "Filler 3", "relationType": "owns", "metadata": {"why": value}}])
    for i in range(40):
        write(memory, "add_observations", observations=[
            {"entityName": name, "contents": [f"{phone} call {i}"]},
            {"entityName": f"Filler {i}", "contents": [f"touched {i}"]}])
    write(memory, "add_observations", observations=[{"entityName": name, "contents": [sanatorium]}])
    write(memory, "delete_observations", deletions=[{"entityName": name, "observations": [lives]}])
    read(memory, "search_nodes", query="flimwick")  # a word index with its words, kept as an image
    read(memory, "read_graph", asOf=50)  # a past graph and, below, snapshots of the graph
    memory.views.snapshots.spacing = 100
    read(memory, "read_graph", asOf=memory.log.head() - 1)
    memory.prepare_search()
    write(memory, "rename_entity", name=name, newName=f"{name} II")
    write(memory, "rename_entity", name=f"{name} II", newName=name)
    write(memory, "update_entities", entities=[{"name": name, "observations": [f"{phone} call 1", sanatorium]}])
    for i in range(600):  # churn after: pages that held the secrets are freed and rewritten
        if i % 3 == 0:
            write(memory, "update_entities", entities=[{"name": f"Filler {i}", "observations": [f"new {i}"]}])


def test_forgetting_leaves_no_byte_of_what_the_entity_said_in_any_file_of_the_store(memory: Memory) -> None:
    seed_with_churn(memory)
    assert residue(memory.log.path)  # the secrets are there, in several spellings
    out = write(memory, "forget_entity", name=SECRETS[0], reason="asked by the data subject")
    assert (out.entities, out.relations, out.scrubbed) == (1, 4, True)
    assert residue(memory.log.path) == []
    memory.close()
    assert residue(memory.log.path) == []


def test_after_forgetting_the_views_equal_a_fresh_fold_of_the_erased_log(memory: Memory) -> None:
    seed_with_churn(memory)
    write(memory, "forget_entity", name=SECRETS[0], reason="asked")
    assert verify(memory.views) == []
    assert memory.views.rebuild().events == memory.log.head()
    assert verify(memory.views) == []


def test_the_graph_keeps_everything_else(memory: Memory) -> None:
    seed_with_churn(memory)
    before = read(memory, "read_graph")
    write(memory, "forget_entity", name=SECRETS[0], reason="asked")
    after = read(memory, "read_graph")
    assert [e.name for e in after.entities] == [e.name for e in before.entities if e.name != SECRETS[0]]
    assert SECRETS[0] not in {r.source for r in after.relations} | {r.target for r in after.relations}
    assert len(after.relations) == len(before.relations) - 2
    assert "Filler 13" in [e.name for e in read(memory, "search_nodes", query="note 13").entities]
    assert read(memory, "search_nodes", query="flimwick").entities == []


def test_time_travel_to_before_the_erasure_shows_none_of_it(memory: Memory) -> None:
    seed_with_churn(memory)
    middle = memory.log.head() // 2
    write(memory, "forget_entity", name=SECRETS[0], reason="asked")
    past = read(memory, "read_graph", asOf=middle)
    assert SECRETS[0] not in [e.name for e in past.entities]
    assert "Filler 5" in [e.name for e in past.entities]
    assert read(memory, "open_nodes", names=[SECRETS[0]], asOf=middle).entities == []
    with pytest.raises(NotFoundError, match="ever existed"):
        read(memory, "get_entity_history", name=SECRETS[0])


def test_the_audit_keeps_who_when_and_why_but_not_what(memory: Memory) -> None:
    seed_with_churn(memory)
    out = write(memory, "forget_entity", name=SECRETS[0], reason="asked by the data subject")
    events = read(memory, "get_audit_log", limit=1000, includeIds=True).events
    record = events[0]
    assert (record.type, record.actor, record.data["reason"]) == ("entity_forgotten", "test",
                                                                   "asked by the data subject")
    assert record.stream == out.streams[0] and len(record.data["relations"]) == 4
    erased = [e for e in events if e.type == "content_erased"]
    assert {e.data["erased"] for e in erased} >= {"entity_created", "observations_added", "entity_renamed",
                                                 "relation_created"}
    assert all(e.subject in ("(erased entity)", "(erased relation)") for e in erased)
    assert not any(secret in repr(events) for secret in SECRETS)


def test_forgetting_a_name_that_never_existed_is_refused_and_writes_nothing(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": []}])
    head = memory.log.head()
    with pytest.raises(NotFoundError, match="Nobody"):
        write(memory, "forget_entity", name="Nobody", reason="asked")
    with pytest.raises(ChronographError, match="reason"):
        write(memory, "forget_entity", name="Ada", reason="")
    assert memory.log.head() == head


def test_forgetting_twice_is_refused_the_second_time(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": []}])
    write(memory, "forget_entity", name="Ada", reason="asked")
    with pytest.raises(NotFoundError, match="forgotten already"):
        write(memory, "forget_entity", name="Ada", reason="again")


def test_a_retried_call_whose_answer_named_the_entity_is_refused_not_replayed(memory: Memory) -> None:
    seed_with_churn(memory)
    write(memory, "forget_entity", name=SECRETS[0], reason="asked")
    with pytest.raises(ChronographError, match="forgotten since"):
        write(memory, "create_entities", requestId="first", entities=[
            {"name": SECRETS[0], "entityType": "patient", "observations": [SECRETS[1]],
             "metadata": {"ward": SECRETS[4]}},
            {"name": "Bob", "entityType": "person", "observations": ["likes tea"]}])


def test_a_deleted_entity_and_every_entity_ever_called_so_are_forgotten(memory: Memory) -> None:
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": ["one"]}])
    write(memory, "delete_entities", entityNames=["Ada"])
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "robot", "observations": ["two"]}])
    out = write(memory, "forget_entity", name="Ada", reason="asked")
    assert out.entities == 2 and read(memory, "read_graph").entities == []


def test_a_merge_into_the_forgotten_entity_stays_with_the_name_redacted(memory: Memory) -> None:
    write(memory, "create_entities", entities=[
        {"name": n, "entityType": "person", "observations": [f"said by {n}"]} for n in ("Ada", "Dup", "Bob")])
    write(memory, "merge_entities", target="Ada", sources=["Dup"])
    out = write(memory, "forget_entity", name="Ada", reason="asked")
    assert out.redacted == 1
    history = read(memory, "get_entity_history", name="Dup").versions
    assert [v.event_type for v in history] == ["entity_created", "entity_merged"]
    assert history[-1].changes == {"into": "(erased)"}
    assert [e.name for e in read(memory, "read_graph").entities] == ["Bob"]


def test_relations_another_entity_made_under_the_name_later_are_kept(memory: Memory) -> None:
    write(memory, "create_entities", entities=[
        {"name": n, "entityType": "person", "observations": []} for n in ("Ada", "Bob")])
    write(memory, "rename_entity", name="Ada", newName="Lovelace")
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "robot", "observations": []}])
    write(memory, "create_relations", relations=[{"from": "Bob", "to": "Ada", "relationType": "builds"}])
    out = write(memory, "forget_entity", name="Lovelace", reason="asked")
    assert (out.entities, out.relations) == (1, 0)
    assert [(r.source, r.target) for r in read(memory, "read_graph").relations] == [("Bob", "Ada")]


def test_a_relation_that_took_up_the_stream_of_a_forgotten_ones_is_kept_with_its_history(
    tmp_path: Path, memory: Memory
) -> None:
    """`Bob knows Ada` first named the entity later renamed Lovelace; a new Ada then took up the
    relation's stream (its id spells the names). Forgetting Lovelace erases that stream's first
    events and keeps the new Ada's, with their history, in the views, a rebuild and a copy."""
    write(memory, "create_entities", entities=[
        {"name": n, "entityType": "person", "observations": [f"{n} zqxsaid"]} for n in ("Ada", "Bob")])
    write(memory, "create_relations", relations=[{"from": "Bob", "to": "Ada", "relationType": "knows"}])
    write(memory, "rename_entity", name="Ada", newName="Lovelace")  # the relation moves with her
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "robot", "observations": []}])
    knows = [{"from": "Bob", "to": "Ada", "relationType": "knows", "metadata": {"since": "the robot"}}]
    write(memory, "create_relations", relations=knows)
    out = write(memory, "forget_entity", name="Lovelace", reason="asked")
    assert (out.entities, out.relations) == (1, 2)  # Bob knows Ada (its first part), Bob knows Lovelace
    graph = read(memory, "read_graph")
    assert [(r.source, r.relation_type, r.target, r.metadata) for r in graph.relations] == [
        ("Bob", "knows", "Ada", {"since": "the robot"})]
    history = read(memory, "get_relation_history", **{"from": "Bob", "to": "Ada", "relationType": "knows"})
    assert [v.event_type for v in history.versions][-1] == "relation_created"
    assert b"Lovelace" not in b"".join(bytes(f.read_bytes()) for f in (tmp_path / "store").iterdir())
    with memory.log.read() as log:
        stream = relation_stream("default", "Bob", "knows", "Ada")
        assert [type(e.event).__name__ for e in log.stream(stream)] == [
            "ContentErased", "ContentErased", "RelationCreated"]
    assert verify(memory.views) == []
    memory.views.rebuild()
    assert read(memory, "read_graph").relations == graph.relations
    write(memory, "create_relations", relations=knows)  # still there: nothing to make
    assert read(memory, "read_graph").relations == graph.relations


def test_forgetting_the_namesake_after_moves_the_stream_that_spells_the_name(tmp_path: Path, memory: Memory) -> None:
    """Once every entity ever called so is forgotten, no relation stream may keep an id that
    spells the name: the first forget left the stream in place for the namesake's relation, and
    the second one, finding only erased events of another beside its own, moved it."""
    write(memory, "create_entities", entities=[
        {"name": n, "entityType": "person", "observations": []} for n in ("Zqxada", "Bob")])
    write(memory, "create_relations", relations=[{"from": "Bob", "to": "Zqxada", "relationType": "knows"}])
    write(memory, "rename_entity", name="Zqxada", newName="Zqxlovelace")
    write(memory, "create_entities", entities=[{"name": "Zqxada", "entityType": "robot", "observations": []}])
    write(memory, "create_relations", relations=[{"from": "Bob", "to": "Zqxada", "relationType": "knows"}])
    write(memory, "forget_entity", name="Zqxlovelace", reason="asked")
    out = write(memory, "forget_entity", name="Zqxada", reason="asked")
    assert (out.entities, out.relations, out.events) == (1, 1, 2)  # its creation, its relation's (not the first's)
    assert read(memory, "read_graph").relations == []
    files = b"".join(f.read_bytes() for f in (tmp_path / "store").iterdir())
    assert b"zqxada" not in files.lower() and b"zqxlovelace" not in files.lower()
    assert verify(memory.views) == []


def test_a_kept_answer_that_quotes_the_entity_is_forgotten_though_its_call_wrote_none_of_it(
    memory: Memory
) -> None:
    write(memory, "create_entities", entities=[
        {"name": n, "entityType": "person", "observations": [f"{n} zqxsaid"]} for n in ("Ada", "Dup", "Bob")])
    added = {"observations": [{"entityName": "Ada", "contents": ["Ada zqxsaid"]}]}  # there already: writes nothing
    write(memory, "add_observations", requestId="nothing", **added)
    merged = {"target": "Ada", "sources": ["Dup"]}  # writes Dup's stream, answers with Ada
    write(memory, "merge_entities", requestId="merge", **merged)
    bob = {"observations": [{"entityName": "Bob", "contents": ["tall"]}]}
    kept = write(memory, "add_observations", requestId="bob", **bob)
    write(memory, "forget_entity", name="Ada", reason="asked")
    for request, arguments, tool in (("nothing", added, "add_observations"), ("merge", merged, "merge_entities")):
        with pytest.raises(ChronographError, match="forgotten since"):
            write(memory, tool, requestId=request, **arguments)
    assert write(memory, "add_observations", requestId="bob", **bob) == kept  # it quoted none of it


def test_a_short_observation_another_answer_shares_leaves_that_answer_kept(memory: Memory) -> None:
    short = {"entities": [{"name": n, "entityType": "p", "observations": ["o", "yes"]} for n in ("X", "Y")]}
    write(memory, "create_entities", **short)
    first = write(memory, "forget_entity", name="X", reason="asked", requestId="f-1")
    zed = {"entities": [{"name": "Zed", "entityType": "p", "observations": ["o", "yes"]}]}
    kept = write(memory, "create_entities", requestId="zed", **zed)
    write(memory, "forget_entity", name="Y", reason="asked")  # its needles: "Y" alone, not "o" nor "yes"
    again = memory.write("forget_entity", {"name": "X", "reason": "asked", "requestId": "f-1"}, actor="test")
    assert again.replayed and again.output == first
    assert write(memory, "create_entities", requestId="zed", **zed) == kept


def test_a_short_name_is_found_where_it_stands_alone_and_not_inside_another_word(memory: Memory) -> None:
    write(memory, "create_entities", entities=[
        {"name": n, "entityType": "p", "observations": ["o"]} for n in ("Q", "Qa", "Quentin")])
    alone = {"observations": [{"entityName": "Q", "contents": ["o"]}]}  # there already: writes nothing
    write(memory, "add_observations", requestId="alone", **alone)
    inside = {"observations": [{"entityName": "Quentin", "contents": ["o"]}]}
    kept = write(memory, "add_observations", requestId="inside", **inside)
    write(memory, "forget_entity", name="Q", reason="asked")
    with pytest.raises(ChronographError, match="forgotten since"):
        write(memory, "add_observations", requestId="alone", **alone)
    assert write(memory, "add_observations", requestId="inside", **inside) == kept


WRITER = """
import sys
from chronograph.application import Memory
name, secret = sys.argv[2], sys.argv[3]
with Memory(sys.argv[1], sync=False) as memory:
    def write(tool, **arguments):
        memory.write(tool, arguments, actor="other process")
    write("create_entities", entities=[{"name": name, "entityType": "patient", "observations": [secret]}])
    for i in range(300):
        write("create_entities", entities=[{"name": f"Other {i}", "entityType": "t", "observations": [f"o {i}"]}])
        write("add_observations", observations=[{"entityName": name, "contents": [f"{secret} {i}"]}])
    print("written", flush=True)
    sys.stdin.readline()  # another process forgets the entity meanwhile
    for i in range(300):
        write("update_entities", entities=[{"name": f"Other {i}", "observations": [f"changed {i}"]}])
print("done", flush=True)
"""


def test_a_process_that_wrote_the_entity_writes_none_of_it_back_after_it_was_forgotten(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Memory(store).close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store), SECRETS[0], SECRETS[2]],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "written"
        with Memory(store, sync=False) as memory:
            assert write(memory, "forget_entity", name=SECRETS[0], reason="asked").scrubbed
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "done"
    finally:
        writer.communicate(timeout=60)
    assert residue(store) == []


def test_what_is_made_again_after_forgetting_starts_streams_no_record_holds(memory: Memory) -> None:
    """The fold looks for no record under a stream at its first event (`fold.FIRST`): a forgetting
    moves what it erased to streams of their own, and what is made again after starts afresh."""
    people = [{"name": n, "entityType": "person", "observations": [f"{n} was here"]} for n in ("Ada", "Bob")]
    knows = [{"from": a, "to": b, "relationType": "knows"} for a, b in (("Ada", "Bob"), ("Bob", "Ada"))]
    write(memory, "create_entities", entities=people)
    write(memory, "create_relations", relations=knows)
    write(memory, "forget_entity", name="Ada", reason="asked")
    write(memory, "create_entities", entities=people[:1])
    write(memory, "create_relations", relations=knows)
    write(memory, "delete_relations", relations=knows[:1])
    write(memory, "create_relations", relations=knows[:1])
    state, firsts = DictState(), []
    with memory.log.read() as log:
        for envelope in log.all():
            if envelope.version == FIRST and isinstance(envelope.event, (EntityCreated, RelationCreated)):
                firsts.append(envelope.stream)
                assert state.get_entity(envelope.stream) is None and state.get_relation(envelope.stream) is None
            apply(state, envelope)
    # Bob, then Ada made again and both relations under the ids her forgetting emptied (what it
    # erased is on other streams now: the first Ada and her relations are no creations any more)
    assert len(firsts) == 4 and firsts[2:] == [relation_stream("default", "Ada", "knows", "Bob"),
                                               relation_stream("default", "Bob", "knows", "Ada")]
    graph = read(memory, "read_graph")
    assert sorted((r.source, r.target) for r in graph.relations) == [("Ada", "Bob"), ("Bob", "Ada")]
    assert verify(memory.views) == []


def separators(memory: Memory, table: str) -> list[bytes]:
    """The keys the branch pages of one of the live views' tables keep, as the file holds them."""
    from chronograph.eventstore.lmdb.scrub import branch_keys, read_free_list
    from chronograph.projections.tables import TABLES, table_names

    name = table_names(memory.views.tables.generation)[TABLES.index(table)].encode()
    data = (memory.log.path / "data.mdb").read_bytes()
    return [key for key in branch_keys(data, read_free_list(data), name) if key]


@pytest.mark.parametrize("kind", [b"e=", b"r="])
def test_a_type_only_the_forgotten_entity_had_leaves_no_byte_in_the_store_though_a_branch_page_kept_it(
        memory: Memory, kind: bytes) -> None:
    """Each type's count is a key of the views (`type_count_key`); deleted when the type's last
    entity or relation goes, it stays in the file as a branch page's separator, if it was one."""
    write(memory, "create_entities", entities=[{"name": "Hub", "entityType": "hub", "observations": []}])
    write(memory, "create_entities", entities=[  # an entity type and a relation type each, many pages of them
        {"name": f"Person {i}", "entityType": f"zqtype-{i:04d}-padding-to-fill-the-page", "observations": []}
        for i in range(300)])
    write(memory, "create_relations", relations=[
        {"from": f"Person {i}", "to": "Hub", "relationType": f"zqrel-{i:04d}-padding-to-fill-the-page"}
        for i in range(300)])
    typed = [key[6:] for key in separators(memory, "workspaces") if key[4:6] == kind and b"-padding" in key]
    assert typed  # the test's point: a type's key is a separator
    marker = typed[0].partition(b"-padding")[0]  # zqtype-0123 or zqrel-0123: Person 123's only
    out = write(memory, "forget_entity", name=f"Person {int(marker[-4:])}", reason="asked")
    assert out.scrubbed
    assert marker not in (memory.log.path / "data.mdb").read_bytes()


def test_the_answer_names_the_stores_a_restore_set_aside_beside_the_store_which_still_hold_it(
        memory: Memory) -> None:
    """As `chronograph forget` says it (`restore --replace` keeps the store that was there)."""
    aside = memory.log.path.parent / f"{memory.log.path.name}.replaced-1"
    aside.mkdir()
    write(memory, "create_entities", entities=[{"name": "Ada", "entityType": "person", "observations": []}])
    out = write(memory, "forget_entity", name="Ada", reason="asked")
    assert out.elsewhere == [f"{aside} (set aside by restore --replace) still hold what they held; delete them, or "
                             "forget there too"]


def test_a_forget_in_an_n2n_project_s_workspace_says_its_file_was_not_rewritten(memory: Memory) -> None:
    """No hook of a server that keeps the project's files took the note out (see
    `surfaces.projectfiles`): the project's own copy still holds the entity."""
    workspace = "n2n:project:0123456789abcdef"
    ada = [{"name": "Ada", "entityType": "p", "observations": []}]
    write(memory, "create_entities", workspace=workspace, entities=ada)
    [note] = write(memory, "forget_entity", workspace=workspace, name="Ada", reason="asked").elsewhere
    assert note.startswith(f"{workspace!r} is an n2n project's workspace, and its .mcp/memory.json was not rewritten")
    write(memory, "create_entities", entities=ada)
    assert write(memory, "forget_entity", name="Ada", reason="asked").elsewhere == []


@pytest.mark.parametrize("failure", ["mapping the file for want of memory", "reopening the store"])
def test_a_forget_whose_scrub_fails_says_the_entity_is_erased_and_scrub_finishes_it(
        memory: Memory, monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    """The erasure committed; its scrub then met ENOMEM (ulimit -v: mmap of the data file) or a
    store it could not open again: the answer was a plain failure with no code, the scrub never
    ran, and the erased bytes stayed in data.mdb until a restart. Now the answer says what is
    true (erased, not scrubbed, and how to finish), and the store goes on."""
    import errno

    import lmdb
    from chronograph.eventstore.lmdb import env as lmdbenv

    seed_with_churn(memory)
    if failure.startswith("mapping"):
        def scrub_pass(*_: object, **__: object) -> None:
            raise OSError(errno.ENOMEM, "Cannot allocate memory")

        monkeypatch.setattr(lmdbenv, "scrub_pass", scrub_pass)
    else:
        def out_of_memory(self: lmdbenv.LmdbEnv, map_size: int, *, create: bool) -> lmdb.Environment:
            raise lmdb.MemoryError(f"{self.path}: Cannot allocate memory")

        monkeypatch.setattr(lmdbenv.LmdbEnv, "_open", out_of_memory)
    out = write(memory, "forget_entity", name=SECRETS[0], reason="asked")
    assert (out.entities, out.scrubbed) == (1, False)
    assert out.message.startswith("Erased from the log and every view, but the store's free pages could not be "
                                  "scrubbed") and "Cannot allocate memory" in out.message
    assert "Run `chronograph scrub --store" in out.message
    monkeypatch.undo()
    assert read(memory, "open_nodes", names=[SECRETS[0], "Bob"]).entities[0].name == "Bob"
    assert residue(memory.log.path)  # what the scrub was to overwrite
    with memory.lock:
        memory.scrub()
    assert residue(memory.log.path) == []
