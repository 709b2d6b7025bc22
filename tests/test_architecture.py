"""docs/architecture.md draws the tree as it is: every folder and module it names exists,
and every room of every layer is drawn."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
LAYERS = ["eventstore", "projections", "application", "server", "tools"]


def drawn_tree() -> dict[str, set[str]]:
    """folder -> the modules the tree block of the document names in it."""
    block = DOC.read_text(encoding="utf-8").split("## The rooms of each layer", 1)[1].split("```")[1]
    tree: dict[str, set[str]] = {}
    layer = folder = ""
    for line in block.splitlines():
        heading = re.match(r"^( *)([a-z_]+)/", line)
        if heading:
            name = heading.group(2)
            if heading.group(1):
                folder = f"{layer}/{name}"
            else:
                layer = folder = name
            tree.setdefault(folder, set())
        if folder:
            tree.setdefault(folder, set()).update(re.findall(r"\b([a-z_0-9]+\.py)\b", line))
    return tree


def test_every_folder_and_module_the_architecture_names_exists() -> None:
    missing = [f"{folder}/{module}" for folder, modules in drawn_tree().items() for module in sorted(modules)
               if not (ROOT / folder / module).is_file()]
    missing += [folder for folder in drawn_tree() if not (ROOT / folder).is_dir()]
    assert missing == []


def test_every_room_of_every_layer_is_drawn() -> None:
    rooms = {str(path.parent.relative_to(ROOT)) for layer in LAYERS for path in (ROOT / layer).glob("*/__init__.py")}
    assert rooms - set(drawn_tree()) == set()


def test_the_tree_reader_finds_rooms_and_their_modules() -> None:
    tree = drawn_tree()
    assert "eventstore/lmdb" in tree and "writer.py" in tree["eventstore/lmdb"]
    assert "log.py" in tree["eventstore"]
