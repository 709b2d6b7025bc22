"""Who may call what, over real MCP clients: every tool of every profile, the resources and the
subscriptions, each for a principal with a read grant on the workspace the call touches, a
write grant on another workspace only, a write grant, and admin. A call is allowed or refused
(`forbidden`) as granted; a refusal writes nothing; no reply or notification carries data of
a workspace the principal has no grant on.

The principal is the runtime's own (`Runtime.principal`, the local user over stdio), set per
call: the in-process client carries no HTTP request (`test_access_http.py` puts one in the
scope of real HTTP requests)."""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from chronograph.application import PROFILES
from chronograph.application.engine.access import TEAM_WORKSPACE
from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Level, Principal
from chronograph.application.engine.registry import TEAM, Tool
from chronograph.application.surfaces.projectroot import workspace_name
from chronograph.server.app import Runtime, create_server
from chronograph.server.config import Settings
from chronograph.server.jsonschema import json_schema
from chronograph.server.results import ERROR_META
from mcp import Client, MCPError
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ResourceUpdatedNotification
from support.examples import example, plausible
from support.mcp import entity

pytestmark = pytest.mark.anyio

TARGET, OTHER = "alpha", "bravo"
"""The workspace the calls touch, and another (each holds data the other's readers must not see)."""
SECRETS = {TARGET: ("AlphaOne", "alpha-fact"), OTHER: ("BravoOne", "bravo-fact")}

NEEDS: dict[str, Level | None] = {
    **dict.fromkeys([
        "read_graph", "search_nodes", "open_nodes", "get_entity_history", "get_relation_history", "get_audit_log",
        "read_context", "get_graph_summary", "semantic_search", "suggest_cleanup", "get_related_entities",
        "export_graph", "memory_health", "memory_init", "memory_conflict", "memory_query", "memory_export",
        "n2n_read_graph", "n2n_get_graph_summary", "n2n_search", "n2n_open_nodes", "get_entity_relations",
        "search_entities"], "read"),
    **dict.fromkeys([
        "create_entities", "create_relations", "add_observations", "delete_entities", "delete_observations",
        "delete_relations", "update_context", "update_entities", "update_relations", "rename_entity",
        "merge_entities", "invalidate_observations", "invalidate_relations", "revert_entity", "memory_session",
        "memory_file_lock", "memory_tool", "memory_guideline", "memory_knowledge", "memory_tag", "memory_relation",
        "memory_org", "memory_project", "memory_import", "n2n_add_entities", "n2n_add_observations",
        "n2n_create_relations", "n2n_update_context", "n2n_delete_entities", "n2n_delete_observations",
        "n2n_delete_relations", "n2n_export_markdown", "upsert_entity", "upsert_relation", "create_entity",
        "create_relationship"], "write"),
    **dict.fromkeys(["forget_entity", "memory_forget"], "admin"),
    "list_workspaces": None,
}
"""The grant each tool needs, called as a client that fills only the required fields (the team
tools' first action) would call it; None: it reads across workspaces, showing the readable ones."""

MORE: list[tuple[str, str, dict[str, Any], Level | None]] = [
    ("memory_init", "team", {"action": "reset"}, "admin"),
    ("memory_org", "team", {"action": "list"}, "read"),
    ("memory_knowledge", "team", {"action": "list"}, "read"),
    ("export_graph", "lifecycle", {"format": "json", "outputPath": "graph.json"}, "write"),
    ("get_audit_log", "core", {"allWorkspaces": True}, None),
    ("get_graph_summary", "kuzu", {}, None),
]
"""Other arguments that change what a tool needs: (tool, where it is declared, arguments over the
required ones, need)."""

GRANTS = ["read", "write elsewhere", "write", "admin"]


def principal(grant: str, workspace: str) -> Principal:
    """The principal of a column of the matrix, for calls that touch `workspace`."""
    if grant == "write elsewhere":
        return Principal("elsewhere", {OTHER: "write"})
    return Principal(grant, {workspace: grant})  # type: ignore[dict-item]


