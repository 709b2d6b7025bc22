"""An erasure whose commit was cut off on a PostgreSQL log (the database's answer to the COMMIT
lost with the connection): the call cannot tell whether it landed, and says so. If it did, a
retry answers as the first call would have (erased, and scrubbed), with the same requestId or
in the same process; the server finishes the scrub it owes at its next write; and nothing the
process derived keeps what was erased meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.errors import StorageError
from support.answerless import AnswerlessProxy
from support.postgres import SERVER, database

pytest.importorskip("psycopg")

SECRET, SAID = "Philippa Quarrington-Obi", "keeps bees at Mallow Lane"


@pytest.fixture
def proxy() -> Iterator[AnswerlessProxy]:
    host, port = SERVER.rsplit("@", 1)[-1].rsplit(":", 1)
    cutter = AnswerlessProxy((host, int(port)))
    yield cutter
    cutter.close()


def cut_forget(memory: Memory, proxy: AnswerlessProxy, **extra: str) -> None:
    """Forget SECRET with the answer to its commit lost: the call says it may or may not be stored."""
    memory.write("create_entities", {"entities": [{"name": SECRET, "entityType": "person", "observations": [SAID]}]},
                 actor="t")
    assert memory.read("search_nodes", {"query": "Quarrington"}).entities  # an index that holds it
    proxy.arm()
    with pytest.raises(StorageError, match="may or may not have been stored"):
        memory.write("forget_entity", {"name": SECRET, "reason": "asked", **extra}, actor="t")
    assert proxy.cut.wait(10)


def counts(memory: Memory) -> tuple[int, int]:
    with memory.log.read() as log:
        return log.erasures(), log.scrubbed_through()



def test_no_read_answers_what_a_forget_whose_commit_was_cut_off_erased(
        tmp_path: Path, proxy: AnswerlessProxy) -> None:
    """The views took the erasure's count at its fold, before the commit that failed: the catch-up
    then took the entity out of them, but what they derived (the word index) kept it."""
    with Memory(proxy.url(database().log_url()), cache=tmp_path / "cache") as memory:
        cut_forget(memory, proxy)
        assert memory.read("search_nodes", {"query": "Quarrington"}).entities == []
        assert memory.read("search_nodes", {"query": "bees Mallow"}).entities == []
    held = b"".join(path.read_bytes() for path in (tmp_path / "cache").rglob("*") if path.is_file())
    assert SECRET.encode() not in held and SAID.encode() not in held
