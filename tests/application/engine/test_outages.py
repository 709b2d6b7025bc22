"""What a call is told when the store's database goes away under it, and what the next call sees:
a write whose commit was cut off is `outcome_unknown`, says to retry with the same requestId (which
answers what was stored), and the next read catches up with the log first; a database out of
reach is `unavailable`; a full store stays `storage` (tests/application/engine/test_storage.py).
A proxy in front of this run's PostgreSQL drops the connection once the COMMIT has gone through,
or refuses every connection."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from chronograph.application import Memory
from chronograph.application.errors import StorageError
from support.postgres import SERVER, database
from support.tcpproxy import TcpProxy

pytest.importorskip("psycopg")

COMMIT = b"\x00COMMIT\x00"
"""The COMMIT as it crosses the wire (a Parse message's statement, between NULs)."""


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[TcpProxy, Memory]]:
    """A memory on a log of this run's database reached through a proxy, and the proxy."""
    host, port = SERVER.rsplit("@", 1)[-1].rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    url = database().log_url().replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}")
    try:
        with Memory(url, cache=tmp_path / "cache") as memory:
            yield proxy, memory
    finally:
        proxy.close()


def create(name: str, request_id: str | None = None) -> dict[str, object]:
    arguments: dict[str, object] = {"entities": [{"name": name, "entityType": "person", "observations": []}]}
    if request_id is not None:
        arguments["requestId"] = request_id
    return arguments


def names(memory: Memory) -> set[str]:
    return {entity.name for entity in memory.read("read_graph", {}).entities}  # type: ignore[attr-defined]


def test_a_write_whose_commit_was_cut_off_is_outcome_unknown_and_a_retry_with_its_request_id_answers_it(
    proxied: tuple[TcpProxy, Memory],
) -> None:
    proxy, memory = proxied
    memory.write("create_entities", create("Ada"), actor="t")
    head = memory.log.head()
    proxy.drop_after(COMMIT)
    with pytest.raises(StorageError) as cut:
        memory.write("create_entities", create("Bob", "bob-1"), actor="t")
    said = str(cut.value)
    assert cut.value.code == "outcome_unknown", said
    assert "may or may not have been stored" in said and "nothing was written" not in said, said
    assert "Retry the call with the same requestId 'bob-1'" in said, said
    stored = memory.log.head() > head
    assert stored  # the COMMIT reached the database before the connection was dropped
    assert names(memory) == {"Ada", "Bob"}  # the read caught up with the log: not the views the failure rolled back
    again = memory.write("create_entities", create("Bob", "bob-1"), actor="t")
    assert again.replayed and not again.changed
    assert msgspec.to_builtins(again.output)
    assert memory.log.head() == head + 1


def test_a_write_without_a_request_id_whose_commit_was_cut_off_says_to_read_first(
    proxied: tuple[TcpProxy, Memory],
) -> None:
    proxy, memory = proxied
    memory.write("create_entities", create("Ada"), actor="t")
    proxy.drop_after(COMMIT)
    with pytest.raises(StorageError) as cut:
        memory.write("create_entities", create("Bob"), actor="t")
    assert cut.value.code == "outcome_unknown"
    assert "Read before you retry" in str(cut.value) and "requestId" in str(cut.value)
    assert names(memory) == {"Ada", "Bob"}


def test_a_database_out_of_reach_is_unavailable_and_a_read_after_a_cut_commit_waits_for_it(
    proxied: tuple[TcpProxy, Memory],
) -> None:
    proxy, memory = proxied
    memory.write("create_entities", create("Ada"), actor="t")
    proxy.drop_after(COMMIT)
    with pytest.raises(StorageError):
        memory.write("create_entities", create("Bob", "bob-1"), actor="t")
    proxy.refuse()
    with memory.log.patience(1.0):
        with pytest.raises(StorageError) as reading:  # not the views the failure rolled back, without Bob
            names(memory)
        with pytest.raises(StorageError) as writing:
            memory.write("create_entities", create("Cy", "cy-1"), actor="t")
    for refused in (writing.value, reading.value):
        assert refused.code == "unavailable", str(refused)
        assert "cannot be reached" in str(refused), str(refused)
    assert "nothing was written" in str(writing.value)
    proxy.mend()
    assert names(memory) == {"Ada", "Bob"}
