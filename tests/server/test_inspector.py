"""The official MCP Inspector CLI, a third-party client, lists and calls our tools.

Runs when an inspector is installed (.ci/run puts one in .ci/node) or npx can fetch one;
skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.wire,  # a server in a subprocess: skip locally with -m 'not wire'
    pytest.mark.xdist_group("npx"),  # one npx at a time: two fetching one package into its cache collide
]

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"


def inspector() -> list[str]:
    if os.environ.get("CHRONOGRAPH_INSPECTOR"):
        return [os.environ["CHRONOGRAPH_INSPECTOR"]]
    if LOCAL.exists():
        return [str(LOCAL)]
    if shutil.which("npx") and shutil.which("node"):
        return ["npx", "-y", "@modelcontextprotocol/inspector@0.15"]
    pytest.skip("no MCP Inspector: install Node 20 (npx) or run .ci/run")


def run_inspector(store: Path, *method: str) -> dict:  # type: ignore[type-arg]
    command = [*inspector(), "--cli", sys.executable, "-m", "chronograph", "--store", str(store), *method]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_inspector_lists_our_tools_with_the_official_ones_first(tmp_path: Path) -> None:
    tools = run_inspector(tmp_path / "store", "--method", "tools/list")["tools"]
    names = [t["name"] for t in tools]
    assert names[:9] == ["create_entities", "create_relations", "add_observations", "delete_entities",
                         "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes"]
    create = tools[0]
    assert create["inputSchema"]["required"] == ["entities"]
    assert create["annotations"]["readOnlyHint"] is False and "outputSchema" not in create
    official = run_inspector(tmp_path / "store", "--profile", "official", "--method", "tools/list")["tools"]
    assert [t["name"] for t in official] == names[:9]
    assert all("outputSchema" in t for t in official)  # the official server's, in its profile


def test_the_inspector_calls_a_tool_and_reads_its_structured_answer(tmp_path: Path) -> None:
    store = tmp_path / "store"
    created = run_inspector(store, "--method", "tools/call", "--tool-name", "create_entities", "--tool-arg",
                            'entities=[{"name": "Ada", "entityType": "person", "observations": ["math"]}]')
    assert created["isError"] is False
    assert created["structuredContent"]["entities"][0]["name"] == "Ada"
    found = run_inspector(store, "--method", "tools/call", "--tool-name", "search_nodes", "--tool-arg", "query=MATH")
    assert [e["name"] for e in found["structuredContent"]["entities"]] == ["Ada"]


def test_the_inspector_drives_the_agent_memory_profile(tmp_path: Path) -> None:
    store, profile = tmp_path / "store", ("--profile", "agent-memory")  # its tools/list: test_agent_memory.py
    lock = ("--method", "tools/call", "--tool-name", "memory_file_lock", "--tool-arg", "action=checkout",
            "--tool-arg", "file_path=/src/a.ts")
    taken = run_inspector(store, *profile, *lock, "--tool-arg", "agent_id=A")
    assert taken["structuredContent"]["lock"]["checkedOutBy"] == "A"
    refused = run_inspector(store, *profile, *lock, "--tool-arg", "agent_id=B")
    assert refused["isError"] is True
    assert json.loads(refused["content"][0]["text"])["code"] == "locked"


def test_a_graph_too_big_for_the_inspector_gets_a_paging_hint_not_a_dropped_connection(tmp_path: Path) -> None:
    from chronograph.application import Memory  # a big graph is quicker to write in-process, unsynced

    store = tmp_path / "store"
    padding = "an observation long enough to make the whole graph bigger than ten mebibytes " * 4
    with Memory(store, sync=False) as memory:
        for start in range(0, 7000, 100):
            entities = [{"name": f"E{i:05d}", "entityType": "thing",
                         "observations": [f"{padding}{i}.{k}" for k in range(3)]}
                        for i in range(start, start + 100)]
            memory.write("create_entities", {"entities": entities}, actor="test")
    refused = run_inspector(store, "--method", "tools/call", "--tool-name", "read_graph")
    assert refused["isError"] is True
    assert "drop the connection beyond 10 MiB" in refused["content"][0]["text"]
    page = run_inspector(store, "--method", "tools/call", "--tool-name", "read_graph",
                         "--tool-arg", "limit=1000", "--tool-arg", "offset=4000")
    assert page["structuredContent"]["entities"][0]["name"] == "E04000"


def test_a_refusal_passes_the_typescript_client_s_output_schema_check(tmp_path: Path) -> None:
    missing = 'observations=[{"entityName": "Nobody", "contents": ["x"]}]'
    refused = run_inspector(tmp_path / "store", "--profile", "official", "--method", "tools/call", "--tool-name",
                            "add_observations", "--tool-arg", missing)
    assert refused["isError"] is True and refused["content"][0]["text"] == "Entity with name Nobody not found"
    assert refused["_meta"]["chronograph/error"]["code"] == "not_found"
