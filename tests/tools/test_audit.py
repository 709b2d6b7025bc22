"""tools/audit.py: filters, JSON lines, stats and --follow, through main([...]) and a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.tools.audit import main

ROOT = Path(__file__).resolve().parents[2]


def lines(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:  # type: ignore[type-arg]
    assert main([*argv, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_json_lines_carry_every_audit_field_newest_first(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    events = lines(capsys, "--store", str(history_store))
    assert [e["position"] for e in events] == [6, 5, 4, 3, 2, 1]
    assert {"position", "stream", "version", "type", "recordedAt", "actor", "correlationId", "data"} <= set(events[0])
    assert events[-1]["data"]["name"] == "Ada"


def test_filters_by_actor_type_entity_and_time(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = str(history_store)
    assert [e["type"] for e in lines(capsys, "--store", store, "--actor", "editor")] == ["entity_updated"]
    assert [e["position"] for e in lines(capsys, "--store", store, "--type", "relation_created",
                                         "--type", "relation_deleted")] == [5, 3]
    assert [e["version"] for e in lines(capsys, "--store", store, "--entity", "Ada", "--oldest-first")] == [1, 2, 3]
    assert [e["position"] for e in lines(capsys, "--store", store, "--since", "2026-03-01T10:30:00Z",
                                         "--until", "2026-03-01T11:30:00Z")] == [4]
    assert [e["position"] for e in lines(capsys, "--store", store, "--from-position", "2",
                                         "--to-position", "3", "--oldest-first")] == [2, 3]
    assert lines(capsys, "--store", store, "--workspace", "elsewhere") == []


def test_one_tool_call_is_found_by_its_correlation_id(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    first = lines(capsys, "--store", str(history_store), "--oldest-first")[0]
    call = lines(capsys, "--store", str(history_store), "--correlation", first["correlationId"])
    assert sorted(e["position"] for e in call) == [1, 2]


def test_the_table_and_the_stats_read_well(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["--store", str(history_store), "--limit", "2"]) == 0
    table = capsys.readouterr().out
    assert table.startswith("events (2)") and "entity_deleted" in table and "Bob -[knows]-> Ada" in table
    assert main(["--store", str(history_store), "--stats"]) == 0
    stats = capsys.readouterr().out
    assert "per actor (2)" in stats and "claude" in stats and "2026-03-01" in stats


def test_follow_prints_events_written_by_another_process(history_store: Path) -> None:
    follower = subprocess.Popen(
        [sys.executable, str(ROOT / "tools" / "audit.py"), "--store", str(history_store), "--json",
         "--limit", "1", "--follow", "--interval", "0.05"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert follower.stdout is not None
        assert json.loads(follower.stdout.readline())["position"] == 6
        writer = subprocess.run(
            [sys.executable, "-c", (
                "from chronograph.application import Memory\n"
                f"with Memory({str(history_store)!r}) as m:\n"
                "    m.write('create_entities', {'entities': [{'name': 'Cy', 'entityType': 't', "
                "'observations': []}]}, actor='other-process')\n"
            )],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
        )
        assert writer.returncode == 0
        followed = json.loads(follower.stdout.readline())
        assert (followed["position"], followed["actor"], followed["subject"]) == (7, "other-process", "Cy")
    finally:
        follower.terminate()
        follower.wait(timeout=10)
        assert follower.stdout is not None
        follower.stdout.close()


def test_the_memory_under_audit_is_never_written(history_store: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    lines(capsys, "--store", str(history_store))
    with Memory(history_store) as memory:
        assert memory.log.head() == 6


def test_the_principal_is_shown_and_filtered(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from chronograph.application.engine.principal import Principal  # noqa: PLC0415

    store = tmp_path / "store"
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": []}]},
                     actor="claude", principal=Principal("alice", {"*": "write"}))
        memory.write("create_entities", {"entities": [{"name": "Bob", "entityType": "p", "observations": []}]},
                     actor="claude")
    assert [(e["subject"], e["principal"]) for e in lines(capsys, "--store", str(store), "--principal", "alice")] == [
        ("Ada", "alice")]
    assert [e["subject"] for e in lines(capsys, "--store", str(store), "--principal", "local")] == ["Bob"]
    assert main(["--store", str(store)]) == 0
    table = capsys.readouterr().out
    assert "principal" in table.splitlines()[1] and "alice" in table
    assert main(["--store", str(store), "--stats"]) == 0
    assert "per principal" in capsys.readouterr().out


def test_a_renamed_entity_s_changes_are_listed_under_the_name_it_bore_at_each(  # type: ignore[no-untyped-def]
        tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    with Memory(store) as memory:
        for tool, arguments in (
                ("create_entities", {"entities": [{"name": "Ada", "entityType": "p", "observations": ["x"]}]}),
                ("rename_entity", {"name": "Ada", "newName": "Augusta"}),
                ("add_observations", {"observations": [{"entityName": "Augusta", "contents": ["notes"]}]}),
                ("create_entities", {"entities": [{"name": "Ada", "entityType": "language", "observations": []}]}),
                ("delete_entities", {"entityNames": ["Augusta"]})):
            memory.write(tool, arguments, actor="claude")
    expected = [("entity_created", "Ada"), ("entity_renamed", "Ada -> Augusta"), ("observations_added", "Augusta"),
                ("entity_created", "Ada"), ("entity_deleted", "Augusta")]
    events = lines(capsys, "--store", str(store), "--oldest-first")
    assert [(e["type"], e["subject"]) for e in events] == expected
    assert [(e["type"], e["subject"]) for e in lines(capsys, "--store", str(store), "--workspace", "default",
                                                       "--limit", "2")] == expected[:2:-1]
