"""The store's word indexes: they follow writes, are kept as images, load instead of rebuilding."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from chronograph.eventstore import NO_STREAM, EntityCreated, EntityDeleted, LmdbLog, ObservationsAdded, StreamWrite
from chronograph.eventstore.keys import digest
from chronograph.projections import EntityRecord, Views, WorkspaceIndex, new_entity_stream
from chronograph.projections.search import indexes


def write(views: Views, stream: str, *events, expected=None) -> None:  # type: ignore[no-untyped-def]
    writes = [StreamWrite(stream, list(events), expected if expected is not None else "any")]
    views.transact(lambda tx, state: tx.append(writes, actor="t"))


def create(views: Views, name: str, observation: str = "", workspace: str = "w") -> str:
    stream = new_entity_stream()
    write(views, stream, EntityCreated(workspace=workspace, name=name, entity_type="person"), expected=NO_STREAM)
    if observation:
        write(views, stream, ObservationsAdded(observations=(observation,)))
    return stream


def containing(views: Views, query: str, workspace: str = "w") -> list[str] | None:
    with views.search.lock, views.snapshot() as snapshot:
        return views.search_index(snapshot, workspace).containing(query)


def test_the_index_follows_writes_changes_and_deletions(store: LmdbLog) -> None:
    views = Views(store)
    stream = create(views, "Ada")
    assert containing(views, "ada") == [stream]
    write(views, stream, ObservationsAdded(observations=("Zebra keeper",)))
    assert containing(views, "zebra") == [stream]
    assert containing(views, "zebra", workspace="other") == []
    write(views, stream, EntityDeleted())
    assert containing(views, "ada") == []


def test_a_new_process_loads_the_saved_image_and_indexes_only_what_changed_since(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LmdbLog(store_path) as store:
        views = Views(store)
        streams = [create(views, f"name{i}", f"fact {i}") for i in range(20)]
        assert containing(views, "fact") == streams
        assert views.search.save(every=1) == 1
        assert views.search.save(every=1) == 0  # nothing new to keep
    indexed: list[str] = []
    put = WorkspaceIndex.put
    monkeypatch.setattr(WorkspaceIndex, "put", lambda self, record: (indexed.append(record.name), put(self, record)))
    with LmdbLog(store_path) as store:
        views = Views(store)
        late = create(views, "late", "fact 20")
        write(views, streams[3], EntityDeleted())
        found = containing(views, "fact")
    assert indexed == ["late"]  # the other twenty came from the image
    assert found == [s for s in streams if s != streams[3]] + [late]


def test_an_index_is_saved_once_it_runs_far_enough_ahead_of_its_image(store: LmdbLog) -> None:
    views = Views(store)
    create(views, "a")
    containing(views, "a")
    assert [i.workspace for i in views.search.due(every=2)] == ["w"]  # no image yet
    views.search.save(every=2)
    create(views, "b")
    containing(views, "b")
    assert views.search.due(every=2) == []
    create(views, "c")
    containing(views, "c")
    assert [i.workspace for i in views.search.due(every=2)] == ["w"]


def test_a_rebuild_drops_every_image_and_the_index_is_built_again(store: LmdbLog) -> None:
    views = Views(store)
    stream = create(views, "Ada", "mathematician")
    containing(views, "ada")
    views.search.save(every=1)
    views.rebuild()
    with views.env.read() as txn:
        assert views.search.db is not None
        assert txn.stat(views.search.db)["entries"] == 0
    assert containing(views, "mathematician") == [stream]


def test_an_image_from_a_later_position_than_the_snapshot_is_not_used(store: LmdbLog) -> None:
    views = Views(store)
    first = create(views, "first")
    with views.snapshot() as old:
        create(views, "second")
        containing(views, "second")
        views.search.save(every=1)
        views.search._workspaces.clear()  # as if a new process answered an old snapshot
        with views.search.lock:
            assert views.search_index(old, "w").containing("first") == [first]
            assert views.search_index(old, "w").containing("second") == []


def test_a_rebuild_run_beside_this_process_drops_the_indexes_it_built_from_the_old_views(
    store_path: Path,
) -> None:
    with LmdbLog(store_path) as store:
        views = Views(store)
        stream = create(views, "Ada", "mathematician")
        assert containing(views, "ada") == [stream]
        subprocess.run([sys.executable, "-m", "chronograph", "replay", "--store", str(store_path), "--rebuild"],
                       check=True, capture_output=True, env={**os.environ, "CHRONOGRAPH_EMBEDDINGS": "off"})
        with views.snapshot():
            pass  # the next read adopts the rebuilt views
        assert views.search._workspaces == {}
        assert containing(views, "mathematician") == [stream]


def kept_parts(views: Views, workspace: str) -> int:
    head = digest(workspace.encode())
    with views.env.read() as txn:
        cursor = txn.cursor(db=views.search.db)
        cursor.set_range(head)
        return sum(1 for key in cursor.iternext(values=False) if bytes(key).startswith(head) and len(key) > len(head))


def test_images_prepared_a_part_at_a_time_never_hold_a_whole_index_and_load_whole_in_the_next_process(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexes, "PART_DOCS", 4)
    largest = [0]
    put = WorkspaceIndex.put

    def watched(self: WorkspaceIndex, record: EntityRecord) -> None:
        put(self, record)
        largest[0] = max(largest[0], len(self))

    with LmdbLog(store_path) as store:
        views = Views(store)
        streams = [create(views, f"name{i}", f"fact {i}") for i in range(25)]
        create(views, "other", "fact", workspace="v")
        monkeypatch.setattr(WorkspaceIndex, "put", watched)
        assert views.prepare_search() == 2
        assert largest[0] <= 4  # a part's documents at most, never the workspace's 25
        assert views.search.loaded() == []  # the process holds no index afterwards
        assert kept_parts(views, "w") == 6  # 24 documents in 6 parts, the last in the head
        assert views.prepare_search() == 0  # every image is at the head
    indexed: list[str] = []
    monkeypatch.setattr(WorkspaceIndex, "put", lambda self, record: (indexed.append(record.name), put(self, record)))
    with LmdbLog(store_path) as store:
        views = Views(store)
        assert containing(views, "fact") == streams
        assert containing(views, "name1") == [streams[1]] + streams[10:20]
        assert indexed == []  # loaded from the parts, nothing indexed again
        late = create(views, "late", "fact 25")
        assert containing(views, "fact") == [*streams, late]
        assert views.prepare_search() == 2  # the index it holds kept whole, the small one of "v" caught up
        assert kept_parts(views, "w") == 0  # and the parts of the image it replaced are gone
    with LmdbLog(store_path) as store:
        views = Views(store)
        assert containing(views, "fact") == [*streams, late]


def test_forgetting_a_workspace_s_image_drops_its_parts(store: LmdbLog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexes, "PART_DOCS", 2)
    views = Views(store)
    for i in range(7):
        create(views, f"name{i}", f"fact {i}")
    create(views, "other", "fact", workspace="v")
    views.prepare_search()
    assert kept_parts(views, "w") == 3
    views.env.write(lambda txn: views.search.drop_image(txn, "w"))
    assert kept_parts(views, "w") == 0
    with views.env.read() as txn:
        assert txn.get(digest(b"w"), db=views.search.db) is None
        assert txn.get(digest(b"v"), db=views.search.db) is not None


def test_an_index_caught_up_while_its_image_is_written_is_still_to_be_saved(
        store: LmdbLog, monkeypatch: pytest.MonkeyPatch) -> None:
    views = Views(store)
    create(views, "Ada", "mathematician")
    containing(views, "ada")
    real, meanwhile = views.search.env.write, []

    def write(work):  # type: ignore[no-untyped-def]
        if not meanwhile:  # a write and a search between the image's making and its keeping
            meanwhile.append("")
            meanwhile[0] = create(views, "Bob", "engineer")
            assert containing(views, "engineer") == meanwhile
        return real(work)

    monkeypatch.setattr(views.search.env, "write", write)
    assert views.search.save(every=None) == 1
    assert [index.workspace for index in views.search.changed()] == ["w"]  # Bob is not in the image kept
