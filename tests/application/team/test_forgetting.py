"""memory_forget and `chronograph forget --entry`: a team entry erased for real (every version, its
tags, relations and conflicts), audited like an entity's erasure, with no byte of it left in
any file of the store; deactivation and reset keep their history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chronograph.application import ChronographError, Memory
from chronograph.tools.cli import main as cli
from freezegun import freeze_time
from support.postgres import database
from support.team import call

TITLE, SSN, LATER = "Payroll contact Ravindra Okonkwo-Bell", "SSN 078-05-1120-zq", "moved to Quillhaven Close"
SECRETS = (TITLE, SSN, LATER, "Ravindra", "Okonkwo-Bell", "078-05-1120", "Quillhaven")


def residue(folder: Path) -> list[tuple[str, str]]:
    return [(file.name, secret) for file in sorted(folder.iterdir()) for secret in SECRETS
            if secret.encode() in file.read_bytes()]


def seeded(memory: Memory) -> tuple[str, str]:
    """A knowledge entry with a secret, in two versions, tagged, related, in conflict, deactivated,
    reset; and another entry that stays. Returns (the entry's id, the position before the reset)."""
    with freeze_time("2026-05-01T10:00:00Z") as clock:
        entry = call(memory, "memory_knowledge", action="add", scopeType="global", title=TITLE,
                     content=SSN)["knowledge"]["id"]
        other = call(memory, "memory_guideline", action="add", scopeType="global", name="kept",
                     content="always stays")["guideline"]["id"]
        call(memory, "memory_tag", action="attach", entryType="knowledge", entryId=entry, tagName="hr")
        call(memory, "memory_relation", action="create", sourceType="knowledge", sourceId=entry,
             targetType="guideline", targetId=other, relationType="related_to")
        clock.tick(10)
        call(memory, "memory_knowledge", "alice", action="update", id=entry, content=f"{SSN}, {LATER}")
        clock.tick(1)
        call(memory, "memory_knowledge", "bob", action="update", id=entry, content=LATER)  # a conflict
        [conflict] = call(memory, "memory_conflict", action="list")["conflicts"]
        call(memory, "memory_conflict", action="resolve", id=conflict["id"], resolution=f"kept {LATER}")
    call(memory, "memory_knowledge", action="deactivate", id=entry, changeReason="holds an SSN")
    before = memory.log.head()
    call(memory, "memory_init", action="reset", confirm=True)
    return entry, str(before)


def test_a_deactivated_and_reset_entry_is_still_in_the_past_and_in_the_file(memory: Memory) -> None:
    entry, before = seeded(memory)
    assert call(memory, "memory_knowledge", action="get", id=entry, asOf=before)["knowledge"]["title"] == TITLE
    assert residue(memory.log.path)  # what deactivation and reset keep, by design


def test_forget_entry_erases_every_version_from_the_past_and_every_byte_from_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    with Memory(store, sync=False) as memory:
        entry, before = seeded(memory)
    assert cli(["forget", "--store", str(store), "--entry", entry, "--reason", "asked by HR", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["scrubbed"] is True and answer["forgotten"]["type"] == "knowledge"
    assert answer["forgotten"]["events"] == 8 and len(answer["forgotten"]["streams"]) == 3
    assert residue(store) == []
    with Memory(store, sync=False) as memory:
        with pytest.raises(ChronographError, match="not found"):
            call(memory, "memory_knowledge", action="get", id=entry, asOf=before)
        with memory.log.read() as log:
            erased = [e.type for s in (f"am/entry/{entry}", *answer["forgotten"]["streams"]) for e in log.stream(s)]
        assert erased == ["content_erased"] * 4 + ["entry_forgotten"] + ["content_erased"] * 4
        assert call(memory, "memory_guideline", action="get", name="kept", asOf=before)["guideline"]["name"] == "kept"
        [record] = memory.read("get_audit_log", {"allWorkspaces": True, "eventTypes": ["entry_forgotten"]}).events
    assert (record.actor, record.subject) == ("chronograph forget", "(erased entry)")
    assert record.data == {"entryType": "knowledge", "reason": "asked by HR", "events": 8,
                           "streams": tuple(answer["forgotten"]["streams"])}
    assert residue(store) == []


def test_the_tool_forgets_an_entry_that_is_live_and_leaves_the_rest(memory: Memory) -> None:
    kept = call(memory, "memory_tool", action="add", scopeType="global", name="deploy", description="ship")
    entry = call(memory, "memory_knowledge", action="add", scopeType="global", title=TITLE, content=SSN)
    assert call(memory, "memory_query", action="search", search="payroll")["results"]  # the state holds it
    answer = call(memory, "memory_forget", "lead", id=entry["knowledge"]["id"], reason="asked")
    assert answer["success"] and answer["scrubbed"] and answer["forgotten"]["events"] == 1
    assert call(memory, "memory_query", action="search", search="payroll")["results"] == []
    assert call(memory, "memory_knowledge", action="list")["knowledge"] == []
    assert call(memory, "memory_tool", action="get", id=kept["tool"]["id"])["tool"]["name"] == "deploy"
    assert call(memory, "memory_health")["tables"]["knowledge"] == 0
    assert residue(memory.log.path) == []
    assert "elsewhere" not in answer  # no store set aside beside this one


def test_the_tool_names_the_stores_a_restore_set_aside_which_still_hold_the_entry(memory: Memory) -> None:
    aside = memory.log.path.parent / f"{memory.log.path.name}.replaced-2"
    aside.mkdir()
    entry = call(memory, "memory_knowledge", action="add", scopeType="global", title=TITLE, content=SSN)
    answer = call(memory, "memory_forget", "lead", id=entry["knowledge"]["id"], reason="asked")
    assert answer["elsewhere"] == [f"{aside} (set aside by restore --replace) still hold what they held; delete "
                                   "them, or forget there too"]


def test_forgetting_an_unknown_or_forgotten_entry_is_refused_and_writes_nothing(memory: Memory) -> None:
    entry = call(memory, "memory_knowledge", action="add", scopeType="global", title=TITLE, content=SSN)
    call(memory, "memory_forget", id=entry["knowledge"]["id"], reason="asked")
    for unknown in (entry["knowledge"]["id"], "kn_000000000000", "org_whatever"):
        head = memory.log.head()
        with pytest.raises(ChronographError, match="nothing was erased") as refused:
            memory.call("memory_forget", {"id": unknown, "reason": "again"}, actor="agent")
        assert refused.value.code == "not_found" and memory.log.head() == head


def test_forget_needs_exactly_one_of_a_name_and_an_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Memory(tmp_path / "store").close()
    assert cli(["forget", "--store", str(tmp_path / "store"), "--reason", "r"]) == 2
    assert cli(["forget", "--store", str(tmp_path / "store"), "Ada", "--entry", "kn_1", "--reason", "r"]) == 2
    assert "one of them" in capsys.readouterr().err


def test_another_server_on_the_same_log_lets_go_of_a_forgotten_entry(tmp_path: Path) -> None:
    url = database().log_url()
    with Memory(url, cache=tmp_path / "a") as a, Memory(url, cache=tmp_path / "b") as b:
        entry = call(a, "memory_knowledge", action="add", scopeType="global", title=TITLE, content=SSN)
        assert call(b, "memory_query", action="search", search="payroll")["results"]  # b's team state holds it
        b.teams.vectors["kn_x"] = (1, "an embedding")
        call(a, "memory_forget", id=entry["knowledge"]["id"], reason="asked")
        assert call(b, "memory_query", action="search", search="payroll")["results"] == []
        assert b.teams.vectors == {}
    for cache in ("a", "b"):
        assert residue(tmp_path / cache) == []
