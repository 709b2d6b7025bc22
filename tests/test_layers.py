"""The import rule: tools -> server -> projections -> eventstore, never upwards."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["eventstore", "projections", "server", "tools"]


def imported_top_level_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def upward_imports(layer: str) -> list[str]:
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    return [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        for name in sorted(imported_top_level_packages(path) & above)
    ]


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_no_layer_imports_a_layer_above_it(layer: str) -> None:
    assert upward_imports(layer) == []


def test_the_layer_check_catches_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import server.app\nfrom tools import cli\nfrom . import sibling\n")
    assert imported_top_level_packages(module) == {"server", "tools"}
