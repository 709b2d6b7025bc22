"""Tool annotations tell the truth: derived from each tool's declaration and the files the
server lets it write, the same in every profile; a tool that says it is read-only writes
nothing, neither to the log nor to a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chronograph.application import PROFILES
from chronograph.server.app import Runtime, create_server
from chronograph.server.config import Settings
from mcp import Client
from support.examples import example, plausible, tree
from support.mcp import call

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("exports", [False, True])
@pytest.mark.parametrize("profile", PROFILES)
async def test_no_tool_that_claims_to_be_read_only_writes_to_the_log_or_a_file(
    tmp_path: Path, profile: str, exports: bool
) -> None:
    project, store = tmp_path / "repo", tmp_path / "store"
    (project / ".git").mkdir(parents=True)  # a root never adopted: confirmNewProjectRoot would write .mcp
    export_dir = tmp_path / "exports" if exports else None
    if export_dir is not None:
        export_dir.mkdir()
    settings = Settings(store=store, embeddings="off", profile=profile, export_dir=export_dir)
    runtime = Runtime(settings)
    fill = plausible(project)
    async with Client(create_server(settings, runtime)) as client:
        if "create_entities" in PROFILES[profile].tools:
            await call(client, "create_entities",
                       {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]})
        read_only = [t for t in (await client.list_tools()).tools if t.annotations and t.annotations.read_only_hint]
        assert read_only or profile == "n2n"  # any n2n tool may adopt a root, writing its .mcp marker
        for tool in read_only:
            for every in (False, True):
                arguments: dict[str, Any] = example(tool.input_schema, every=every, fill=fill)
                head, before = runtime.memory.log.head(), tree(tmp_path, skip=store)
                await client.call_tool(tool.name, arguments)
                assert (runtime.memory.log.head(), tree(tmp_path, skip=store)) == (head, before), (
                    f"{tool.name} claims to be read-only, yet {arguments} wrote")


@pytest.mark.parametrize("exports", [False, True])
async def test_a_tool_is_annotated_alike_in_every_profile_that_offers_it(tmp_path: Path, exports: bool) -> None:
    export_dir = tmp_path / "exports" if exports else None
    seen: dict[tuple[str, str], tuple[str, Any]] = {}
    for profile in PROFILES:
        settings = Settings(store=tmp_path / profile, embeddings="off", profile=profile, export_dir=export_dir)
        async with Client(create_server(settings)) as client:
            for tool in (await client.list_tools()).tools:
                declared = next(t for t in PROFILES[profile].tools if t.name == tool.name)
                hints = tool.annotations.model_dump(exclude_none=True) if tool.annotations else {}
                key = (tool.name, declared.handler.__module__)  # one declaration, wherever it is offered
                first = seen.setdefault(key, (profile, hints))
                if tool.name not in ("create_entities", "add_observations", "delete_entities", "delete_observations",
                                     "delete_relations", "create_relations", "read_graph", "search_nodes",
                                     "open_nodes"):  # the official nine publish all four hints everywhere
                    assert hints == first[1], f"{tool.name}: {first[0]} says {first[1]}, {profile} says {hints}"


async def test_n2n_s_tools_are_not_read_only_where_a_new_root_can_be_adopted(tmp_path: Path) -> None:
    for profile in ("n2n", "full"):
        async with Client(create_server(Settings(store=tmp_path / profile, embeddings="off", profile=profile))) as c:
            hints = {t.name: t.annotations for t in (await c.list_tools()).tools}
        assert hints["n2n_export_markdown"].read_only_hint is False  # type: ignore[union-attr]
        assert hints["n2n_search"].read_only_hint is False  # type: ignore[union-attr]
        assert hints["n2n_search"].destructive_hint is False  # type: ignore[union-attr]
