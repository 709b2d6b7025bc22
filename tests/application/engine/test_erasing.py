"""An erasure whose commit was cut off on a PostgreSQL log (the database's answer to the COMMIT
lost with the connection): the call cannot tell whether it landed, and says so. If it did, a
retry answers as the first call would have (erased, and scrubbed), with the same requestId or
in the same process; the server finishes the scrub it owes at its next write; and nothing the
process derived keeps what was erased meanwhile."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.errors import StorageError
from support.answerless import AnswerlessProxy
from support.postgres import SERVER, database
from support.team import call

pytest.importorskip("psycopg")

SECRET, SAID = "Philippa Quarrington-Obi", "keeps bees at Mallow Lane"


@pytest.fixture
def proxy() -> Iterator[AnswerlessProxy]:
    host, port = SERVER.rsplit("@", 1)[-1].rsplit(":", 1)
    cutter = AnswerlessProxy((host, int(port)))
    yield cutter
    cutter.close()


def cut_forget(memory: Memory, proxy: AnswerlessProxy, **extra: str) -> str:
    """Forget SECRET with the answer to its commit lost: the call says it may or may not be stored
    (what it says is returned)."""
    memory.write("create_entities", {"entities": [{"name": SECRET, "entityType": "person", "observations": [SAID]}]},
                 actor="t")
    assert memory.read("search_nodes", {"query": "Quarrington"}).entities  # an index that holds it
    proxy.arm()
    with pytest.raises(StorageError, match="may or may not have been stored") as cut:
        memory.write("forget_entity", {"name": SECRET, "reason": "asked", **extra}, actor="t")
    assert proxy.cut.wait(10)
    return str(cut.value)


def counts(memory: Memory) -> tuple[int, int]:
    with memory.log.read() as log:
        return log.erasures(), log.scrubbed_through()


def test_a_forget_retried_after_its_commit_was_cut_off_answers_erased_and_scrubbed(
        tmp_path: Path, proxy: AnswerlessProxy) -> None:
    with Memory(proxy.url(database().log_url()), cache=tmp_path / "cache") as memory:
        cut_forget(memory, proxy)
        assert counts(memory) == (1, 0)  # it landed, and its scrub did not run
        out = memory.write("forget_entity", {"name": SECRET, "reason": "asked again"}, actor="t").output
        assert (out.entities, out.scrubbed, len(out.streams)) == (1, True, 1), out
        assert counts(memory) == (1, 1)
        with pytest.raises(Exception, match="nothing was erased"):  # answered once: a later call is a new one
            memory.write("forget_entity", {"name": SECRET, "reason": "asked again"}, actor="t")


def test_a_forget_whose_commit_was_cut_off_advises_the_retry_that_settles_it(
        tmp_path: Path, proxy: AnswerlessProxy) -> None:
    with Memory(proxy.url(database().log_url()), cache=tmp_path / "cache") as memory:
        said = cut_forget(memory, proxy)
    assert "Retry the same call through this server" in said and "finishes its scrub" in said, said
    assert "writes it again" not in said  # before: every write's advice, which a forget's retry belies


def test_a_forget_retried_with_its_request_id_after_its_commit_was_cut_off_finishes_its_scrub(
        tmp_path: Path, proxy: AnswerlessProxy) -> None:
    with Memory(proxy.url(database().log_url()), cache=tmp_path / "cache") as memory:
        cut_forget(memory, proxy, requestId="forget-1")
        out = memory.write("forget_entity", {"name": SECRET, "reason": "asked", "requestId": "forget-1"},
                           actor="t").output
        assert (out.entities, out.scrubbed) == (1, True) and "overwritten" in out.message, out
        assert counts(memory) == (1, 1)
        again = memory.write("forget_entity", {"name": SECRET, "reason": "asked", "requestId": "forget-1"},
                             actor="t").output
        assert again == out  # the completed answer is the one kept now


def test_a_forget_retried_with_its_request_id_in_another_process_is_answered_scrubbed(
        tmp_path: Path, proxy: AnswerlessProxy) -> None:
    url = database().log_url()
    with Memory(proxy.url(url), cache=tmp_path / "cache") as memory:
        cut_forget(memory, proxy, requestId="forget-1")
    with Memory(url, cache=tmp_path / "other") as other:  # whose opening finishes the scrub
        out = other.write("forget_entity", {"name": SECRET, "reason": "asked", "requestId": "forget-1"},
                          actor="t").output
        assert (out.entities, out.scrubbed) == (1, True) and "finished since" in out.message, out


def test_a_server_finishes_the_scrub_a_cut_off_forget_owes_at_its_next_write(
        tmp_path: Path, proxy: AnswerlessProxy) -> None:
    with Memory(proxy.url(database().log_url()), cache=tmp_path / "cache") as memory:
        cut_forget(memory, proxy)
        memory.write("create_entities", {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]},
                     actor="t")
        assert counts(memory) == (1, 1)


def test_a_following_server_finishes_the_scrub_a_cut_off_forget_owes_without_a_write(
        tmp_path: Path, proxy: AnswerlessProxy) -> None:
    with Memory(proxy.url(database().log_url()), cache=tmp_path / "cache") as memory:
        cut_forget(memory, proxy)
        memory.follow()
        for _ in range(300):  # it looks every second or so
            if counts(memory) == (1, 1):
                break
            time.sleep(0.1)
        assert counts(memory) == (1, 1)


def test_a_team_entry_s_forget_retried_after_its_commit_was_cut_off_answers_forgotten_and_scrubbed(
        tmp_path: Path, proxy: AnswerlessProxy) -> None:
    with Memory(proxy.url(database().log_url()), cache=tmp_path / "cache") as memory:
        entry = call(memory, "memory_knowledge", action="add", scopeType="global", title=SECRET,
                     content=SAID)["knowledge"]["id"]
        proxy.arm()
        with pytest.raises(StorageError, match="may or may not have been stored"):
            call(memory, "memory_forget", id=entry, reason="asked")
        assert counts(memory) == (1, 0)
        answer = call(memory, "memory_forget", id=entry, reason="asked")
        assert answer["scrubbed"] is True and answer["forgotten"]["id"] == entry, answer
        assert counts(memory) == (1, 1)


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
