"""Calling tools the way a test wants to: structured content back, or the error text."""

from __future__ import annotations

from typing import Any

from mcp import Client


class ToolFailed(Exception):
    """The tool answered with isError: true; the message is its text."""


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """The structured content of a successful call; raises ToolFailed with the error text."""
    result = await client.call_tool(tool, arguments or {})
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    if result.is_error:
        raise ToolFailed(text)
    return result.structured_content


async def text(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    """The text block of a successful call."""
    result = await client.call_tool(tool, arguments or {})
    assert not result.is_error, result.content
    return result.content[0].text  # type: ignore[union-attr]


def entity(name: str, entity_type: str = "person", *observations: str, **extra: Any) -> dict[str, Any]:
    """An entity as create_entities takes it."""
    return {"name": name, "entityType": entity_type, "observations": list(observations), **extra}


def relation(source: str, relation_type: str, target: str, **extra: Any) -> dict[str, Any]:
    """A relation as create_relations takes it."""
    return {"from": source, "to": target, "relationType": relation_type, **extra}


def names(graph: dict[str, Any]) -> list[str]:
    """The entity names of a graph answer, in order."""
    return [e["name"] for e in graph["entities"]]


def triples(graph: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The relations of a graph answer as (from, type, to), in order."""
    return [(r["from"], r["relationType"], r["to"]) for r in graph["relations"]]