def allowed(grant: str, need: Level | None) -> bool:
    order = ["read", "write", "admin"]
    if need is None:
        return True
    return grant != "write elsewhere" and order.index(grant) >= order.index(need)


def secrets(project: Path) -> dict[str, tuple[str, str]]:
    """What each workspace holds (the project's too) that no other's reader may see."""
    return {**SECRETS, workspace_name(Path(os.path.realpath(project))): ("ProjectOne", "project-fact"),
            "default": ("DefaultOne", "default-fact")}


def hidden(who: Principal, project: Path) -> list[str]:
    """The data a reply to `who` must not carry: that of every workspace it may not read."""
    return [word for workspace, words in secrets(project).items() if not who.may(workspace, "read")
            for word in words]


def test_every_tool_of_every_profile_says_what_it_needs() -> None:
    offered = {tool.name for p in PROFILES.values() for tool in p.tools}
    assert offered == set(NEEDS)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    yield root


def where(tool: Tool, profile: str, project: Path) -> str | None:
    """The workspace a call of `tool` in the matrix touches (None: it reads across)."""
    if NEEDS[tool.name] is None:
        return None
    if tool.name in TEAM and TEAM[tool.name] is tool:
        return TEAM_WORKSPACE
    if tool.name.startswith("n2n_"):
        return workspace_name(Path(os.path.realpath(project)))
    return TARGET


def arguments_for(tool: Tool, project: Path, workspace: str | None, more: dict[str, Any]) -> dict[str, Any]:
    fill = plausible(project)
    arguments: dict[str, Any] = example(json_schema(tool.arguments), every=False, fill=fill)
    fields = {f.encode_name for f in msgspec.structs.fields(tool.arguments)}
    for name in ("workspace", "workspaceName", "database"):
        if name in fields and workspace is not None and name not in more:
            arguments[name] = workspace
        elif name in arguments and workspace is None:
            del arguments[name]
    return {**arguments, **more}


async def seed(runtime: Runtime, profile: str, project: Path) -> None:
    """Data in both workspaces (and the project's), written by the local user."""
    memory = runtime.memory
    if profile in ("n2n", "full"):
        memory.write(PROFILES["n2n"].tools["n2n_add_entities"], {
            "projectPath": str(project), "confirmNewProjectRoot": str(project),
            "entities": [{"name": "Setup", "entityType": "thing"}]}, actor="setup")
    for workspace, (name, fact) in secrets(project).items():
        memory.write("create_entities", {"workspace": workspace, "entities": [entity(name, "thing", fact)]},
                     actor="setup")


def outcome(result: Any) -> tuple[str | None, str]:
    """(the refusal's code or None, everything the reply says)."""
    said = json.dumps([c.model_dump() for c in result.content]) + json.dumps(result.structured_content)
    code = result.meta[ERROR_META]["code"] if result.is_error and result.meta and ERROR_META in result.meta else None
    return code, said


