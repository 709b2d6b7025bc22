"""Folding n2n's project files: the files take exactly what the tools take (so the mirror of
anything written reads back, and nothing folded is what a tool would refuse)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from chronograph.application.core import context as core_context
from chronograph.application.engine.arguments import Limits, RelationKey
from chronograph.application.surfaces import n2n
from chronograph.application.surfaces.projectfold import FileContext, FileEntity, FileRelation
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
