"""Recall: what a session should know first, within a token budget, and never a write."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.core.recall import Vocabulary, estimate_tokens, recall, render
from chronograph.projections.search.minilm import _tokenizer_path


def person(name: str, *observations: str, kind: str = "person") -> dict:  # type: ignore[type-arg]
    return {"name": name, "entityType": kind, "observations": list(observations)}


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    with Memory(tmp_path / "store") as memory:
        memory.write("create_entities", {"entities": [
            person("Ada Lovelace", "wrote the first program", "lives in London"),
            person("Billing service", "retries failed charges twice", kind="component"),
            *(person(f"Note {i}", f"an unrelated note number {i}") for i in range(30))]}, actor="claude-code")
        memory.write("update_context", {"activeTask": "fix the billing retries", "nextSteps": ["add a test"]},
                     actor="claude-code")
        yield memory


def test_a_recall_holds_the_hot_context_and_the_entities_a_query_is_about(memory: Memory) -> None:
    found = recall(memory, "default", query="why do billing retries fail?")
    assert found.context is not None and found.context.active_task == "fix the billing retries"
    assert found.entities[0].name == "Billing service"
    text = render(found)
    assert "fix the billing retries" in text and "Billing service" in text and "retries failed charges twice" in text


def test_a_prompt_recall_keeps_only_entities_the_prompt_names(memory: Memory) -> None:
    assert recall(memory, "default", query="what is the weather like", strict=True).entities == []
    named = recall(memory, "default", query="ask ada lovelace about it", strict=True).entities
    assert [e.name for e in named] == ["Ada Lovelace"] and named[0].why == "mentioned"


def test_changes_since_the_previous_session_are_others_writes_after_the_clients_last_one(memory: Memory) -> None:
    memory.write("add_observations", {"observations": [
        {"entityName": "Ada Lovelace", "contents": ["moved to Paris"]}]}, actor="alice")
    found = recall(memory, "default", client="claude-code")
    assert found.since is not None
    assert [(c.subject, c.actor) for c in found.changes] == [("Ada Lovelace", "alice")]
    assert "Changed since your last session" in render(found)
    head = memory.log.head()
    memory.write("add_observations", {"observations": [
        {"entityName": "Ada Lovelace", "contents": ["likes tea"]}]}, actor="claude-code")
    # Writes of the session going on (after `before`) are neither news nor a previous session.
    assert [c.actor for c in recall(memory, "default", client="claude-code", before=head).changes] == ["alice"]
    assert recall(memory, "default", client="claude-code").changes == []


def test_the_previous_session_is_read_from_the_clients_writes_in_the_workspace_recalled_alone(
        memory: Memory) -> None:
    memory.write("add_observations", {"observations": [
        {"entityName": "Ada Lovelace", "contents": ["moved to Paris"]}]}, actor="alice")
    before = recall(memory, "default", client="claude-code")
    # The client writes elsewhere (a workspace a reader of this one may not see): this recall says nothing of it
    memory.write("create_entities", {"entities": [person("Secret", "kept apart")], "workspace": "bravo"},
                 actor="claude-code")
    memory.write("add_observations", {"observations": [
        {"entityName": "Ada Lovelace", "contents": ["likes tea"]}]}, actor="alice")
    found = recall(memory, "default", client="claude-code")
    assert found.since == before.since
    assert [c.subject for c in found.changes] == ["Ada Lovelace", "Ada Lovelace"]
    assert "bravo" not in render(found) and "Secret" not in render(found)


def test_a_recall_without_a_query_shows_the_entities_changed_last(memory: Memory) -> None:
    memory.write("add_observations", {"observations": [{"entityName": "Note 3", "contents": ["touched"]}]},
                 actor="bob")
    assert recall(memory, "default").entities[0].name == "Note 3"


def test_an_entity_renamed_is_recalled_and_its_changes_said_under_its_name_now(memory: Memory) -> None:
    memory.write("rename_entity", {"name": "Note 3", "newName": "Launch plan"}, actor="bob")
    memory.write("add_observations", {"observations": [{"entityName": "Launch plan", "contents": ["Friday"]}]},
                 actor="bob")
    found = recall(memory, "default", client="claude-code")
    assert found.entities[0].name == "Launch plan" and found.entities[0].observations[-1] == "Friday"
    assert [c.subject for c in found.changes] == ["Launch plan", "Launch plan"]


def test_a_change_to_an_entity_gone_since_is_said_under_the_name_it_bore_then(memory: Memory) -> None:
    memory.write("rename_entity", {"name": "Note 3", "newName": "Launch plan"}, actor="bob")
    memory.write("add_observations", {"observations": [{"entityName": "Launch plan", "contents": ["Friday"]}]},
                 actor="bob")
    memory.write("delete_entities", {"entityNames": ["Launch plan"]}, actor="bob")
    found = recall(memory, "default", client="claude-code")
    assert [(c.subject, c.what) for c in found.changes] == [
        ("Launch plan", "entity deleted"), ("Launch plan", "observations added"),
        ("Note 3 -> Launch plan", "entity renamed")]


def test_a_recall_writes_nothing(memory: Memory) -> None:
    head = memory.log.head()
    render(recall(memory, "default", query="billing", client="claude-code"))
    assert memory.log.head() == head


@pytest.mark.parametrize("budget", [120, 300, 800])
def test_the_block_stays_within_its_budget_as_a_real_tokenizer_counts(memory: Memory, budget: int) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    memory.write("create_entities", {"entities": [
        person(f"Billing part {i}", *(f"billing detail {i}.{j} about retries and charges" for j in range(8)))
        for i in range(40)]}, actor="x")
    text = render(recall(memory, "default", query="billing retries", limit=40), Vocabulary(), budget)
    tokenizer = tokenizers.Tokenizer.from_file(str(_tokenizer_path()))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    counted = len(tokenizer.encode(text, add_special_tokens=False).ids)
    assert counted <= budget
    assert estimate_tokens(text) <= budget
    assert "left out to stay within" in text
