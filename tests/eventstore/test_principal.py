"""The envelope's principal: recorded by both codecs and both backends, left out for the local user
(old logs read as `local`), carried by copies."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from chronograph.eventstore import LOCAL, Codec, EntityCreated, Envelope, LmdbLog, RelationCreated, StreamWrite
from chronograph.eventstore.compact import relation_stream
from chronograph.eventstore.copying import copy_log, verify_copy

CALL = "0123456789abcdef0123456789abcdef"


def some_writes() -> list[StreamWrite]:
    relation = RelationCreated(workspace="w", source="Ada", target="Bob", relation_type="knows")
    return [StreamWrite("e1", [EntityCreated(workspace="w", name="Ada", entity_type="person")]),
            StreamWrite(relation_stream("w", "Ada", "knows", "Bob"), [relation])]


@pytest.mark.parametrize("codec", [1, 2])
def test_the_principal_of_an_append_is_read_back_from_every_event(tmp_path: Path, codec: int) -> None:
    with LmdbLog(tmp_path / "s", codec=Codec(writes=codec)) as log:
        log.append(some_writes(), actor="claude-code", principal="alice", correlation_id=CALL)
        log.append([StreamWrite("e2", [EntityCreated(workspace="w", name="Cy", entity_type="t")])], actor="cli")
        with log.read() as reader:
            events = list(reader.all())
            slim = [e for batch in reader.batches(1, 3) for e in batch]
    assert [(e.actor, e.principal) for e in events] == [("claude-code", "alice")] * 2 + [("cli", LOCAL)]
    assert [e.principal for e in slim] == ["alice", "alice", LOCAL]


@pytest.mark.parametrize("codec", [1, 2])
def test_a_local_write_keeps_the_record_it_had_before_envelopes_named_a_principal(tmp_path: Path, codec: int) -> None:
    with LmdbLog(tmp_path / "s", codec=Codec(writes=codec)) as log:
        log.append(some_writes()[:1], actor="cli")
        log.append(some_writes()[:1], actor="cli", principal="alice")
        with log.read() as reader:
            local, alice = reader.stored(1, 2)
    assert len(msgspec.msgpack.decode(local)) == (9 if codec == 1 else 10)
    assert len(msgspec.msgpack.decode(alice)) == len(msgspec.msgpack.decode(local)) + 1
    assert msgspec.msgpack.decode(alice)[-1] == "alice"


def test_a_record_written_before_principals_reads_as_the_local_user_s() -> None:
    codec = Codec(writes=1)
    old = msgspec.msgpack.encode([1, "e1", 1, 5, 1, "claude", CALL, None,
                                  {"type": "entity_created", "workspace": "w", "name": "Ada", "entityType": "t"}])
    envelope = codec.decode(old)
    assert envelope.principal == LOCAL and envelope.actor == "claude"
    assert codec.decode_many([old, old])[1].principal == LOCAL


@pytest.mark.parametrize("name", ["", "bad\x02", "tab\tname"])
def test_a_principal_a_record_cannot_carry_is_refused_before_anything_is_written(store: LmdbLog, name: str) -> None:
    with pytest.raises(ValueError, match="principal"):
        store.append(some_writes(), actor="a", principal=name)
    assert store.head() == 0


def test_a_copy_between_codecs_keeps_each_event_s_principal(tmp_path: Path) -> None:
    with LmdbLog(tmp_path / "old", codec=Codec(writes=1)) as old, LmdbLog(tmp_path / "new") as new:
        old.append(some_writes(), actor="a", principal="alice")
        old.append([StreamWrite("e9", [EntityCreated(workspace="w", name="Z", entity_type="t")])], actor="a")
        copy_log(old, new)
        verify_copy(old, new)
        with new.read() as reader:
            assert [e.principal for e in reader.all()] == ["alice", "alice", LOCAL]


def test_an_envelope_built_without_a_principal_is_the_local_user_s() -> None:
    envelope = Envelope(1, "s", 1, 0, 1, "a", CALL, None, EntityCreated(workspace="w", name="n", entity_type="t"))
    assert envelope.principal == LOCAL


def test_a_database_log_records_the_principal_too(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    from chronograph.application.engine.stores import open_store  # noqa: PLC0415 (psycopg only when there)
    from support.postgres import database  # noqa: PLC0415

    store = open_store(database().log_url(), cache=tmp_path / "cache")
    try:
        store.log.append(some_writes(), actor="a", principal="alice")
        store.log.append(some_writes()[:1], actor="a")
        with store.log.read() as reader:
            assert [e.principal for e in reader.all()] == ["alice", "alice", LOCAL]
    finally:
        store.log.close()
        assert store.cache is not None
        store.cache.close()