@pytest.mark.parametrize("profile", PROFILES)
async def test_every_tool_is_allowed_or_refused_as_granted_and_a_refusal_writes_nothing(
    tmp_path: Path, project: Path, profile: str
) -> None:
    export_dir = tmp_path / "exports"
    export_dir.mkdir()
    settings = Settings(store=tmp_path / "store", embeddings="off", profile=profile, export_dir=export_dir)
    runtime = Runtime(settings)
    cases = [(tool, {}, NEEDS[tool.name]) for tool in PROFILES[profile].tools]
    cases += [(PROFILES[profile].tools[name], more, need) for name, room, more, need in MORE
              if name in PROFILES[profile].tools and f".{room}" in PROFILES[profile].tools[name].handler.__module__]
    wrong: list[str] = []
    async with Client(create_server(settings, runtime)) as client:
        await seed(runtime, profile, project)
        for tool, more, need in cases:
            workspace = where(tool, profile, project) if need is not None else None
            for grant in GRANTS:
                who = principal(grant, workspace or TARGET)
                arguments = arguments_for(tool, project, workspace, more)
                head = runtime.memory.log.head()
                runtime.principal = who
                try:
                    code, said = outcome(await client.call_tool(tool.name, arguments))
                finally:
                    runtime.principal = LOCAL_PRINCIPAL
                expected = allowed(grant, need)
                if (code == "forbidden") == expected:
                    wrong.append(f"{tool.name} {arguments} for {grant}: {'refused' if expected else 'allowed'}: "
                                 f"{said[:200]}")
                if code == "forbidden" and runtime.memory.log.head() != head:
                    wrong.append(f"{tool.name} for {grant}: refused, yet wrote")
                leaked = [word for word in hidden(who, project) if word.lower() in said.lower()]
                leaked += [place for place in (TARGET, OTHER) if need is None and not who.may(place, "read")
                           and re.search(rf"\b{place}\b", said)]  # a read across workspaces names only the readable
                if leaked:
                    wrong.append(f"{tool.name} {arguments} for {grant}: shows {leaked}")
    assert wrong == []


@pytest.mark.parametrize("profile", PROFILES)
async def test_every_resource_is_read_only_by_a_principal_granted_to_read_what_it_shows(
    tmp_path: Path, project: Path, profile: str
) -> None:
    settings = Settings(store=tmp_path / "store", embeddings="off", profile=profile)
    runtime = Runtime(settings)
    n2n = workspace_name(Path(os.path.realpath(project)))
    shows = {"memory://knowledge-graph": "default", "mcp://memory/graph": n2n}
    wrong: list[str] = []
    async with Client(create_server(settings, runtime)) as client:
        await seed(runtime, profile, project)
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        templates = (await client.list_resource_templates()).resource_templates
        uris += [f"mcp://memory/graph?path={project}" for t in templates if t.uri_template.startswith("mcp://memory/graph")]
        assert uris
        for uri in uris:
            workspace = shows.get(uri.split("?")[0])
            for grant in GRANTS:
                who = principal(grant, workspace or TARGET)
                runtime.principal = who
                head = runtime.memory.log.head()
                try:
                    text, code = (await client.read_resource(uri)).contents[0].text, None  # type: ignore[union-attr]
                except MCPError as error:
                    text, code = error.message, (error.data or {}).get("code")
                finally:
                    runtime.principal = LOCAL_PRINCIPAL
                if (code == "forbidden") == (workspace is None or allowed(grant, "read")):
                    wrong.append(f"{uri} for {grant}: {code}: {text[:200]}")
                if runtime.memory.log.head() != head:
                    wrong.append(f"{uri} for {grant}: wrote")
                leaked = [word for word in hidden(who, project) if word.lower() in text.lower()]
                names = [place for place in (TARGET, OTHER) if workspace is None and not who.may(place, "read")
                         and f'"{place}"' in text]
                if leaked or names:
                    wrong.append(f"{uri} for {grant}: shows {leaked + names}")
    assert wrong == []


async def test_list_workspaces_and_the_audit_of_every_workspace_show_only_the_readable_ones(
    tmp_path: Path, project: Path
) -> None:
    settings = Settings(store=tmp_path / "store", embeddings="off", profile="full")
    runtime = Runtime(settings)
    async with Client(create_server(settings, runtime)) as client:
        await seed(runtime, "chronograph", project)
        runtime.principal = Principal("reader", {TARGET: "read"})
        listed = (await client.call_tool("list_workspaces", {})).structured_content
        audit = (await client.call_tool("get_audit_log", {"allWorkspaces": True})).structured_content
    assert [w["name"] for w in listed["workspaces"]] == [TARGET]  # type: ignore[index]
    assert {e["workspace"] for e in audit["events"]} == {TARGET}  # type: ignore[index]


