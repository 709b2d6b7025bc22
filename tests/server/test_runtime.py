"""The runtime: over HTTP, tool work leaves the event loop; reads beside each other, a session's calls in turn."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from chronograph.application import CORE
from chronograph.application.team.common import TEAM
from chronograph.eventstore.teamevents import EntryAdded
from chronograph.server.app import Runtime
from chronograph.server.config import Settings
from freezegun import freeze_time


class FakeContext:
    class session:  # noqa: N801 (the shape of the SDK's context)
        client_params = None

    class request_context:  # noqa: N801
        request = None


@pytest.mark.parametrize("offload", [True, False])
def test_calls_run_off_the_event_loop_only_when_asked(tmp_path: Path, offload: bool) -> None:
    runtime = Runtime(Settings(store=tmp_path / "store", actor="t"), offload=offload)
    runtime.open()
    seen: list[int] = []
    real = runtime.memory.read

    def read(tool: Any, arguments: dict[str, Any], **options: Any) -> Any:
        seen.append(threading.get_ident())
        return real(tool, arguments, **options)

    runtime.memory.read = read  # type: ignore[method-assign]

    async def main() -> int:
        await runtime.call(CORE["read_graph"], {}, FakeContext())  # type: ignore[arg-type]
        return threading.get_ident()

    try:
        loop_thread = anyio.run(main)
    finally:
        runtime.close()
    assert (seen[0] != loop_thread) is offload


class SessionContext(FakeContext):
    """A call's context over HTTP, in the session `session_id`."""

    def __init__(self, session_id: str) -> None:
        class Request:
            headers = {"mcp-session-id": session_id}

        class RequestContext:
            request = Request()

        self.request_context = RequestContext()  # type: ignore[assignment,misc]


def test_a_session_s_reads_take_turns_while_another_session_s_read_runs_beside_them(tmp_path: Path) -> None:
    runtime = Runtime(Settings(store=tmp_path / "store", actor="t"), offload=True)
    runtime.open()
    inside: dict[str, int] = {}
    most: dict[str, int] = {}
    both = threading.Barrier(2, timeout=30)  # each session's first read waits for the other's
    guard = threading.Lock()
    real = runtime.memory.read

    def read(tool: Any, arguments: dict[str, Any], **options: Any) -> Any:
        who = arguments["names"][0]
        with guard:
            inside[who] = inside.get(who, 0) + 1
            most[who] = max(most.get(who, 0), inside[who])
        try:
            if arguments["names"][1:] == ["first"]:
                both.wait()  # returns only if the other session's read runs at the same time
            return real(tool, {"names": arguments["names"][:1]}, **options)
        finally:
            with guard:
                inside[who] -= 1

    runtime.memory.read = read  # type: ignore[method-assign]

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for who in ("a", "b"):
                context = SessionContext(who)
                group.start_soon(runtime.call, CORE["open_nodes"], {"names": [who, "first"]}, context)
                for _ in range(5):  # sent at once, in the same session
                    group.start_soon(runtime.call, CORE["open_nodes"], {"names": [who]}, context)

    try:
        anyio.run(main)
    finally:
        runtime.close()
    assert most == {"a": 1, "b": 1}
    assert not runtime._turns  # noqa: SLF001 (no session's turn is kept once its calls are done)



def test_a_connection_s_writes_stop_carrying_its_session_once_anyone_ends_it(tmp_path: Path) -> None:
    runtime = Runtime(Settings(store=tmp_path / "store", actor="t", profile="agent-memory"), offload=True)
    memory = runtime.open()

    def write(connection: str, tool: str, **arguments: Any) -> None:
        runtime.run(TEAM[tool], arguments, "claude", connection)

    try:
        write("one", "memory_session", action="start", name="mine")
        [session] = memory.read("memory_session", {"action": "list"}).reply["sessions"]  # type: ignore[attr-defined]
        write("one", "memory_knowledge", action="add", scopeType="global", title="during", content="x")
        write("two", "memory_session", action="end", id=session["id"], status="discarded")
        write("one", "memory_knowledge", action="add", scopeType="global", title="after", content="x")
        write("one", "memory_session", action="start", name="next")
        write("one", "memory_init", action="reset", confirm=True)  # a reset empties the sessions too
        write("one", "memory_knowledge", action="add", scopeType="global", title="reset", content="x")
        with memory.log.read() as log:
            actors = {e.event.name: e.actor for e in log.all() if isinstance(e.event, EntryAdded)}
    finally:
        runtime.close()
    assert actors == {"during": f"claude/{session['id']}", "after": "claude", "reset": "claude"}


def test_two_servers_of_one_client_software_are_two_writers_and_a_session_started_between_is_not(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"

    def conflict(runtime: Runtime, tool: str, **arguments: Any) -> Any:
        reply, _ = runtime.run(TEAM[tool], arguments, "mcp", runtime.connection(FakeContext()))  # type: ignore[arg-type]
        return reply.structured.get("conflict") if reply.structured else None

    with freeze_time("2026-05-01T10:00:00Z") as clock:
        first = Runtime(Settings(store=store, profile="agent-memory"))
        memory = first.open()
        try:
            conflict(first, "memory_knowledge", action="add", scopeType="global", title="deploy", content="fridays")
            [entry] = memory.read("memory_knowledge", {"action": "list"}).reply["knowledge"]  # type: ignore[attr-defined]
            conflict(first, "memory_session", action="start", name="mine")  # its writes carry the session from now
            clock.tick(1)
            assert conflict(first, "memory_knowledge", action="update", id=entry["id"], content="never") is None
        finally:
            first.close()
        second = Runtime(Settings(store=store, profile="agent-memory"))  # another process, same client software
        second.open()
        try:
            clock.tick(1)
            assert conflict(second, "memory_knowledge", action="update", id=entry["id"], content="any day")
        finally:
            second.close()
