"""The team memory (the Agent Memory surface) on the log: scopes, entries, tags, locks,
conflicts, time travel and bad input, through `Memory` as every transport calls it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory, NotFoundError, Registry
from chronograph.application.engine.outputs import ObjectOut
from chronograph.application.team.common import Team, TeamArgs
from chronograph.eventstore.teamevents import OrganizationCreated
from freezegun import freeze_time
from support.team import call, refused


def project(memory: Memory) -> tuple[str, str]:
    org = call(memory, "memory_org", action="create", name="Acme")["organization"]["id"]
    return org, call(memory, "memory_project", action="create", name="Shop", orgId=org)["project"]["id"]


def test_a_project_query_sees_global_and_org_entries_unless_told_not_to_inherit(memory: Memory) -> None:
    org, proj = project(memory)
    call(memory, "memory_guideline", action="add", scopeType="global", name="g", content="everywhere")
    call(memory, "memory_guideline", action="add", scopeType="org", scopeId=org, name="o", content="in the org")
    call(memory, "memory_guideline", action="add", scopeType="project", scopeId=proj, name="p", content="here")
    inherited = call(memory, "memory_query", action="search", scope={"type": "project", "id": proj})
    assert [r["guideline"]["name"] for r in inherited["results"]] == ["p", "o", "g"]
    own = call(memory, "memory_query", action="search", scope={"type": "project", "id": proj, "inherit": False})
    assert [r["guideline"]["name"] for r in own["results"]] == ["p"]


def test_names_are_unique_per_scope_and_free_in_another(memory: Memory) -> None:
    _, proj = project(memory)
    call(memory, "memory_tool", action="add", scopeType="global", name="git_commit")
    error = refused(memory, "memory_tool", action="add", scopeType="global", name="git_commit")
    assert error.code == "duplicate" and "already exists" in str(error)
    call(memory, "memory_tool", action="add", scopeType="project", scopeId=proj, name="git_commit")
    found = call(memory, "memory_tool", action="get", name="git_commit", scopeType="project", scopeId=proj)
    assert found["tool"]["scopeType"] == "project"


def test_an_update_is_a_new_version_with_its_reason_and_the_history_keeps_both(memory: Memory) -> None:
    added = call(memory, "memory_knowledge", action="add", scopeType="global", title="Limits", content="1000/min")
    entry = added["knowledge"]["id"]
    call(memory, "memory_knowledge", action="update", id=entry, content="2000/min", changeReason="API upgraded")
    current = call(memory, "memory_knowledge", action="get", id=entry)["knowledge"]
    assert current["currentVersion"]["content"] == "2000/min" and current["currentVersion"]["versionNum"] == 2
    history = call(memory, "memory_knowledge", action="history", id=entry)["versions"]
    assert [(v["versionNum"], v["content"], v.get("changeReason")) for v in history] == [
        (2, "2000/min", "API upgraded"), (1, "1000/min", None)]


def test_guidelines_are_listed_by_priority(memory: Memory) -> None:
    for name, priority in (("low", 10), ("high", 95), ("default", None)):
        extra = {} if priority is None else {"priority": priority}
        call(memory, "memory_guideline", action="add", scopeType="global", name=name, content=name, **extra)
    listed = call(memory, "memory_guideline", action="list", scopeType="global")["guidelines"]
    assert [(g["name"], g["priority"]) for g in listed] == [("high", 95), ("default", 50), ("low", 10)]


def test_knowledge_past_its_valid_until_is_hidden_unless_asked_for(memory: Memory) -> None:
    with freeze_time("2026-01-01T00:00:00Z"):
        call(memory, "memory_knowledge", action="add", scopeType="global", title="Offer", content="20% off",
             validUntil="2026-02-01T00:00:00Z")
        assert len(call(memory, "memory_knowledge", action="list")["knowledge"]) == 1
    with freeze_time("2026-03-01T00:00:00Z"):
        assert call(memory, "memory_knowledge", action="list")["knowledge"] == []
        assert call(memory, "memory_query", action="search", search="offer")["results"] == []
        shown = call(memory, "memory_knowledge", action="list", includeInactive=True)["knowledge"]
        assert [k["title"] for k in shown] == ["Offer"]


def test_deactivate_hides_an_entry_and_reactivate_brings_it_back_with_its_history(memory: Memory) -> None:
    entry = call(memory, "memory_tool", action="add", scopeType="global", name="t")["tool"]["id"]
    call(memory, "memory_tool", action="deactivate", id=entry)
    assert call(memory, "memory_tool", action="list")["tools"] == []
    assert call(memory, "memory_tool", action="get", id=entry)["tool"]["isActive"] is False
    call(memory, "memory_tool", action="reactivate", id=entry)
    assert [t["id"] for t in call(memory, "memory_tool", action="list")["tools"]] == [entry]


def test_tags_include_require_and_exclude_in_a_query(memory: Memory) -> None:
    ids = {}
    for name, tags in (("a", ["python"]), ("b", ["python", "security"]), ("c", ["python", "deprecated"]),
                       ("d", ["rust"])):
        ids[name] = call(memory, "memory_tool", action="add", scopeType="global", name=name)["tool"]["id"]
        for tag in tags:
            call(memory, "memory_tag", action="attach", entryType="tool", entryId=ids[name], tagName=tag)

    def found(**tags: list[str]) -> list[str]:
        return sorted(r["tool"]["name"] for r in call(memory, "memory_query", action="search", tags=tags)["results"])

    assert found(include=["python", "rust"]) == ["a", "b", "c", "d"]
    assert found(include=["python"], exclude=["deprecated"]) == ["a", "b"]
    assert found(require=["python", "security"]) == ["b"]
    assert found(require=["nonexistent"]) == []
    tags = call(memory, "memory_tag", action="for_entry", entryType="tool", entryId=ids["b"])["tags"]
    assert [t["name"] for t in tags] == ["python", "security"]
    assert call(memory, "memory_tag", action="create", name="python")["existed"] is True


def test_related_to_finds_the_entries_linked_to_a_project(memory: Memory) -> None:
    _, proj = project(memory)
    linked = call(memory, "memory_guideline", action="add", scopeType="global", name="sql", content="use params")
    call(memory, "memory_guideline", action="add", scopeType="global", name="other", content="unrelated")
    relation = call(memory, "memory_relation", action="create", sourceType="guideline",
                    sourceId=linked["guideline"]["id"], targetType="project", targetId=proj,
                    relationType="applies_to")["relation"]
    related = call(memory, "memory_query", action="search",
                   relatedTo={"type": "project", "id": proj, "relation": "applies_to"})
    assert [r["guideline"]["name"] for r in related["results"]] == ["sql"]
    call(memory, "memory_relation", action="delete", id=relation["id"])
    assert call(memory, "memory_relation", action="list")["relations"] == []


def test_a_file_lock_has_one_holder_and_an_expired_lease_is_free_without_any_event(memory: Memory) -> None:
    with freeze_time("2026-05-01T10:00:00Z") as clock:
        call(memory, "memory_file_lock", action="checkout", file_path="/src/a.ts", agent_id="A", expires_in=60)
        error = refused(memory, "memory_file_lock", action="checkout", file_path="/src/a.ts", agent_id="B")
        assert error.code == "locked" and "locked by A until 2026-05-01T10:01:00" in str(error)
        refused(memory, "memory_file_lock", action="checkin", file_path="/src/a.ts", agent_id="B")
        clock.tick(61)
        head = memory.log.head()
        assert call(memory, "memory_file_lock", action="status", file_path="/src/a.ts")["isLocked"] is False
        assert memory.log.head() == head
        taken = call(memory, "memory_file_lock", action="checkout", file_path="/src/a.ts", agent_id="B")
        assert taken["lock"]["checkedOutBy"] == "B"
        call(memory, "memory_file_lock", action="force_unlock", file_path="/src/a.ts", agent_id="admin",
             reason="agent crashed")
        assert call(memory, "memory_file_lock", action="list")["locks"] == []


def test_two_writers_moments_apart_are_a_conflict_that_keeps_both_versions(memory: Memory) -> None:
    with freeze_time("2026-05-01T10:00:00Z") as clock:
        entry = call(memory, "memory_tool", action="add", scopeType="global", name="deploy",
                     description="v1")["tool"]["id"]
        clock.tick(10)
        call(memory, "memory_tool", "alice", action="update", id=entry, description="alice's")
        clock.tick(1)
        answer = call(memory, "memory_tool", "bob", action="update", id=entry, description="bob's")
        assert answer["conflict"]["versionAId"] == f"{entry}_v2"
        clock.tick(1)
        call(memory, "memory_tool", "bob", action="update", id=entry, description="bob again")  # same writer
    [conflict] = call(memory, "memory_conflict", action="list")["conflicts"]
    assert (conflict["versionAId"], conflict["versionBId"]) == (f"{entry}_v2", f"{entry}_v3")
    resolved = call(memory, "memory_conflict", action="resolve", id=conflict["id"], keepVersion=2,
                    resolution="alice was right", resolvedBy="lead")
    assert resolved["tool"]["currentVersion"]["description"] == "alice's"
    history = call(memory, "memory_tool", action="history", id=entry)["versions"]
    assert [v["description"] for v in history] == ["alice's", "bob again", "bob's", "alice's", "v1"]
    error = refused(memory, "memory_conflict", action="resolve", id=conflict["id"], resolution="again")
    assert "already resolved" in str(error)
    assert call(memory, "memory_conflict", action="list")["conflicts"] == []


def test_a_query_as_of_a_past_position_answers_as_the_memory_stood_then(memory: Memory) -> None:
    entry = call(memory, "memory_knowledge", action="add", scopeType="global", title="db", content="postgres 14")
    then = memory.log.head()
    call(memory, "memory_knowledge", action="update", id=entry["knowledge"]["id"], content="postgres 16")
    call(memory, "memory_init", action="reset", confirm=True)
    assert call(memory, "memory_query", action="search", search="postgres")["results"] == []
    past = call(memory, "memory_query", action="search", search="postgres", asOf=then)["results"]
    assert [r["knowledge"]["currentVersion"]["content"] for r in past] == ["postgres 14"]


def test_a_reset_needs_confirmation(memory: Memory) -> None:
    call(memory, "memory_tool", action="add", scopeType="global", name="t")
    assert "confirm" in str(refused(memory, "memory_init", action="reset"))
    assert len(call(memory, "memory_tool", action="list")["tools"]) == 1


@pytest.mark.parametrize(("tool", "arguments", "expected"), [
    ("memory_tool", {"action": "explode"}, "action"),
    ("memory_tool", {}, "action"),
    ("memory_tool", {"action": "get"}, "id (or name"),
    ("memory_knowledge", {"action": "update", "id": "kn_missing", "content": "x"}, "not found"),
    ("memory_guideline", {"action": "add", "scopeType": "project", "scopeId": "proj_nope", "name": "n",
                          "content": "c"}, "does not exist"),
    ("memory_guideline", {"action": "add", "scopeType": "project", "name": "n", "content": "c"}, "scopeId"),
    ("memory_conflict", {"action": "resolve", "id": "conf_nope"}, "not found"),
    ("memory_import", {"action": "import", "content": "{not json"}, "not JSON"),
    ("memory_import", {"action": "import", "content": '{"entries": {"tools": [{"scopeType": "global"}]}}'},
     "name is missing"),
    ("memory_import", {"action": "import", "content": json.dumps({"entries": {"guidelines": [
        {"name": "g", "scopeType": "global", "currentVersion": {"content": "c", "priority": "high"}}]}})},
     "priority: expected `int`"),
    ("memory_import", {"action": "import", "content": json.dumps({"entries": {"tools": [
        {"name": "t", "scopeType": "global", "tags": ["ok", "bad\ud800"]}]}})}, "tags[1]: contains an unpaired"),
    ("memory_import", {"action": "import", "content": json.dumps({"entries": {"tools": [
        {"name": "t", "scopeType": "global", "tags": ["t" * 513]}]}})}, "tags[0]: expected `str` of length <= 512"),
    ("memory_import", {"action": "import", "content": json.dumps({"entries": {"tools": [
        {"id": "i" * 513, "name": "t", "scopeType": "global"}]}})}, "id: expected `str` of length <= 512"),
    ("memory_import", {"action": "import", "content": json.dumps({"entries": {"tools": []}, "relations": [
        {"sourceType": "banana", "sourceId": "a", "targetType": "tool", "targetId": "b", "relationType": "eats"}]})},
     "relations[0]: sourceType: invalid enum value 'banana'"),
    ("memory_import", {"action": "import", "content": json.dumps({"entries": {"tools": []}, "relations": [
        {"sourceType": "tool", "sourceId": "a\udfff", "targetType": "tool", "targetId": "b",
         "relationType": "related_to"}]})}, "relations[0]: sourceId: contains an unpaired"),
    ("memory_import", {"action": "import", "content": json.dumps({"entries": {"tools": []}, "relations": [
        {"sourceType": "tool", "targetType": "tool", "targetId": "b", "relationType": "related_to"}]})},
     "relations[0]: object missing required field `sourceId`"),
])
def test_bad_input_is_refused_with_a_clear_message_and_writes_nothing(
    memory: Memory, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    assert expected in str(refused(memory, tool, **arguments))


def test_an_export_imports_into_another_store_with_its_tags_and_scope_mapping(memory: Memory, tmp_path: Path) -> None:
    _, proj = project(memory)
    entry = call(memory, "memory_guideline", action="add", scopeType="project", scopeId=proj, name="tests",
                 content="write them first", priority=90)["guideline"]["id"]
    call(memory, "memory_tag", action="attach", entryType="guideline", entryId=entry, tagName="testing")
    content = call(memory, "memory_export", action="export")["content"]
    assert json.loads(content)["entries"]["guidelines"][0]["tags"] == ["testing"]
    with Memory(tmp_path / "other", sync=False) as other:
        unmapped = refused(other, "memory_import", action="import", content=content)
        assert "scopeMapping" in str(unmapped)
        target = call(other, "memory_project", action="create", name="New")["project"]["id"]
        mapping = {f"project:{proj}": {"type": "project", "id": target}}
        first = call(other, "memory_import", action="import", content=content, scopeMapping=mapping)
        assert first["created"] == 1
        again = call(other, "memory_import", action="import", content=content, scopeMapping=mapping,
                     conflictStrategy="skip")
        assert (again["created"], again["skipped"]) == (0, 1)
        error = refused(other, "memory_import", action="import", content=content, scopeMapping=mapping,
                        conflictStrategy="error")
        assert "already exist" in str(error)
        found = call(other, "memory_query", action="search", tags={"require": ["testing"]},
                     scope={"type": "project", "id": target})
        assert found["results"][0]["guideline"]["priority"] == 90


def test_an_entry_named_twice_in_one_file_is_imported_once_or_refused_as_a_duplicate(memory: Memory) -> None:
    twice = json.dumps({"entries": {"tools": [{"name": "A", "scopeType": "global", "description": "first"},
                                              {"name": "A", "scopeType": "global", "description": "second"}]}})
    error = refused(memory, "memory_import", action="import", content=twice, conflictStrategy="error")
    assert "1 entries already exist or come twice in the file (tool 'A')" in str(error)
    same_id = json.dumps({"entries": {"tools": [{"id": "tool_1", "name": "C", "scopeType": "global"},
                                                {"id": "tool_1", "name": "D", "scopeType": "global"}]},
                          "relations": [{"sourceType": "tool", "sourceId": "tool_1", "targetType": "tool",
                                         "targetId": "tool_1", "relationType": "related_to"}]})
    assert "come twice" in str(refused(memory, "memory_import", action="import", content=same_id,
                                       conflictStrategy="error"))
    fresh = call(memory, "memory_import", action="import", content=same_id, conflictStrategy="error",
                 generateNewIds=True)  # the file's ids are not used: two entries
    assert fresh["created"] == 2 and fresh["errors"] == [
        "relation tool_1 related_to tool_1 not imported: the file gives the id tool_1 to more than one entry"]
    one_entry = json.dumps({"entries": {"tools": [{"id": "tool_9", "name": "E", "scopeType": "global"},
                                                  {"id": "tool_9", "name": "E", "scopeType": "global",
                                                   "description": "again"}]},
                            "relations": [{"sourceType": "tool", "sourceId": "tool_9", "targetType": "tool",
                                           "targetId": "tool_9", "relationType": "related_to"}]})
    linked = call(memory, "memory_import", action="import", content=one_entry)  # the file's id: one entry
    assert (linked["created"], linked["updated"], linked["errors"]) == (1, 1, [])
    done = call(memory, "memory_import", action="import", content=twice)
    assert (done["created"], done["updated"]) == (1, 1)
    [tool] = [t for t in call(memory, "memory_tool", action="list")["tools"] if t["name"] == "A"]
    assert tool["currentVersion"]["description"] == "second"


def test_an_imported_relation_is_linked_only_to_an_entry_of_the_type_it_names(memory: Memory) -> None:
    tool = call(memory, "memory_tool", action="add", scopeType="global", name="t")["tool"]["id"]
    guideline = call(memory, "memory_guideline", action="add", scopeType="global", name="g", content="c")["guideline"]
    content = json.dumps({"entries": {"tools": []}, "relations": [
        {"sourceType": "guideline", "sourceId": guideline["id"], "targetType": "guideline", "targetId": tool,
         "relationType": "related_to"}]})
    done = call(memory, "memory_import", action="import", content=content)
    assert done["errors"] == [f"relation {guideline['id']} related_to {tool} not imported: no guideline {tool} here "
                              "(map a scope with scopeMapping)"]
    assert call(memory, "memory_relation", action="list")["relations"] == []


class Nothing(TeamArgs, kw_only=True):
    pass


def test_a_write_that_fails_after_deciding_leaves_no_trace_in_the_team_memory(memory: Memory) -> None:
    failing = Registry()

    @failing.command("half_written", "Half written", "Decides an event, then fails")
    def half_written(batch: Any, args: Nothing) -> ObjectOut:
        Team.of(batch, "half_written").emit("am/org/org_x", OrganizationCreated(org_id="org_x", name="X"), new=True)
        raise NotFoundError("failed after deciding")

    with pytest.raises(NotFoundError):
        memory.write(failing["half_written"], {}, actor="agent")
    assert call(memory, "memory_org", action="list")["organizations"] == []
    assert memory.log.head() == 0


def test_a_new_process_folds_the_same_team_memory_from_the_log(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as first:
        _, proj = project(first)
        call(first, "memory_session", action="start", projectId=proj, agentId="claude", purpose="auth")
        entry = call(first, "memory_tool", action="add", scopeType="project", scopeId=proj, name="t")["tool"]["id"]
        call(first, "memory_tool", action="update", id=entry, description="d", changeReason="why")
        before = call(first, "memory_query", action="context", scopeType="project", scopeId=proj)
    with Memory(tmp_path / "store", sync=False) as second:
        assert call(second, "memory_query", action="context", scopeType="project", scopeId=proj) == before
        [session] = call(second, "memory_session", action="list", projectId=proj)["sessions"]
        assert (session["agentId"], session["purpose"], session["status"]) == ("claude", "auth", "active")


def test_the_yaml_export_reads_back_as_the_json_export(memory: Memory) -> None:
    yaml = pytest.importorskip("yaml")
    entry = call(memory, "memory_tool", action="add", scopeType="global", name="on", description='say "no": #1\nok',
                 parameters={"yes": {"type": "string"}, "on": None, "1": [True, 2.5]})["tool"]["id"]
    call(memory, "memory_tag", action="attach", entryType="tool", entryId=entry, tagName="null")
    as_json = json.loads(call(memory, "memory_export", action="export", includeVersions=True)["content"])
    as_yaml = yaml.safe_load(call(memory, "memory_export", action="export", format="yaml",
                                  includeVersions=True)["content"])
    assert as_yaml["entries"] == as_json["entries"]


def test_a_merged_resolution_is_checked_like_an_update_and_becomes_the_current_version(memory: Memory) -> None:
    with freeze_time("2026-05-01T10:00:00Z"):
        entry = call(memory, "memory_guideline", "alice", action="add", scopeType="global", name="g",
                     content="a")["guideline"]["id"]
        conflict = call(memory, "memory_guideline", "bob", action="update", id=entry, content="b")["conflict"]["id"]
    error = refused(memory, "memory_conflict", action="resolve", id=conflict, merged={"priority": "high"})
    assert "priority" in str(error)
    done = call(memory, "memory_conflict", action="resolve", id=conflict, merged={"content": "a and b"})
    assert done["guideline"]["currentVersion"]["content"] == "a and b" and done["conflict"]["keptVersion"] == 3


def test_generate_new_ids_imports_a_copy_beside_the_original(memory: Memory) -> None:
    entry = call(memory, "memory_tool", action="add", scopeType="global", name="t")["tool"]["id"]
    org = call(memory, "memory_org", action="create", name="Acme")["organization"]["id"]
    content = call(memory, "memory_export", action="export")["content"]
    copied = call(memory, "memory_import", action="import", content=content, generateNewIds=True,
                  scopeMapping={"global:": {"type": "org", "id": org}})
    assert copied["created"] == 1
    [copy] = call(memory, "memory_tool", action="list", scopeType="org", scopeId=org)["tools"]
    assert copy["id"] != entry and copy["name"] == "t"


def test_the_audit_names_what_each_team_event_is_about(memory: Memory) -> None:
    call(memory, "memory_session", "claude-code", action="start", agentId="claude")
    call(memory, "memory_tool", "claude-code", action="add", scopeType="global", name="git")
    call(memory, "memory_file_lock", "claude-code", action="checkout", file_path="/src/a.py", agent_id="claude")
    events = memory.read("get_audit_log", {"allWorkspaces": True}).events
    assert [e.subject for e in events][:2] == ["lock /src/a.py", "tool 'git'"]
    assert events[2].subject.startswith("session sess_") and events[2].subject.endswith("of claude")


def test_an_entry_exported_inactive_comes_back_inactive(memory: Memory, tmp_path: Path) -> None:
    kept = call(memory, "memory_knowledge", action="add", scopeType="global", title="kept", content="a")
    gone = call(memory, "memory_knowledge", action="add", scopeType="global", title="gone", content="b")
    call(memory, "memory_knowledge", action="deactivate", id=gone["knowledge"]["id"])
    exported = call(memory, "memory_export", action="export", includeInactive=True)["content"]
    assert kept and '"isActive": false' in exported
    with Memory(tmp_path / "other", sync=False) as other:
        assert call(other, "memory_import", action="import", content=exported)["created"] == 2
        listed = call(other, "memory_knowledge", action="list")["knowledge"]
        assert [e["title"] for e in listed] == ["kept"]
        every = call(other, "memory_knowledge", action="list", includeInactive=True)["knowledge"]
        assert {e["title"]: e["isActive"] for e in every} == {"kept": True, "gone": False}
        call(other, "memory_knowledge", action="reactivate", id=gone["knowledge"]["id"])
        again = call(other, "memory_import", action="import", content=exported)
        assert (again["updated"], again["skipped"]) == (1, 1)  # "gone" deactivated again, as the file says


def test_a_relation_to_a_project_follows_the_scope_mapping_or_is_reported(memory: Memory, tmp_path: Path) -> None:
    _, proj = project(memory)
    entry = call(memory, "memory_guideline", action="add", scopeType="global", name="sql", content="use params")
    call(memory, "memory_relation", action="create", sourceType="guideline", sourceId=entry["guideline"]["id"],
         targetType="project", targetId=proj, relationType="applies_to")
    exported = call(memory, "memory_export", action="export")["content"]
    with Memory(tmp_path / "other", sync=False) as other:
        unmapped = call(other, "memory_import", action="import", content=exported)
        assert unmapped["created"] == 1 and len(unmapped["errors"]) == 1 and proj in unmapped["errors"][0]
        assert call(other, "memory_relation", action="list")["relations"] == []
    with Memory(tmp_path / "third", sync=False) as third:
        _, here = project(third)
        mapped = call(third, "memory_import", action="import", content=exported,
                      scopeMapping={f"project:{proj}": {"type": "project", "id": here}})
        assert mapped["errors"] == []
        [relation] = call(third, "memory_relation", action="list")["relations"]
        assert (relation["targetType"], relation["targetId"]) == ("project", here)
