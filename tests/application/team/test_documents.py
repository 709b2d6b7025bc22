"""A team export's text written an entry at a time: the JSON `json.dumps` writes for the whole
document, YAML that reads back as that document, Markdown line for line; and an answer over
the reply limit refused before every entry is made."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chronograph.application import Memory, ReplyTooLargeError
from chronograph.application.engine.sink import Sink
from chronograph.application.team import transfer
from chronograph.application.team.documents import write_document
from hypothesis import given, settings
from hypothesis import strategies as st

text = st.text(st.sampled_from('ab :#"\\\n\u2028\u2029\x85\t-é日 '), max_size=8)
scalars = st.one_of(text, st.integers(-5, 5), st.booleans(), st.none(), st.floats(-2, 2, allow_nan=False))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                      max_leaves=8)
entry = st.fixed_dictionaries({
    "id": text, "scopeType": st.sampled_from(["global", "project"]), "title": text,
    "currentVersion": st.fixed_dictionaries({"versionNum": st.integers(1, 9)}, optional={
        "content": text, "description": text, "validUntil": text}),
}, optional={"scopeId": text, "tags": st.lists(text, max_size=2), "category": text, "extra": values})
documents = st.tuples(text, st.dictionaries(st.sampled_from(["tools", "guidelines", "knowledge"]),
                                            st.lists(entry, max_size=3), max_size=3),
                      st.lists(st.dictionaries(text, values, max_size=3), max_size=3))


def written(fmt: Any, at: str, entries: dict[str, list[dict[str, Any]]], relations: list[dict[str, Any]]) -> str:
    passed: list[str] = []
    sink = Sink(passed.append)
    write_document(fmt, sink, at, {plural: iter(items) for plural, items in entries.items()}, iter(relations))
    sink.close()
    return "".join(passed)


@settings(max_examples=200, deadline=None)
@given(documents)
def test_the_json_written_an_entry_at_a_time_is_the_document_dumped_whole(document: tuple[Any, ...]) -> None:
    at, entries, relations = document
    whole = {"version": "1.0", "exportedAt": at, "entries": entries, "relations": relations}
    assert written("json", at, entries, relations) == json.dumps(whole, indent=2, ensure_ascii=False)


@settings(max_examples=200, deadline=None)
@given(documents)
def test_the_yaml_written_an_entry_at_a_time_reads_back_as_the_document(document: tuple[Any, ...]) -> None:
    yaml = pytest.importorskip("yaml")
    at, entries, relations = document
    whole = {"version": "1.0", "exportedAt": at, "entries": entries, "relations": relations}
    assert yaml.safe_load(written("yaml", at, entries, relations)) == whole


def markdown_whole(at: str, entries: dict[str, list[dict[str, Any]]]) -> str:
    """The Markdown export as it was made before: every line, joined once."""
    lines = ["# Memory export", "", f"Exported at {at}.", ""]
    for plural, items in entries.items():
        lines += [f"## {plural.capitalize()}", ""]
        if not items:
            lines += ["_None._", ""]
        for e in items:
            lines += [f"### {e.get('name') or e.get('title')}", "", f"- id: `{e['id']}`",
                      f"- scope: {e['scopeType']}" + (f" `{e['scopeId']}`" if e.get("scopeId") else "")]
            lines += [f"- {key}: {e[key]}" for key in ("category", "priority") if e.get(key) is not None]
            if e.get("tags"):
                lines.append("- tags: " + ", ".join(e["tags"]))
            current = e["currentVersion"]
            lines.append(f"- version: {current['versionNum']}")
            for key in ("description", "content", "rationale", "constraints", "source", "validUntil"):
                if current.get(key) is not None:
                    lines += ["", f"**{key}**: {current[key]}"]
            lines.append("")
    return "\n".join(lines)


@settings(max_examples=200, deadline=None)
@given(documents)
def test_the_markdown_written_an_entry_at_a_time_is_its_lines_joined_whole(document: tuple[Any, ...]) -> None:
    at, entries, relations = document
    assert written("markdown", at, entries, relations) == markdown_whole(at, entries)


@pytest.mark.parametrize("fmt", ["json", "yaml", "markdown"])
def test_an_export_over_the_reply_limit_is_refused_before_every_entry_is_made(
        memory: Memory, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    doc = {"version": "1.0", "entries": {"knowledge": [
        {"id": f"kn_{i:06d}", "title": f"fact {i}", "scopeType": "global",
         "currentVersion": {"content": f"content {i} " + "y" * 400}} for i in range(2000)]}, "relations": []}
    memory.write("memory_import", {"action": "import", "content": json.dumps(doc)}, actor="t")
    made = [0]
    entry_out = transfer.entry_out

    def counted(*args: Any, **kwargs: Any) -> Any:
        made[0] += 1
        return entry_out(*args, **kwargs)

    monkeypatch.setattr(transfer, "entry_out", counted)
    whole = memory.read("memory_export", {"action": "export", "format": fmt}, reply_limit=None).reply["content"]
    assert made[0] == 2000 and "fact 1999" in whole  # type: ignore[attr-defined]
    made[0] = 0
    with pytest.raises(ReplyTooLargeError, match="at least") as refused:
        memory.read("memory_export", {"action": "export", "format": fmt}, reply_limit=200_000)
    assert made[0] < 500 and refused.value.size > 200_000
