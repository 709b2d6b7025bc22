"""The published schemas: compact, and still every field a handler accepts, checked by a real
JSON Schema validator against calls that use every documented field."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest
from chronograph.application import PROFILES
from chronograph.application.engine.arguments import Args, parse
from chronograph.server.app import create_server
from chronograph.server.config import Settings
from chronograph.server.jsonschema import json_schema
from jsonschema import Draft202012Validator
from mcp import Client
from support.examples import example, missing_fields

pytestmark = pytest.mark.anyio


async def published(tmp_path: Path, profile: str) -> dict[str, dict[str, Any]]:
    """tool name -> the input schema a client sees in tools/list."""
    async with Client(create_server(Settings(store=tmp_path / "store", embeddings="off", profile=profile))) as client:
        return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}


class Limits(msgspec.Struct, kw_only=True):
    minimum: Annotated[int, msgspec.Meta(ge=0)] = 0
    maximum: int = 9


class Keywords(Args, kw_only=True):
    title: Annotated[str, msgspec.Meta(min_length=1, max_length=20)]
    max_length: int
    format: str = "json"
    default: str = "x"
    description: Annotated[str, msgspec.Meta(description="Said once")] = ""
    limits: Limits = msgspec.field(default_factory=Limits)
    named: dict[str, Annotated[str, msgspec.Meta(max_length=5)]] = {}


def test_fields_named_like_json_schema_keywords_are_published_and_only_keywords_dropped() -> None:
    schema = json_schema(Keywords)
    assert schema["properties"]["title"] == {"type": "string"}  # the field stays; its maxLength goes
    assert schema["required"] == ["title", "maxLength"]
    assert set(schema["properties"]) == {"title", "maxLength", "format", "default", "description", "limits", "named"}
    assert schema["properties"]["limits"]["properties"] == {
        "minimum": {"type": "integer", "default": 0}, "maximum": {"type": "integer", "default": 9}}
    assert schema["properties"]["description"] == {"type": "string", "default": "", "description": "Said once"}
    assert schema["properties"]["named"]["additionalProperties"] == {"type": "string"}
    assert "title" not in schema and "propertyNames" not in schema["properties"]["named"]


@pytest.mark.parametrize("profile", PROFILES)
async def test_every_field_each_handler_accepts_is_in_its_published_schema(tmp_path: Path, profile: str) -> None:
    schemas = await published(tmp_path, profile)
    for tool in PROFILES[profile].tools:
        assert missing_fields(tool.arguments, schemas[tool.name]) == [], tool.name


@pytest.mark.parametrize("profile", PROFILES)
async def test_a_call_with_every_documented_field_validates_against_the_schema_and_parses(
    tmp_path: Path, profile: str
) -> None:
    schemas = await published(tmp_path, profile)
    for tool in PROFILES[profile].tools:
        schema = schemas[tool.name]
        Draft202012Validator.check_schema(schema)
        arguments = example(schema)
        assert set(arguments) == set(schema["properties"]), tool.name
        Draft202012Validator(schema).validate(arguments)
        parse(tool.name, arguments, tool.arguments)  # the handler takes what the schema documents


async def test_include_metadata_and_summary_mode_are_published_by_type_and_explained_once(tmp_path: Path) -> None:
    schemas = await published(tmp_path, "chronograph")
    for tool in ("read_graph", "open_nodes", "search_nodes", "get_related_entities"):
        assert schemas[tool]["properties"]["includeMetadata"] == {"type": "boolean"}, tool
    for tool in ("read_graph", "open_nodes", "search_nodes"):
        assert schemas[tool]["properties"]["summaryMode"] == {"type": "boolean"}, tool
    instructions = PROFILES["chronograph"].instructions
    assert "`includeMetadata`" in instructions and "`summaryMode`" in instructions
