"""Folding n2n's project files: the files take exactly what the tools take (so the mirror of
anything written reads back, and nothing folded is what a tool would refuse), and a parked
note stays within an observation's limit, whole."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application.core import context as core_context
from chronograph.application.engine.arguments import Limits, RelationKey
from chronograph.application.surfaces import n2n, projectfold
from chronograph.application.surfaces.projectfold import CONFLICTS, FileContext, FileEntity, FileRelation
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client
from support.mcp import ToolFailed, call

pytestmark = pytest.mark.anyio


def server(store: Path) -> Client:
    return Client(create_server(Settings(store=store, embeddings="off", profile="n2n", mirror_projects=True)))


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


def field(kind: type[msgspec.Struct], name: str) -> Any:
    return next(f.type for f in msgspec.inspect.type_info(kind).fields if f.name == name)  # type: ignore[attr-defined]


def test_the_files_take_exactly_the_limits_the_tools_take() -> None:
    """Through n2n_add_entities, create_relations (which n2n_create_relations calls) and
    update_context (which n2n_update_context calls): no field longer, none shorter."""
    for name in ("name", "entity_type"):
        assert field(FileEntity, name) == field(n2n.Entity, name), name
    # each observation as a tool takes it; as many as calls have added (a call adds 1,000 at most)
    assert field(FileEntity, "observations").item_type == field(n2n.Entity, "observations").item_type
    for name in ("source", "target", "relation_type"):
        assert field(FileRelation, name) == field(RelationKey, name), name
    for name in ("active_task", "reason", "next_steps", "last_commit"):
        tool = field(core_context.UpdateContext, name)  # with its description
        assert field(FileContext, name) == tool.type, name


async def test_an_entity_type_past_the_files_limit_is_refused_and_the_longest_taken_reads_back_after_a_restart(
        tmp_path: Path) -> None:
    root = project(tmp_path)
    long = {"name": "N" * Limits.NAME, "entityType": "t" * Limits.TYPE, "observations": ["o" * Limits.OBSERVATION]}
    async with server(tmp_path / "store") as client:
        with pytest.raises(ToolFailed, match="entityType: expected `str` of length <= 256"):
            await call(client, "n2n_add_entities", {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                                                    "entities": [{"name": "X", "entityType": "t" * 300}]})
        await call(client, "n2n_add_entities", {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                                                "entities": [long, {"name": "M", "entityType": "t"}]})
        await call(client, "n2n_create_relations", {"projectPath": str(root), "relations": [
            {"from": long["name"], "to": "M", "relationType": "r" * Limits.TYPE}]})
    async with server(tmp_path / "store") as client:  # the first call of a new process reads the files
        graph = (await call(client, "n2n_read_graph", {"projectPath": str(root)}))["graph"]
    assert sorted(e["name"] for e in graph["entities"]) == sorted([long["name"], "M"])
    assert len(graph["relations"]) == 1


@pytest.mark.parametrize(("entity", "relation", "problem"), [
    ({"name": "nul\u0000x", "entityType": "t"}, None, "entities[0].name: must not contain NUL characters"),
    ({"name": "   ", "entityType": "t"}, None, "entities[0].name: must not be blank"),
    ({"name": "A", "entityType": " "}, None, "entities[0].entityType: must not be blank"),
    ({"name": "A", "entityType": "t"}, {"from": "A", "to": "A", "relationType": "r\u0000"},
     "relations[0].relationType: must not contain NUL characters"),
])
async def test_a_name_or_type_the_tools_refuse_is_refused_in_a_file_naming_the_field(
        tmp_path: Path, entity: dict[str, str], relation: dict[str, str] | None, problem: str) -> None:
    root = project(tmp_path)
    async with server(tmp_path / "store") as client:
        await call(client, "n2n_read_graph", {"projectPath": str(root), "confirmNewProjectRoot": str(root)})
        (root / ".mcp" / "memory.json").write_text(json.dumps({"entities": [entity],
                                                               "relations": [relation] if relation else []}))
        with pytest.raises(ToolFailed) as failed:
            await call(client, "n2n_read_graph", {"projectPath": str(root)})
    answer = json.loads(str(failed.value))
    assert answer["code"] == "invalid" and f".mcp/memory.json is not in n2n's format: {problem}" in answer["message"]


def joined(observations: list[str]) -> list[str]:
    """The parked notes again: whole ones as they are, parts joined in order (as sorted by the mirror)."""
    notes, pieces = [], []
    for observation in sorted(observations):
        match = re.match(r"\[parked note ([0-9a-f]{8}), part (\d+) of (\d+)\] ", observation)
        if match is None:
            notes.append(observation)
        else:
            pieces.append((match.group(1), observation[match.end():]))
    for key in dict.fromkeys(k for k, _ in pieces):
        notes.append("".join(text for k, text in pieces if k == key))
    return notes


def test_a_note_longer_than_an_observation_is_cut_into_marked_parts_that_join_back_whole() -> None:
    long = ["".join(f"{i:06d} " for i in range(n)) for n in (5000, 30_000)]  # 35,000 and 210,000 characters
    short = "a short note"
    kept = projectfold.parts([short, long[0], short, long[1]])
    assert kept[0] == short and len(kept) == 1 + 3 + 13
    assert all(len(observation) <= Limits.OBSERVATION for observation in kept)
    assert sorted(joined(list(kept))) == sorted([short, *long])


async def test_a_long_conflict_is_parked_in_parts_the_mirror_reads_back_and_the_conflict_can_be_deleted(
        tmp_path: Path) -> None:
    root = project(tmp_path)
    project_path = {"projectPath": str(root)}
    observations = [f"{i:04d} " + "y" * 1000 for i in range(40)]
    async with server(tmp_path / "store") as client:
        await call(client, "n2n_add_entities", {**project_path, "confirmNewProjectRoot": str(root),
                                                "entities": [{"name": "X", "entityType": "t"}]})
        await call(client, "n2n_delete_entities", {**project_path, "entityNames": ["X"]})
        (root / ".mcp" / "memory.json").write_text(json.dumps({"entities": [
            {"name": "X", "entityType": "t", "observations": observations}]}))
        graph = (await call(client, "n2n_read_graph", project_path))["graph"]
    parked = next(e["observations"] for e in graph["entities"] if e["name"] == CONFLICTS)
    assert len(parked) > 1 and all(len(o) <= Limits.OBSERVATION for o in parked)
    note = next(n for n in joined(parked) if n.startswith("The project file holds entity 'X'"))
    assert json.loads(note[note.index("observations: ") + len("observations: "):]) == observations
    async with server(tmp_path / "store") as client:  # a new process reads the mirror, and can resolve it
        await call(client, "n2n_delete_entities", {**project_path, "entityNames": [CONFLICTS]})
        assert (await call(client, "n2n_read_graph", project_path))["graph"]["entities"] == []
