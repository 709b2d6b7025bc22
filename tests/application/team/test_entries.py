"""Typed team entries as the readers take them, and who counts as another writer."""

from __future__ import annotations

from typing import Any

from chronograph.application import Memory, Registry
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.team.common import Team, TeamArgs
from chronograph.eventstore.teamevents import EntryUpdated
from support.team import call


class Nulls(TeamArgs, kw_only=True):
    entry: str
    fields: dict[str, Any]


def test_a_log_that_holds_a_null_priority_or_confidence_reads_as_the_default(memory: Memory) -> None:
    old = Registry()  # what a `replace` import wrote before it kept add's defaults

    @old.command("null_fields", "Null fields", "Writes a version whose defaulted fields are null")
    def null_fields(batch: Any, args: Nulls) -> ObjectOut:
        Team.of(batch, "null_fields").emit(f"am/entry/{args.entry}", EntryUpdated(fields=args.fields))
        return object_out(success=True)

    style = call(memory, "memory_guideline", action="add", scopeType="global", name="style", content="Use black rule",
                 priority=90)["guideline"]["id"]
    call(memory, "memory_guideline", action="add", scopeType="global", name="low", content="A rule", priority=10)
    fact = call(memory, "memory_knowledge", action="add", scopeType="global", title="fact", content="a rule",
                confidence=0.4)["knowledge"]["id"]
    memory.write(old["null_fields"], {"entry": style, "fields": {"priority": None, "category": None}}, actor="old")
    memory.write(old["null_fields"], {"entry": fact, "fields": {"confidence": None}}, actor="old")

    listed = call(memory, "memory_guideline", action="list")["guidelines"]
    assert [(g["name"], g["priority"]) for g in listed] == [("style", 50), ("low", 10)]
    found = call(memory, "memory_query", action="search", search="rule")["results"]
    assert [r["id"] for r in found][0] == style
    assert call(memory, "memory_query", action="search", search="none")["results"] == []  # a null is no text
    assert call(memory, "memory_query", action="search", compact=True)["results"][0]["guideline"]["priority"] == 50
    context = call(memory, "memory_query", action="context", scopeType="global")
    assert [g["name"] for g in context["guidelines"]] == ["style", "low"]
    known = call(memory, "memory_knowledge", action="get", id=fact)["knowledge"]
    assert known["currentVersion"]["confidence"] == 1.0
    assert "priority: 50" in call(memory, "memory_export", action="export", format="markdown")["content"]


def update(memory: Memory, entry: str, content: str, connection: str, **given: Any) -> Any:
    """An update as the client `mcp` sends it through `connection`; its conflict, or None."""
    out = memory.write("memory_knowledge", {"action": "update", "id": entry, "content": content, **given},
                       actor="mcp", writer=memory.writer_for("mcp", connection)).output
    assert isinstance(out, ObjectOut)
    return out.reply.get("conflict")


def add(memory: Memory, title: str, connection: str, **given: Any) -> str:
    out = memory.write("memory_knowledge", {"action": "add", "scopeType": "global", "title": title, "content": "a",
                                            **given}, actor="mcp", writer=memory.writer_for("mcp", connection)).output
    assert isinstance(out, ObjectOut)
    return str(out.reply["knowledge"]["id"])


def test_two_connections_of_one_client_software_moments_apart_are_a_conflict(memory: Memory) -> None:
    entry = add(memory, "deploy", "one")
    assert update(memory, entry, "never on fridays", "one") is None
    assert update(memory, entry, "any day", "two") is not None  # same client name, no createdBy, no session


def test_one_agent_correcting_itself_is_no_conflict_whatever_it_leaves_out(memory: Memory) -> None:
    session = call(memory, "memory_session", action="start", name="work")["session"]["id"]
    by_name = add(memory, "t1", "one", createdBy="alice")
    assert update(memory, by_name, "b", "one", createdBy="alice") is None
    in_session = add(memory, "t2", "one", createdBy="alice", sessionId=session)
    assert update(memory, in_session, "b", "one", createdBy="alice") is None  # sessionId given, then left out
    bare = add(memory, "t3", "one", sessionId=session)
    assert update(memory, bare, "b", "one") is None  # nothing but its connection says who it is
    assert update(memory, by_name, "c", "two", createdBy="bob") is not None  # createdBy decides alone
    assert update(memory, in_session, "c", "two", createdBy="alice") is None
