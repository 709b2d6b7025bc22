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
