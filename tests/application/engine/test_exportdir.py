"""The export directory: no store, no dotfile, no overwrite unless asked, whole files, capped bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.engine.exportdir import ExportDir, ExportRefused


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home directory as a user would pick it for --export-dir, with their store inside."""
    store = tmp_path / ".local" / "share" / "chronograph" / "store"
    with Memory(store) as memory:
        memory.write("create_entities", {"entities": [
            {"name": "$(touch pwned)", "entityType": "t", "observations": []}]}, actor="t")
    (tmp_path / ".bashrc").write_text("# the user's own\n")
    return tmp_path


@pytest.mark.parametrize("target", [
    ".local/share/chronograph/store/data.mdb", ".local/share/chronograph/store/new.jsonl", ".bashrc",
    ".profile", "notes/.hidden/graph.md", "../outside.md", "/etc/passwd", "",
])
def test_targets_that_could_do_harm_are_refused(home: Path, target: str) -> None:
    with pytest.raises(ExportRefused):
        ExportDir(home).write(target, "content")
    assert (home / ".bashrc").read_text() == "# the user's own\n"


def test_a_store_inside_the_export_directory_survives_an_attempt_to_overwrite_it(home: Path) -> None:
    store = home / ".local/share/chronograph/store"
    with pytest.raises(ExportRefused, match="inside a Chronograph store"):
        ExportDir(home / ".local/share").write("chronograph/store/data.mdb", "x", overwrite=True)
    with Memory(store) as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["$(touch pwned)"]  # type: ignore[attr-defined]


def test_an_existing_file_is_replaced_only_when_asked(tmp_path: Path) -> None:
    exports = ExportDir(tmp_path)
    exports.write("graph.md", "first")
    with pytest.raises(ExportRefused, match="overwrite: true"):
        exports.write("graph.md", "second")
    assert (tmp_path / "graph.md").read_text() == "first"
    exports.write("graph.md", "second", overwrite=True)
    assert (tmp_path / "graph.md").read_text() == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.md"]  # no partial file left behind


def test_one_export_and_all_exports_are_capped(tmp_path: Path) -> None:
    exports = ExportDir(tmp_path, max_export=10, budget=15)
    with pytest.raises(ExportRefused, match="over the 10"):
        exports.write("big.md", "x" * 11)
    exports.write("a.md", "x" * 10)
    with pytest.raises(ExportRefused, match="budget of 15"):
        exports.write("b.md", "x" * 10)
    assert not (tmp_path / "big.md").exists() and not (tmp_path / "b.md").exists()


def test_a_symlink_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ExportRefused, match="outside"):
        ExportDir(exports).write("link/graph.md", "x")


def test_a_principal_s_exports_go_in_a_folder_of_its_own(tmp_path: Path) -> None:
    """Under one --export-dir, a writer of one workspace replaced the file an admin had exported
    from another (overwrite: true), and learnt which names were taken from the refusals."""
    from chronograph.application.engine.principal import Principal

    exports = ExportDir(tmp_path / "exports")
    with Memory(tmp_path / "store", export_dir=exports) as memory:
        for workspace in ("alpha", "bravo"):
            memory.write("create_entities", {"workspace": workspace, "entities": [
                {"name": f"Secret {workspace}", "entityType": "t", "observations": []}]}, actor="t")
        admin, bob = Principal("admin", {"*": "admin"}), Principal("oauth:bob/../x", {"bravo": "write"})
        mine = memory.read("export_graph", {"workspace": "alpha", "format": "json", "outputPath": "backup.json"},
                           principal=admin).path  # type: ignore[attr-defined]
        local = memory.read("export_graph", {"workspace": "alpha", "format": "json", "outputPath": "backup.json"}
                            ).path  # type: ignore[attr-defined]
        theirs = memory.read("export_graph", {"workspace": "bravo", "format": "json", "outputPath": "backup.json",
                                              "overwrite": True}, principal=bob).path  # type: ignore[attr-defined]
    assert Path(local) == tmp_path / "exports" / "backup.json"  # the local user's, where it always was
    assert Path(mine) == tmp_path / "exports" / "admin" / "backup.json"
    assert Path(theirs).parent.parent == tmp_path / "exports" and Path(theirs).parent.name.startswith("principal-")
    assert "Secret alpha" in Path(mine).read_text() and "Secret bravo" in Path(theirs).read_text()


def test_a_token_named_as_a_hashed_folder_gets_a_folder_of_its_own() -> None:
    from chronograph.application.engine.exportdir import folder_of

    subject = folder_of("oauth:someone")
    assert subject.startswith("principal-") and folder_of(subject) != subject
    assert folder_of("alice") == "alice"
