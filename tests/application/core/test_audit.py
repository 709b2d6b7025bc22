"""The audit log names the principal of every event beside its actor, and filters by it."""

from __future__ import annotations

from pathlib import Path

from chronograph.application import Memory
from chronograph.application.core.audit import AuditOut
from chronograph.application.engine.principal import Principal
from chronograph.application.engine.tokens import Tokens
from chronograph.application.explorer import audit

ALICE = Principal("alice", {"*": "write"})


def entity(name: str) -> dict[str, object]:
    return {"name": name, "entityType": "person", "observations": []}


def test_every_event_records_its_principal_and_the_audit_filters_by_it(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.write("create_entities", {"entities": [entity("Ada")]}, actor="claude-code", principal=ALICE)
        memory.call("create_entities", {"entities": [entity("Bob")]}, actor="claude-code")
        everything = memory.read("get_audit_log", {})
        alices = memory.read("get_audit_log", {"principal": "alice"})
        locals_ = memory.read("get_audit_log", {"principal": "local"})
    assert isinstance(everything, AuditOut) and isinstance(alices, AuditOut) and isinstance(locals_, AuditOut)
    assert [(e.subject, e.actor, e.principal) for e in everything.events] == [
        ("Bob", "claude-code", "local"), ("Ada", "claude-code", "alice")]
    assert [e.subject for e in alices.events] == ["Ada"] and [e.subject for e in locals_.events] == ["Bob"]


def test_the_explorer_s_audit_feed_shows_and_filters_the_principal(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        memory.call("create_entities", {"entities": [entity("Ada")]}, actor="claude-code", principal=ALICE)
        memory.call("create_entities", {"entities": [entity("Bob")]}, actor="claude-code")
        feed = audit(memory, "default", by_principal="alice")
    assert [(e["subject"], e["principal"]) for e in feed["events"]] == [("Ada", "alice")]


def test_a_token_s_events_show_its_name_and_grants_never_its_digest(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", sync=False) as memory:
        Tokens(memory.log).issue("alice", {"work": "read"})
        answer = memory.read("get_audit_log", {"allWorkspaces": True, "eventTypes": ["token_issued"]})
    assert isinstance(answer, AuditOut)
    (event,) = answer.events
    assert event.subject == "token alice" and event.data == {"name": "alice", "grants": {"work": "read"}}
