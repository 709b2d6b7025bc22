"""export_graph through MCP: content back by default; files only inside the export directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from mcp import Client
from support.mcp import ToolFailed, call, entity

pytestmark = pytest.mark.anyio


async def test_the_tool_returns_the_content_and_writes_no_file(client: Client, tmp_path: Path) -> None:
    await call(client, "create_entities", {"entities": [entity("Ada")]})
    exported = await call(client, "export_graph", {"format": "jsonl"})
    assert exported["content"] == '{"type":"entity","name":"Ada","entityType":"person","observations":[]}'
    assert exported["entities"] == 1 and "path" not in exported
    with pytest.raises(ToolFailed, match="writes no files.*--export-dir"):
        await call(client, "export_graph", {"format": "jsonl", "outputPath": "out.jsonl"})


async def test_read_only_unless_an_export_directory_is_configured(client: Client, tmp_path: Path) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["export_graph"].annotations.read_only_hint is True  # type: ignore[union-attr]
    settings = Settings(store=tmp_path / "other", export_dir=tmp_path / "exports")
    async with Client(create_server(settings)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert tools["export_graph"].annotations.read_only_hint is False  # type: ignore[union-attr]


async def test_files_are_written_only_inside_the_export_directory(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    (tmp_path / "secret").mkdir()
    (exports / "escape").symlink_to(tmp_path / "secret")
    async with Client(create_server(Settings(store=tmp_path / "store", export_dir=exports))) as c:
        await call(c, "create_entities", {"entities": [entity("Ada")]})
        written = await call(c, "export_graph", {"format": "markdown", "outputPath": "notes/graph.md"})
        assert Path(written["path"]) == (exports / "notes" / "graph.md").resolve()
        assert "Ada" in (exports / "notes" / "graph.md").read_text()
        for bad, reason in [(str(tmp_path / "abs.md"), "absolute"), ("../out.md", "outside"),
                            ("escape/leak.md", "outside"), (".", "directory itself")]:
            with pytest.raises(ToolFailed, match=reason):
                await call(c, "export_graph", {"format": "dot", "outputPath": bad})
    assert list((tmp_path / "secret").iterdir()) == [] and not (tmp_path / "abs.md").exists()
