"""Hostile tool arguments for fuzzing: shaped like the schemas, then bent out of shape."""

from __future__ import annotations

from typing import Any

from chronograph.application import PROFILES
from chronograph.server.jsonschema import json_schema
from hypothesis import strategies as st

TOOLS = {tool.name: tool for tool in PROFILES["full"].tools}
"""Every tool of every surface (ours where two share a name)."""
SCHEMAS = {name: json_schema(tool.arguments) for name, tool in TOOLS.items()}

nasty_text = st.one_of(
    st.text(max_size=20),
    st.just(""),
    st.just("   "),
    st.text(alphabet=st.characters(codec=None), max_size=30),  # surrogates, controls, anything
    st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfffy", "Caf\u00e9", "Cafe\u0301", "ﬁ", "İ", "Σσς",
                     "a" * 600, "é" * 1000, "🙂" * 300, "[1,2]", '{"a": 1}', "2026-11-21T00:00:00Z", "12"]),
    st.integers(min_value=1, max_value=6).map(lambda n: "x" * 10 ** n),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), nasty_text)


def deep(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(nasty_text, children, max_size=5),
    max_leaves=20,
) | st.integers(min_value=10, max_value=400).map(deep)


def value_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Something that fits `schema`, mostly; anything at all, sometimes."""
    kind = schema.get("type")
    if "enum" in schema:
        fitting: st.SearchStrategy[Any] = st.sampled_from(schema["enum"])
    elif "anyOf" in schema:
        fitting = st.one_of([value_for(option) for option in schema["anyOf"]])
    elif kind == "object" and "properties" in schema:
        fitting = objects(schema)
    elif kind == "object":
        fitting = st.dictionaries(nasty_text, json_values, max_size=4)
    elif kind == "array":
        fitting = st.one_of(
            st.lists(value_for(schema.get("items", {})), max_size=4),
            st.integers(min_value=1001, max_value=2000).map(lambda n: ["x"] * n),
        )
    elif kind == "string":
        fitting = nasty_text
    elif kind == "integer":
        fitting = st.integers(min_value=-5, max_value=2**64)
    elif kind == "number":
        fitting = st.floats(allow_nan=True)
    elif kind == "boolean":
        fitting = st.booleans()
    else:
        fitting = json_values
    return st.one_of(fitting, fitting, fitting, json_values)


def objects(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with the schema's properties (some dropped), and sometimes an unknown one."""
    properties = schema.get("properties", {})
    return st.fixed_dictionaries(
        {}, optional={name: value_for(sub) for name, sub in properties.items()}
    ).flatmap(lambda found: st.one_of(
        st.just(found),
        st.dictionaries(nasty_text, json_values, max_size=2).map(lambda extra: {**extra, **found}),
    ))


calls = st.sampled_from(sorted(TOOLS)).flatmap(lambda name: st.tuples(st.just(name), objects(SCHEMAS[name])))
"""(tool name, arguments) pairs."""
