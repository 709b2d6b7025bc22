"""Typed team entries as the readers take them, who counts as another writer, and which entry a
call addresses: a read by name inherits from the scope's parents, a write changes the entry of
the scope it names and no other."""

from __future__ import annotations

from typing import Any

import pytest
from chronograph.application import Memory, Registry
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.team.common import Team, TeamArgs
from chronograph.eventstore.teamevents import EntryUpdated
from support.team import call, refused


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


def scoped(memory: Memory) -> tuple[str, str]:
    org = call(memory, "memory_org", action="create", name="Acme")["organization"]["id"]
    return org, call(memory, "memory_project", action="create", name="Web", orgId=org)["project"]["id"]


KINDS = [("memory_guideline", "guideline", "name", {"content": "Use 2 spaces"}),
         ("memory_knowledge", "knowledge", "title", {"content": "Node 22"}),
         ("memory_tool", "tool", "name", {"description": "runs the linter"})]


@pytest.mark.parametrize(("tool", "kind", "label", "fields"), KINDS)
@pytest.mark.parametrize("action", ["update", "deactivate"])
def test_a_write_addressed_to_a_project_by_name_never_changes_the_entry_it_inherits(
        memory: Memory, tool: str, kind: str, label: str, fields: dict[str, Any], action: str) -> None:
    org, project = scoped(memory)
    for scope in ({"scopeType": "global"}, {"scopeType": "org", "scopeId": org}):
        held = call(memory, tool, action="add", **scope, **{label: "style"}, **fields)[kind]
        changed = {key: f"{value}, in Web" for key, value in fields.items()} if action == "update" else {}
        error = refused(memory, tool, action=action, scopeType="project", scopeId=project, **{label: "style"},
                        **changed)
        assert error.code == "not_found"
        said = str(error)
        assert f"not found in project {project}" in said and held["id"] in said
        assert "action 'add'" in said and "Nothing was written" in said
        assert f"scopeType {scope['scopeType']!r}" in said
        # the inherited entry is as it was, in its scope and in the project's reads
        there = call(memory, tool, action="get", scopeType="project", scopeId=project, **{label: "style"})[kind]
        assert there["id"] == held["id"] and there["currentVersion"]["versionNum"] == 1 and there["isActive"]
        call(memory, tool, action="deactivate", id=held["id"])  # the org's is added next, under the same name


def test_a_project_override_is_added_then_updated_and_the_inherited_entry_stays_everyone_s(memory: Memory) -> None:
    org, project = scoped(memory)
    other = call(memory, "memory_project", action="create", name="Api", orgId=org)["project"]["id"]
    held = call(memory, "memory_guideline", action="add", scopeType="global", name="style", content="tabs")
    call(memory, "memory_guideline", action="add", scopeType="project", scopeId=project, name="style",
         content="2 spaces")
    changed = call(memory, "memory_guideline", action="update", scopeType="project", scopeId=project, name="style",
                   content="4 spaces")["guideline"]
    assert changed["scopeType"] == "project" and changed["currentVersion"]["content"] == "4 spaces"
    elsewhere = call(memory, "memory_guideline", action="get", scopeType="project", scopeId=other, name="style")
    assert elsewhere["guideline"]["id"] == held["guideline"]["id"]
    assert elsewhere["guideline"]["currentVersion"]["content"] == "tabs"
    call(memory, "memory_guideline", action="deactivate", scopeType="project", scopeId=project, name="style")
    listed = call(memory, "memory_guideline", action="list", scopeType="global")["guidelines"]
    assert [g["id"] for g in listed] == [held["guideline"]["id"]]


def test_a_write_may_not_ask_to_inherit_nor_name_an_entry_by_id_in_a_scope_it_is_not_in(memory: Memory) -> None:
    _, project = scoped(memory)
    held = call(memory, "memory_knowledge", action="add", scopeType="global", title="db", content="pg 15")
    entry = held["knowledge"]["id"]
    error = refused(memory, "memory_knowledge", action="update", scopeType="project", scopeId=project, title="db",
                    content="pg 16", inherit=True)
    assert error.code == "invalid" and "inherit is for reading actions" in str(error)
    error = refused(memory, "memory_knowledge", action="reactivate", scopeType="project", scopeId=project, id=entry)
    assert error.code == "not_found" and "it is in global scope" in str(error)
    # by id alone, or with its own scope, it is that entry
    call(memory, "memory_knowledge", action="update", id=entry, content="pg 16")
    call(memory, "memory_knowledge", action="update", scopeType="global", id=entry, content="pg 17")
    assert call(memory, "memory_knowledge", action="get", id=entry)["knowledge"]["currentVersion"]["versionNum"] == 3


def test_a_read_by_name_still_inherits(memory: Memory) -> None:
    _, project = scoped(memory)
    call(memory, "memory_knowledge", action="add", scopeType="global", title="db", content="pg 15")
    for action in ("get", "history"):
        assert call(memory, "memory_knowledge", action=action, scopeType="project", scopeId=project, title="db")


def test_a_project_named_in_two_organizations_is_not_updated_by_its_name_alone(memory: Memory) -> None:
    _, web = scoped(memory)
    other = call(memory, "memory_org", action="create", name="Initech")["organization"]["id"]
    second = call(memory, "memory_project", action="create", name="Web", orgId=other)["project"]["id"]
    error = refused(memory, "memory_project", action="update", name="Web", description="the shop")
    assert error.code == "invalid" and web in str(error) and second in str(error)
    updated = call(memory, "memory_project", action="update", name="Web", orgId=other, description="the shop")
    assert updated["project"]["id"] == second
