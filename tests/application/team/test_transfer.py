"""memory_import against the store it writes into: the fields the tools require and default,
the scope an entry lands in, and ids whose streams the log already holds."""

from __future__ import annotations

import json
from typing import Any

from chronograph.application import Memory
from support.team import call, refused


def document(**entries: list[dict[str, Any]]) -> str:
    return json.dumps({"entries": entries})


def test_a_replace_import_keeps_the_defaults_add_sets_and_every_read_still_sorts(memory: Memory) -> None:
    call(memory, "memory_guideline", action="add", scopeType="global", name="style", content="Use black", priority=90)
    call(memory, "memory_guideline", action="add", scopeType="global", name="other", content="Other rule")
    call(memory, "memory_knowledge", action="add", scopeType="global", title="fact", content="x", confidence=0.4)
    content = document(guidelines=[{"name": "style", "scopeType": "global", "content": "Use ruff format"}],
                       knowledge=[{"title": "fact", "scopeType": "global", "content": "y"}])
    done = call(memory, "memory_import", action="import", content=content, conflictStrategy="replace")
    assert done["updated"] == 2
    style = call(memory, "memory_guideline", action="get", name="style")["guideline"]
    assert (style["priority"], style["currentVersion"]["content"]) == (50, "Use ruff format")
    fact = call(memory, "memory_knowledge", action="get", title="fact")["knowledge"]
    assert fact["currentVersion"]["confidence"] == 1.0
    assert [g["name"] for g in call(memory, "memory_guideline", action="list")["guidelines"]] == ["style", "other"]
    assert call(memory, "memory_query", action="search", search="rule")["results"]
    assert call(memory, "memory_query", action="search")["meta"]["totalCount"] == 3
    assert len(call(memory, "memory_query", action="context", scopeType="global")["guidelines"]) == 2


def test_an_imported_entry_without_what_the_tool_requires_is_refused_and_gets_add_s_defaults_otherwise(
    memory: Memory,
) -> None:
    bare = document(guidelines=[{"name": "g", "scopeType": "global"}],
                    knowledge=[{"title": "k", "scopeType": "global"}])
    error = refused(memory, "memory_import", action="import", content=bare)
    assert "entries.guidelines[0]: content is required" in str(error)
    assert "entries.knowledge[0]: content is required" in str(error)
    given = document(guidelines=[{"name": "g", "scopeType": "global", "content": "c"}],
                     knowledge=[{"title": "k", "scopeType": "global", "content": "c"}])
    assert call(memory, "memory_import", action="import", content=given)["created"] == 2
    assert call(memory, "memory_guideline", action="get", name="g")["guideline"]["priority"] == 50
    assert call(memory, "memory_knowledge", action="get", title="k")["knowledge"]["currentVersion"]["confidence"] == 1.0


def test_an_update_import_keeps_a_priority_the_file_does_not_give(memory: Memory) -> None:
    call(memory, "memory_guideline", action="add", scopeType="global", name="g", content="a", priority=90)
    given = document(guidelines=[{"name": "g", "scopeType": "global", "content": "b"}])
    assert call(memory, "memory_import", action="import", content=given)["updated"] == 1
    assert call(memory, "memory_guideline", action="get", name="g")["guideline"]["priority"] == 90


