"""Bad input gets one clear error naming the field, before anything is written."""

from __future__ import annotations

from typing import Any

import pytest
from chronograph.application.core.entities import CreateEntities
from chronograph.application.core.relations import CreateRelations
from chronograph.application.engine.arguments import Limits, parse, parse_checked
from chronograph.application.errors import InvalidArgumentsError
from chronograph.server.app import Runtime
from mcp import Client
from support.mcp import ToolFailed, call, entity

pytestmark = pytest.mark.anyio

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("create_entities", {"entities": [entity("")]}, "entities[0].name: expected `str` of length >= 1"),
    ("create_entities", {"entities": [entity("   ")]}, "entities[0].name: must not be blank"),
    ("create_entities", {"entities": [entity("x" * (Limits.NAME + 1))]}, f"length <= {Limits.NAME}"),
    ("create_entities", {"entities": [entity("a", "")]}, "entities[0].entityType"),
    ("create_entities", {"entities": [entity("a", "t", "o" * (Limits.OBSERVATION + 1))]},
     "entities[0].observations[0]"),
    ("create_entities", {"entities": [entity(f"n{i}") for i in range(Limits.ITEMS + 1)]},
     f"entities: expected `array` of length <= {Limits.ITEMS}"),
    ("create_entities", {"entities": [{"name": "a", "entityType": "t"}]},
     "missing required field `observations`"),
    ("create_entities", {"entities": [entity("a", entitytype="typo")]}, "unknown field `entitytype`"),
    ("create_entities", {"entities": [entity("a")], "workspace": ""}, "workspace"),
    ("create_entities", {"entities": [entity("a\x00b")]}, "entities[0].name: must not contain NUL"),
    ("create_entities", {"entities": [entity("bad\ud800")]}, "entities[0].name: contains an unpaired surrogate"),
    ("create_entities", {"entities": [entity("a", "t", "ok\udfff")]},
     "entities[0].observations[0]: contains an unpaired"),
    ("create_entities", {"entities": [entity("a", metadata={"k": "v" * Limits.METADATA_BYTES})]},
     "entities[0].metadata: is"),
    ("create_entities", {"entities": "not json"}, "entities: expected `array`, got `str`"),
    ("create_entities", {}, "missing required field `entities`"),
    ("add_observations", {"observations": [{"entityName": "a", "contents": [1]}]},
     "contents[0]: expected `str`, got `int`"),
    ("add_observations", {"observations": [{"entityName": "a", "contents": [], "expectedVersion": -1}]},
     "expectedVersion: expected `int` >= 0"),
    ("create_relations", {"relations": [{"from": "a", "to": "b", "relationType": "r", "confidence": 2}]},
     "confidence: expected `float` <= 1.0"),
    ("search_nodes", {"query": "q" * (Limits.QUERY + 1)}, f"query: expected `str` of length <= {Limits.QUERY}"),
    ("open_nodes", {"names": [None]}, "names[0]: expected `str`, got `null`"),
    ("read_graph", {"verbose": True}, "unknown field `verbose`"),
    ("delete_entities", {"entityNames": ["a"], "expectedVersions": {"b": 1}}, "not in entityNames"),
    ("update_entities", {"entities": [{"name": "a"}]}, "nothing to update"),
    ("read_graph", {"offset": 2**63}, "offset: 9223372036854775808 is outside the 64-bit integers"),
    ("read_graph", {"limit": 2**64}, "limit: 18446744073709551616 is outside the 64-bit integers"),
    ("create_entities", {"entities": [entity("a", expectedVersion=2**64)]},
     "entities[0].expectedVersion: 18446744073709551616 is outside"),
    ("create_entities", {"entities": [entity("a", metadata={"n": -(2**70)})]}, "entities[0].metadata.n: -1180591"),
    ("get_audit_log", {"afterPosition": 2**63}, "afterPosition: 9223372036854775808 is outside"),
    ("get_audit_log", {"order": "sideways"}, 'order: invalid enum value \'sideways\'; choose one of "newest"'),
    ("get_audit_log", {"eventTypes": ["entity_created", "nonsense"]}, "eventTypes[1]: 'nonsense' is not an event type"),
    ("export_graph", {"format": "pdf"}, 'choose one of "dot", "json", "jsonl", "markdown", "mermaid"'),
]


@pytest.mark.parametrize(("tool", "arguments", "expected"), CASES, ids=[c[2][:40] for c in CASES])
async def test_bad_arguments_get_a_clear_error_and_write_nothing(
    client: Client, runtime: Runtime, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ToolFailed) as failed:
        await call(client, tool, arguments)
    assert str(failed.value).startswith(f"Invalid arguments for tool {tool}: ")
    assert expected in str(failed.value)
    assert runtime.memory.log.head() == 0


async def test_unicode_names_in_other_normal_forms_are_different_names(client: Client) -> None:
    composed, decomposed = "Caf\u00e9", "Cafe\u0301"
    created = await call(client, "create_entities", {"entities": [entity(composed), entity(decomposed)]})
    assert [e["name"] for e in created["entities"]] == [composed, decomposed]


async def test_names_longer_than_an_lmdb_key_are_stored_and_found(client: Client) -> None:
    name = "é" * Limits.NAME  # 1024 bytes of UTF-8, twice LMDB's key limit
    await call(client, "create_entities", {"entities": [entity(name, "t", "long")]})
    assert [e["name"] for e in (await call(client, "open_nodes", {"names": [name]}))["entities"]] == [name]


def test_arguments_made_of_items_checked_before_parse_as_the_tool_parses_them() -> None:
    entities = {"entities": [entity(f"n{i}", "t", f"fact {i}", metadata={"i": i}) for i in range(50)], "workspace": "w"}
    relations = {"relations": [{"from": "a", "to": "b", "relationType": "r", "confidence": 0.5}]}
    assert parse_checked("import", entities, CreateEntities, "entities") == parse("import", entities, CreateEntities)
    assert parse_checked("import", relations, CreateRelations, "relations") == parse("import", relations,
                                                                                    CreateRelations)


def test_arguments_checked_before_are_still_held_to_the_tool_s_types_and_limits() -> None:
    with pytest.raises(InvalidArgumentsError, match=f"entities: expected `array` of length <= {Limits.ITEMS}"):
        parse_checked("import", {"entities": [entity(f"n{i}") for i in range(Limits.ITEMS + 1)]}, CreateEntities,
                      "entities")
    with pytest.raises(InvalidArgumentsError, match=r"entities\[0\].observations\[0\]: expected `str`"):
        parse_checked("import", {"entities": [{"name": "a", "entityType": "t", "observations": [1]}]}, CreateEntities,
                      "entities")


@pytest.mark.parametrize(("workspace", "expected"), [("   ", "workspace: must not be blank"),
                                                     ("w\x00x", "workspace: must not contain NUL"),
                                                     ("w\ud800", "workspace: contains an unpaired surrogate")])
def test_what_was_not_checked_before_is_checked_in_full(workspace: str, expected: str) -> None:
    with pytest.raises(InvalidArgumentsError, match=expected):
        parse_checked("import", {"entities": [entity("a")], "workspace": workspace}, CreateEntities, "entities")


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_metadata_holding_a_number_json_cannot_say_is_refused_wherever_it_nests(number: float) -> None:
    for metadata in ({"n": number}, {"deep": [1, {"n": number}]}):
        with pytest.raises(InvalidArgumentsError, match=r"entities\[0\].metadata: holds a number that is not finite"):
            parse("create_entities", {"entities": [entity("a", metadata=metadata)]}, CreateEntities)
