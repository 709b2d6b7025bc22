"""Search: the substring index answers exactly what a full scan would, and ranks words."""

from __future__ import annotations

from chronograph.eventstore import NO_STREAM, EntityCreated, EntityDeleted, LmdbLog, ObservationsAdded, StreamWrite
from chronograph.projections import EntityRecord, Views, WorkspaceIndex, matches, new_entity_stream
from hypothesis import given, settings
from hypothesis import strategies as st

ALPHABET = "abcAB çÇİiıΣσς-1\n\u00a0"
text = st.text(alphabet=ALPHABET, max_size=8)


def record(stream: str, seq: int, name: str, entity_type: str = "t", observations=()) -> EntityRecord:  # type: ignore[no-untyped-def]
    return EntityRecord(stream, "w", name, entity_type, tuple(observations), {}, 1, 0, 0, seq)


def scan(records: dict[str, EntityRecord], query: str) -> list[str]:
    return [r.stream for r in sorted(records.values(), key=lambda r: r.seq) if matches(r, query)]


@settings(max_examples=150, deadline=None)
@given(
    changes=st.lists(st.tuples(st.integers(0, 6), st.none() | st.tuples(text, text, st.lists(text, max_size=3))),
                     max_size=40),
    queries=st.lists(text, min_size=1, max_size=6),
)
def test_substring_search_equals_a_full_scan_through_any_changes(changes, queries) -> None:  # type: ignore[no-untyped-def]
    index = WorkspaceIndex("w")
    live: dict[str, EntityRecord] = {}
    for seq, (slot, content) in enumerate(changes, start=1):
        stream = f"e{slot}"
        if content is None:
            index.remove(stream)
            live.pop(stream, None)
        else:
            name, entity_type, observations = content
            previous = live.get(stream)
            live[stream] = record(stream, previous.seq if previous else seq, name, entity_type, observations)
            index.put(live[stream])
    for query in queries:
        assert index.substring(query) == scan(live, query)


def test_an_empty_query_matches_every_entity_like_the_official_server() -> None:
    index = WorkspaceIndex("w")
    index.put(record("a", 1, "Ada"))
    index.put(record("b", 2, "Bob"))
    assert index.substring("") == ["a", "b"]


def test_search_is_case_insensitive_on_name_type_and_observations() -> None:
    index = WorkspaceIndex("w")
    index.put(record("a", 1, "Ada Lovelace", "Person", ["wrote the first PROGRAM"]))
    assert index.substring("lovelace") == index.substring("PERSON") == index.substring("program") == ["a"]
    assert index.substring("lace person") == []  # never across fields


def test_heavy_churn_compacts_the_postings_without_changing_answers() -> None:
    index = WorkspaceIndex("w")
    for round_ in range(60):
        for i in range(20):
            index.put(record(f"e{i}", i + 1, f"name {i}", "t", [f"round {round_} word{i}x"]))
    assert index.substring("round 59 word7x") == ["e7"]
    assert index.substring("round 58") == []
    assert index._size < 20 * 60 * 3  # compaction dropped the stale postings


def test_ranked_search_prefers_rarer_words_and_more_mentions() -> None:
    index = WorkspaceIndex("w")
    index.put(record("a", 1, "Ada", "person", ["likes tea", "tea every morning", "tea"]))
    index.put(record("b", 2, "Bob", "person", ["likes tea once"]))
    index.put(record("c", 3, "Cy", "person", ["likes coffee", "teapot collector"]))
    ranked = index.ranked("tea", limit=10)
    assert [stream for stream, _ in ranked] == ["a", "b"]
    assert ranked[0][1] > ranked[1][1] > 0
    assert [s for s, _ in index.ranked("likes coffee", limit=1)] == ["c"]


def test_the_views_search_index_follows_writes(store: LmdbLog) -> None:
    views = Views(store)
    stream = new_entity_stream()

    def write(events, expected=None):  # type: ignore[no-untyped-def]
        writes = [StreamWrite(stream, events, expected if expected is not None else "any")]
        views.transact(lambda tx, state: tx.append(writes, actor="t"))

    write([EntityCreated(workspace="w", name="Ada", entity_type="person")], NO_STREAM)
    with views.snapshot() as snapshot:
        assert views.search_index(snapshot, "w").substring("ada") == [stream]
    write([ObservationsAdded(observations=("Zebra keeper",))])
    with views.snapshot() as snapshot:
        assert views.search_index(snapshot, "w").substring("zebra") == [stream]
        assert views.search_index(snapshot, "other").substring("zebra") == []
    write([EntityDeleted()])
    with views.snapshot() as snapshot:
        assert views.search_index(snapshot, "w").substring("ada") == []
