"""The answers the stdio front keeps: never an answer to one call served for another, never an
error's metadata on a success, and nothing of them left once what they quoted is forgotten."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import lmdb
import pytest
from chronograph.projections.keys import ANSWER_CACHES
from chronograph.server.replies import ReplyCache
from chronograph.tools.cli import main as cli

pytestmark = pytest.mark.wire
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SECRET, SAID = "Quendolyn Marsh-Pettigrew", "keeps the vault code 77-Zyx-31"
META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "desktop", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}


def request(ident: int, method: str, params: dict[str, Any], protocol: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method,
            "params": {**params, **META} if protocol == "stateless" else params}


def session(store: Path, protocol: str, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The results of `calls`, made in one stdio session of a fresh server process."""
    if protocol == "handshake":
        opening = [request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "desktop", "version": "1"}}, protocol),
                   {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    else:
        opening = [request(0, "server/discover", {}, protocol)]
    wire = [*opening, *(request(i, "tools/call", {"name": tool, "arguments": arguments}, protocol)
                        for i, (tool, arguments) in enumerate(calls, 1))]
    done = subprocess.run([sys.executable, "-m", "chronograph", "--store", str(store)],
                          input=b"".join(json.dumps(m).encode() + b"\n" for m in wire),
                          capture_output=True, env=ENV, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.decode().splitlines())}
    return [replies[i]["result"] for i in range(1, len(calls) + 1)]


def in_store(store: Path, text: str) -> list[str]:
    return [file.name for file in store.iterdir() if text.encode() in file.read_bytes()]


@pytest.mark.parametrize("protocol", ["handshake", "stateless"])
def test_a_conflict_s_answer_is_never_served_again_and_forgetting_leaves_none_of_it(
    tmp_path: Path, protocol: str
) -> None:
    store = tmp_path / "store"
    created, conflict = session(store, protocol, (
        "create_entities", {"entities": [{"name": SECRET, "entityType": "person", "observations": [SAID]}]}), (
        "add_observations", {"observations": [{"entityName": SECRET, "contents": ["x"], "expectedVersion": 7}]}))
    assert conflict["isError"] and SAID in conflict["_meta"]["chronograph/error"]["message"]
    assert cli(["forget", "--store", str(store), SECRET, "--reason", "asked by the data subject"]) == 0
    [graph] = session(store, protocol, ("read_graph", {}))  # answered by the front from what it kept
    assert graph["isError"] is False and graph["structuredContent"] == {"entities": [], "relations": []}
    assert "chronograph/error" not in graph.get("_meta", {})
    assert SAID not in json.dumps(graph) and SECRET not in json.dumps(graph)
    assert in_store(store, SAID) == [] and in_store(store, SECRET) == []


@pytest.mark.parametrize("protocol", ["handshake", "stateless"])
def test_a_success_served_after_an_error_was_kept_carries_no_error(tmp_path: Path, protocol: str) -> None:
    store = tmp_path / "store"
    read, refused = session(store, protocol, ("read_graph", {}), ("open_nodes", {"names": "not a list"}))
    assert refused["_meta"]["chronograph/error"]["code"] == "invalid"  # the SDK answered both; answers were kept
    [again] = session(store, protocol, ("read_graph", {}))  # answered by the front
    assert again == read and "chronograph/error" not in again.get("_meta", {})


def test_the_kept_answers_are_a_database_every_erasure_drops() -> None:
    assert ANSWER_CACHES.fullmatch(ReplyCache.NAME)


def test_answers_an_earlier_version_kept_are_dropped_and_scrubbed_at_open(tmp_path: Path) -> None:
    store = tmp_path / "store"
    session(store, "handshake", ("read_graph", {}))
    env = lmdb.open(str(store), max_dbs=64)
    with env.begin(write=True) as txn:  # what versions before the fix kept after a conflict
        txn.put(b"k" * 32, json.dumps({"_meta": {"chronograph/error": {"message": SAID}}}).encode(),
                db=env.open_db(b"replies.v1", txn=txn))
    env.close()
    assert in_store(store, SAID)
    [graph] = session(store, "handshake", ("read_graph", {}))
    assert "chronograph/error" not in graph.get("_meta", {})
    assert in_store(store, SAID) == []


def test_what_a_profile_publishes_is_worked_out_once_per_code_and_again_when_the_code_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronograph.application import Memory
    from chronograph.server import replies
    from chronograph.server.config import Settings

    worked: list[object] = []
    schema = replies.json_schema
    monkeypatch.setattr(replies, "json_schema", lambda kind: worked.append(kind) or schema(kind))
    settings = Settings(store=tmp_path / "store")
    with Memory(tmp_path / "store") as memory:
        first = ReplyCache(memory, settings)._code
        assert worked
        worked.clear()
        assert ReplyCache(memory, settings)._code == first  # remembered: a spawn resolves no annotations
        assert worked == []
        monkeypatch.setattr(replies, "_source_stamp", lambda: "an edited source file")
        assert ReplyCache(memory, settings)._code == first  # the same surface, worked out again
        assert worked
