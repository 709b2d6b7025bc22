"""Five agents, five server processes, one store: Agent Memory's multi-agent promise, checked
from the outside (the replies) and from the inside (the log)."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from chronograph.eventstore import LmdbLog
from chronograph.eventstore.teamevents import EntryUpdated, FileCheckedIn, FileCheckedOut, FileForceUnlocked
from mcp import Client, StdioServerParameters
from support.mcp import call

pytestmark = [pytest.mark.anyio, pytest.mark.wire]
ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
AGENTS = 5
ROUNDS = 12
FILES = ["/repo/src/auth.ts", "/repo/src/db.ts"]


def server(store: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "chronograph", "--store", str(store),
                                                              "--profile", "agent-memory"], env=ENV, cwd=str(ROOT))


async def attempt(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    return (not result.is_error), (result.structured_content if not result.is_error else json.loads(text))


async def test_five_agents_lose_no_write_and_never_share_a_lock(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with Client(server(store)) as setup:
        project = (await call(setup, "memory_project", {"action": "create", "name": "shop"}))["project"]["id"]
        shared = [(await call(setup, "memory_knowledge", {
            "action": "add", "scopeType": "project", "scopeId": project, "title": f"notes-{n}",
            "content": "start"}))["knowledge"]["id"] for n in range(2)]
    applied: list[dict[str, Any]] = []
    refusals: list[dict[str, Any]] = []

    async def agent(number: int) -> None:
        rng = random.Random(number)
        name = f"agent-{number}"
        async with Client(server(store)) as client:
            session = (await call(client, "memory_session", {"action": "start", "projectId": project,
                                                              "agentId": name, "purpose": "refactor"}))["session"]["id"]
            for step in range(ROUNDS):
                path = rng.choice(FILES)
                took, answer = await attempt(client, "memory_file_lock", {
                    "action": "checkout", "file_path": path, "agent_id": name, "session_id": session,
                    "expires_in": 60})
                if not took:
                    assert answer["code"] == "locked" and answer["lock"]["checkedOutBy"] != name
                    refusals.append(answer)
                entry = rng.choice(shared)
                updated = await call(client, "memory_knowledge", {
                    "action": "update", "id": entry, "content": f"{name} step {step}", "sessionId": session,
                    "createdBy": name, "changeReason": "refactor"})
                applied.append(updated)
                if took:
                    await call(client, "memory_file_lock", {"action": "checkin", "file_path": path, "agent_id": name})
            await call(client, "memory_session", {"action": "end", "id": session})

    async with anyio.create_task_group() as group:
        for number in range(AGENTS):
            group.start_soon(agent, number)

    assert len(applied) == AGENTS * ROUNDS
    async with Client(server(store)) as reader:
        history = {entry: (await call(reader, "memory_knowledge", {"action": "history", "id": entry}))["versions"]
                   for entry in shared}
        conflicts = (await call(reader, "memory_conflict", {"action": "list", "limit": 1000}))["conflicts"]
        context = await call(reader, "memory_query", {"action": "context", "scopeType": "project",
                                                      "scopeId": project})
    # every update is a version of its entry: none lost, none merged away
    written = sorted(a["knowledge"]["currentVersion"]["content"] for a in applied)
    kept = sorted(v["content"] for versions in history.values() for v in versions if v["versionNum"] > 1)
    assert written == kept
    # a conflict names two versions that exist, and flags the later one
    for conflict in conflicts:
        versions = {v["id"]: v for v in history[conflict["entryId"]]}
        assert conflict["versionAId"] in versions and versions[conflict["versionBId"]]["conflictFlag"]
    # the context equals a model built from the replies: each entry's newest version wins
    model: dict[str, tuple[int, str]] = {}
    for answer in applied:
        entry = answer["knowledge"]
        version = entry["currentVersion"]
        if version["versionNum"] > model.get(entry["id"], (0, ""))[0]:
            model[entry["id"]] = (version["versionNum"], version["content"])
    seen = {k["id"]: k["currentVersion"]["content"] for k in context["knowledge"]}
    assert seen == {entry: content for entry, (_, content) in model.items()}
    # from the log: no file ever had two live holders
    holders: dict[str, tuple[str, int]] = {}
    checkouts = 0
    with LmdbLog(store, readonly=True) as log, log.read() as reader_log:
        for envelope in reader_log.all():
            event = envelope.event
            if isinstance(event, FileCheckedOut):
                held = holders.get(envelope.stream)
                if held is not None and held[0] != event.agent_id:
                    assert held[1] <= envelope.recorded_at, f"{event.agent_id} took a lock {held[0]} held"
                holders[envelope.stream] = (event.agent_id, event.expires_at)
                checkouts += 1
            elif isinstance(event, FileCheckedIn | FileForceUnlocked):
                holders.pop(envelope.stream, None)
            elif isinstance(event, EntryUpdated):  # the audit says which session wrote it
                assert event.session_id and envelope.actor.endswith(f"/{event.session_id}")
    assert checkouts + len(refusals) == AGENTS * ROUNDS
    assert refusals and conflicts, "the agents did not contend: the test proved nothing"
