"""The import rule: tools -> server -> application -> projections -> eventstore, never upwards,
all under the one root `chronograph`, and no MCP below the server. Inside a layer, the same
rule between its rooms (subpackages): each has a rank, imports only from its own room and
the rooms it is allowed to (so the team memory and the other servers' surfaces, say, never
import each other)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["eventstore", "projections", "application", "server", "tools"]
MCP_STACK = {"mcp", "mcp_types", "starlette", "uvicorn", "anyio", "httpx"}


def imported_modules(path: Path) -> set[str]:
    """Every absolute module name `path` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def layer_of(module: str) -> str | None:
    """The layer a `chronograph.<layer>...` module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "chronograph" and parts[1] in LAYERS else None


def upward_imports(layer: str) -> list[str]:
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    return [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        for name in sorted(imported_modules(path))
        if layer_of(name) in above
    ]


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_no_layer_imports_a_layer_above_it(layer: str) -> None:
    assert upward_imports(layer) == []


@pytest.mark.parametrize("layer", LAYERS)
def test_every_import_of_our_code_goes_through_the_one_root(layer: str) -> None:
    bare = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        for name in sorted(imported_modules(path))
        if name.split(".")[0] in LAYERS and path.name != "checkout.py"
    ]
    assert bare == []


@pytest.mark.parametrize("layer", ["eventstore", "projections", "application"])
def test_the_core_imports_nothing_of_the_mcp_stack(layer: str) -> None:
    found = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        for name in sorted(imported_modules(path))
        if name.split(".")[0] in MCP_STACK
    ]
    assert found == []


def test_the_core_and_the_command_line_load_without_the_mcp_sdk() -> None:
    script = (
        "import sys, chronograph.application, chronograph.tools.cli\n"
        "chronograph.tools.cli.build_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_memory_with_the_local_embedder_opens_and_answers_without_loading_numpy(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from chronograph.application import Memory\n"
        f"memory = Memory({str(tmp_path / 'store')!r}, embeddings='local')\n"
        "assert memory.semantic is not None\n"
        "memory.call('create_entities', {'entities': [{'name': 'a', 'entityType': 't', 'observations': ['x']}]})\n"
        "memory.call('search_nodes', {'query': 'a'})\n"
        "print('numpy' in sys.modules)\n"
        "memory.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


ROOMS: dict[str, dict[str, set[str]]] = {
    "eventstore": {"": set(), "lmdb": {""}, "postgres": {""}},
    "projections": {
        "": set(), "states": {""}, "team": {""}, "past": {"", "states"}, "search": {"", "states"},
        "live": {"", "states", "past", "search"},
    },
    "application": {
        "": set(), "engine": {""}, "core": {"", "engine"}, "team": {"", "engine"},
        "lifecycle": {"", "engine", "core"}, "surfaces": {"", "engine", "core", "lifecycle"},
    },
    "server": {"": set()},
    "tools": {"common": set(), "": {"common"}},
}
"""Each layer's rooms ("" for the modules at its top level) and the rooms each may import."""

OVER_ROOMS = {"eventstore/__init__.py", "projections/__init__.py", "application/__init__.py",
              "application/profiles.py", "application/explorer.py", "application/graphdiff.py"}
"""Modules that name what a layer offers, or choose among its rooms, and so see all of them."""


def room_of(module: str) -> tuple[str, str] | None:
    """(layer, room) of a `chronograph.<layer>[.<room>].<module>` name (None: not ours)."""
    layer = layer_of(module)
    if layer is None:
        return None
    parts = module.split(".")
    room = parts[2] if len(parts) > 3 or (len(parts) == 3 and (ROOT / layer / parts[2]).is_dir()) else ""
    return layer, room


def sideways_imports(layer: str) -> list[str]:
    allowed = ROOMS[layer]
    found = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        relative = path.relative_to(ROOT)
        if str(relative) in OVER_ROOMS:
            continue
        room = relative.parts[1] if len(relative.parts) > 2 else ""
        for name in sorted(imported_modules(path)):
            target = room_of(name)
            if target is None or target[0] != layer or target[1] == room:
                continue
            if target[1] not in allowed[room]:
                found.append(f"{relative} ({room or 'top'}) imports {name} ({target[1] or 'top'})")
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_every_room_of_a_layer_says_what_it_may_import(layer: str) -> None:
    rooms = {path.parent.name for path in (ROOT / layer).glob("*/__init__.py")}
    assert rooms | {""} == set(ROOMS[layer])


@pytest.mark.parametrize("layer", LAYERS)
def test_no_room_imports_a_room_it_may_not(layer: str) -> None:
    assert sideways_imports(layer) == []


def test_the_layer_check_catches_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import chronograph.server.app\nfrom chronograph.tools import cli\nfrom . import sibling\n")
    assert {layer_of(name) for name in imported_modules(module)} == {"server", "tools"}


def test_the_room_check_tells_a_room_from_a_module() -> None:
    assert room_of("chronograph.application.team.common") == ("application", "team")
    assert room_of("chronograph.application.team") == ("application", "team")
    assert room_of("chronograph.application.errors") == ("application", "")
    assert room_of("chronograph.eventstore.lmdb") == ("eventstore", "lmdb")
