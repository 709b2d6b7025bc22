"""memory_import against the store it writes into: the fields the tools require and default,
the scope an entry lands in, and ids whose streams the log already holds."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chronograph.application import ChronographError, Memory
from support.team import call


def refused(memory: Memory, tool: str, **arguments: Any) -> ChronographError:
    """The error of a call that must be refused, having checked it wrote nothing."""
    head = memory.log.head()
    with pytest.raises(ChronographError) as caught:
        memory.call(tool, arguments, actor="agent")
    assert memory.log.head() == head
    return caught.value


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