def test_an_export_mapped_into_another_project_is_a_copy_there_and_leaves_the_source_alone(memory: Memory) -> None:
    a = call(memory, "memory_project", action="create", name="A")["project"]["id"]
    b = call(memory, "memory_project", action="create", name="B")["project"]["id"]
    source = call(memory, "memory_knowledge", action="add", scopeType="project", scopeId=a, title="db",
                  content="A uses Postgres 12")["knowledge"]["id"]
    exported = json.loads(call(memory, "memory_export", action="export", scopeType="project", scopeId=a)["content"])
    exported["entries"]["knowledge"][0]["currentVersion"]["content"] = "B uses Postgres 16"
    exported["relations"] = [{"sourceType": "knowledge", "sourceId": source, "targetType": "project", "targetId": a,
                              "relationType": "applies_to"}]
    mapping = {f"project:{a}": {"type": "project", "id": b}}
    done = call(memory, "memory_import", action="import", content=json.dumps(exported), scopeMapping=mapping)
    assert (done["created"], done["updated"], done["errors"]) == (1, 0, [])
    [renamed] = done["newIds"]
    assert renamed["id"] == source and renamed["reason"] == f"{source} is a knowledge of project {a} here"
    [copy] = call(memory, "memory_knowledge", action="list", scopeType="project", scopeId=b)["knowledge"]
    assert (copy["id"], copy["currentVersion"]["content"]) == (renamed["newId"], "B uses Postgres 16")
    [kept] = call(memory, "memory_knowledge", action="list", scopeType="project", scopeId=a)["knowledge"]
    assert (kept["id"], kept["currentVersion"]["content"]) == (source, "A uses Postgres 12")
    [link] = call(memory, "memory_relation", action="list")["relations"]  # the copy's, to the project mapped
    assert (link["sourceId"], link["targetId"]) == (copy["id"], b)
    again = call(memory, "memory_import", action="import", content=json.dumps(exported), scopeMapping=mapping,
                 conflictStrategy="skip")  # the copy is found by its name in B
    assert (again["created"], again["skipped"], "newIds" in again) == (0, 1, False)


def test_a_pre_reset_export_imports_again_under_its_ids_and_a_tag_name_is_made_again(memory: Memory) -> None:
    call(memory, "memory_tag", action="create", name="python")
    entry = call(memory, "memory_guideline", action="add", scopeType="global", name="style",
                 content="Use black")["guideline"]["id"]
    call(memory, "memory_tag", action="attach", entryType="guideline", entryId=entry, tagName="python")
    content = call(memory, "memory_export", action="export")["content"]
    call(memory, "memory_init", action="reset", confirm=True)
    again = call(memory, "memory_tag", action="create", name="python")
    assert (again["existed"], again["tag"]["id"]) == (False, "tag_python")
    done = call(memory, "memory_import", action="import", content=content)
    assert (done["created"], "newIds" in done) == (1, False)
    [style] = call(memory, "memory_guideline", action="list")["guidelines"]
    assert style["id"] == entry and style["currentVersionId"] == f"{entry}_v1"
    tagged = call(memory, "memory_query", action="search", tags={"require": ["python"]})["results"]
    assert [r["id"] for r in tagged] == [entry]
    live = call(memory, "memory_query", action="search")
    memory.teams.discard()  # folded again from the log: the same memory
    assert call(memory, "memory_query", action="search") == live
    call(memory, "memory_init", action="reset", confirm=True)
    other = call(memory, "memory_guideline", action="add", scopeType="global", name="style",
                 content="Use black")["guideline"]["id"]
    attached = call(memory, "memory_tag", action="attach", entryType="guideline", entryId=other, tagName="python")
    assert attached["tag"]["id"] == "tag_python"
    forgotten = call(memory, "memory_forget", id=entry, reason="test")  # both lives of the id go
    assert forgotten["forgotten"]["events"] >= 2


def test_an_entry_forgotten_here_is_imported_under_a_new_id_and_can_be_forgotten_again(memory: Memory) -> None:
    entry = call(memory, "memory_knowledge", action="add", scopeType="global", title="secret",
                 content="the key is 42")["knowledge"]["id"]
    content = call(memory, "memory_export", action="export")["content"]
    call(memory, "memory_forget", id=entry, reason="asked to")
    done = call(memory, "memory_import", action="import", content=content)
    [renamed] = done["newIds"]
    assert (renamed["id"], renamed["reason"]) == (entry, f"{entry} was forgotten here")
    assert renamed["newId"] != entry and done["created"] == 1
    with memory.log.read() as log:  # the erased stream is not written again
        assert [e.type for e in log.stream(f"am/entry/{entry}")] == ["content_erased", "entry_forgotten"]
    call(memory, "memory_forget", id=renamed["newId"], reason="imported by mistake")
    assert call(memory, "memory_knowledge", action="list")["knowledge"] == []