async def test_a_principal_that_may_not_read_the_graph_cannot_subscribe_to_it_nor_hears_of_other_writes(
    tmp_path: Path,
) -> None:
    settings = Settings(store=tmp_path / "store", embeddings="off")
    runtime = Runtime(settings)
    heard: list[object] = []

    async def collect(message: object) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            heard.append(message)

    server = create_server(settings, runtime)
    async with Client(server, mode="legacy", message_handler=collect) as reader, Client(server, mode="legacy") as other:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            runtime.principal = Principal("elsewhere", {OTHER: "write"})
            with pytest.raises(MCPError) as refused:
                await other.session.subscribe_resource("memory://knowledge-graph")
            runtime.principal = Principal("reader", {"default": "read"})
            await reader.session.subscribe_resource("memory://knowledge-graph")
        runtime.principal = Principal("elsewhere", {OTHER: "write"})
        await other.call_tool("create_entities", {"workspace": OTHER, "entities": [entity("BravoOne")]})
        await anyio.sleep(0.05)
        assert heard == []  # a write elsewhere says nothing of the graph its subscribers read
        runtime.principal = LOCAL_PRINCIPAL
        await other.call_tool("create_entities", {"entities": [entity("Ada")]})
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.01)
    assert refused.value.data["code"] == "forbidden"


async def test_a_listener_without_a_read_grant_on_the_graph_is_refused(tmp_path: Path) -> None:
    settings = Settings(store=tmp_path / "store", embeddings="off")
    runtime = Runtime(settings)
    async with Client(create_server(settings, runtime)) as client:
        runtime.principal = Principal("elsewhere", {OTHER: "write"})
        with pytest.raises(MCPError) as refused:
            async with client.listen(resource_subscriptions=["memory://knowledge-graph"]) as subscription:
                await subscription.__anext__()
    assert refused.value.data["code"] == "forbidden"


async def test_the_prompts_recall_only_a_workspace_the_principal_may_read(tmp_path: Path) -> None:
    settings = Settings(store=tmp_path / "store", embeddings="off")
    runtime = Runtime(settings)
    async with Client(create_server(settings, runtime)) as client:
        runtime.memory.write("create_entities", {
            "workspace": OTHER, "entities": [entity("BravoOne", "thing", "bravo-fact")]}, actor="setup")
        runtime.principal = Principal("reader", {TARGET: "read"})
        for prompt in ("recall", "remember"):
            with pytest.raises(MCPError) as refused:
                await client.get_prompt(prompt, {"project": OTHER})
            assert "Forbidden" in refused.value.message and "bravo-fact" not in refused.value.message
        runtime.principal = Principal("elsewhere", {OTHER: "read"})
        recalled = await client.get_prompt("recall", {"project": OTHER})
    assert "BravoOne" in json.dumps(recalled.model_dump())


async def test_a_prompt_naming_a_folder_of_a_project_the_principal_may_not_read_learns_nothing_of_it(
        tmp_path: Path) -> None:
    secret, plain = tmp_path / "acme-merger-plans", tmp_path / "plain"
    (secret / ".git").mkdir(parents=True)
    (secret / "docs").mkdir()
    plain.mkdir()
    settings = Settings(store=tmp_path / "store", profile="full", embeddings="off")
    runtime = Runtime(settings)
    async with Client(create_server(settings, runtime)) as client:
        adopt = {"projectPath": str(secret), "confirmNewProjectRoot": str(secret)}
        runtime.memory.write(PROFILES["n2n"].tools["n2n_add_entities"], {**adopt,
            "entities": [entity("Plan", "doc", "merger-fact")]}, actor="owner")
        runtime.principal = Principal("reader", {"default": "read"})
        answers = []
        for path in (secret / "docs", secret / "not-even-there", plain):
            for prompt in ("recall", "remember"):
                answer = await client.get_prompt(prompt, {"project": str(path)})
                answers.append(json.dumps(answer.model_dump()))
    # The same answer as for a folder of no project (the default workspace's), never a refusal naming it
    assert all("acme" not in text and "merger-fact" not in text and "n2n:" not in text for text in answers)
    assert answers[0] == answers[4] and answers[1] == answers[5]
