"""The word index: substring candidates that never miss, BM25, fuzzy words, images."""

from __future__ import annotations

from chronograph.projections import EntityRecord, WorkspaceIndex, matches
from chronograph.projections.search.terms import entity_terms, folded, terms
from hypothesis import given, settings
from hypothesis import strategies as st

ALPHABET = "abcAB çÇİiıΣσςß-1_\n\u00a0"
text = st.text(alphabet=ALPHABET, max_size=8)


def record(stream: str, seq: int, name: str, entity_type: str = "t", observations=(), version: int = 1) -> EntityRecord:  # type: ignore[no-untyped-def]
    return EntityRecord(stream, "w", name, entity_type, tuple(observations), {}, version, 0, 0, seq)


def substring(index: WorkspaceIndex, records: dict[str, EntityRecord], query: str) -> list[str]:
    """What search_nodes does: the index's candidates, checked against the texts."""
    candidates = index.containing(query)
    ordered = sorted(records.values(), key=lambda r: r.seq) if candidates is None else [records[s] for s in candidates]
    return [r.stream for r in ordered if matches(r, query)]


def scan(records: dict[str, EntityRecord], query: str) -> list[str]:
    return [r.stream for r in sorted(records.values(), key=lambda r: r.seq) if matches(r, query)]


@settings(max_examples=300, deadline=None)
@given(name=text, entity_type=text, observations=st.lists(text, max_size=4))
def test_an_entity_s_terms_in_one_pass_are_those_of_its_texts_one_by_one(  # type: ignore[no-untyped-def]
        name, entity_type, observations) -> None:
    entity = record("e", 1, name, entity_type, observations)
    assert entity_terms(entity) == [term for piece in folded(entity) for term in terms(piece)]


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
            live[stream] = record(stream, previous.seq if previous else seq, name, entity_type, observations, seq)
            index.put(live[stream])
    for query in queries:
        assert substring(index, live, query) == scan(live, query)
        if terms(query) == [query.lower()]:  # one run of word characters: the candidates are exact
            assert index.containing(query) == scan(live, query)
    reloaded = WorkspaceIndex.from_image(index.image())
    assert reloaded is not None
    for query in queries:
        assert substring(reloaded, live, query) == scan(live, query)


def test_an_empty_query_matches_every_entity_like_the_official_server() -> None:
    index = WorkspaceIndex("w")
    live = {"a": record("a", 1, "Ada"), "b": record("b", 2, "Bob")}
    for r in live.values():
        index.put(r)
    assert index.containing("") is None  # no word to look up: every entity is a candidate
    assert substring(index, live, "") == ["a", "b"]


def test_search_is_case_insensitive_on_name_type_and_observations() -> None:
    index = WorkspaceIndex("w")
    live = {"a": record("a", 1, "Ada Lovelace", "Person", ["wrote the first PROGRAM"])}
    index.put(live["a"])
    assert index.containing("ogra") == ["a"]  # inside a word, not only at its start
    found = [substring(index, live, q) for q in ("lovelace", "PERSON", "program")]
    assert found == [["a"], ["a"], ["a"]]
    assert substring(index, live, "lace person") == []  # never across fields


def test_heavy_churn_compacts_the_postings_without_changing_answers() -> None:
    index = WorkspaceIndex("w")
    live: dict[str, EntityRecord] = {}
    for round_ in range(300):
        for i in range(20):
            live[f"e{i}"] = record(f"e{i}", i + 1, f"name {i}", "t", [f"round {round_} word{i}x"], round_ + 1)
            index.put(live[f"e{i}"])
    assert substring(index, live, "round 299 word7x") == ["e7"]
    assert substring(index, live, "round 298") == []
    assert len(index._streams) < 4096  # 6,000 versions, the dead dropped once they passed 4,096
    assert sum(len(p) for p in index._postings) < 4 * 4096
    index.image()  # an image compacts whatever the count
    assert len(index._streams) == len(index) == 20


def test_ranked_search_prefers_rarer_words_and_more_mentions() -> None:
    index = WorkspaceIndex("w")
    index.put(record("a", 1, "Ada", "person", ["likes tea", "tea every morning", "tea"]))
    index.put(record("b", 2, "Bob", "person", ["likes tea once"]))
    index.put(record("c", 3, "Cy", "person", ["likes coffee", "teapot collector"]))
    ranked = index.ranked("tea")
    assert [stream for stream, _ in ranked] == ["a", "b"]
    assert ranked[0][1] > ranked[1][1] > 0
    assert [s for s, _ in index.ranked("likes coffee")][0] == "c"


def test_fuzzy_search_forgives_a_swap_or_a_typo_and_ranks_the_exact_word_first() -> None:
    index = WorkspaceIndex("w")
    index.put(record("a", 1, "Python", "language", ["dynamic typing"]))
    index.put(record("b", 2, "Pythons", "snake"))
    index.put(record("c", 3, "Go", "language"))
    assert [s for s, _ in index.fuzzy("pyhton")] == ["a"]  # a swap is one edit
    assert [s for s, _ in index.fuzzy("pythons")] == ["b", "a"]  # the exact word first
    assert [s for s, _ in index.fuzzy("dinamic tipyng")] == ["a"]
    assert index.fuzzy("og") == []  # three letters or fewer must be exact
    assert index.fuzzy("pytonnss") == []  # eight letters forgive two edits, not three


def test_an_image_holds_the_whole_index_and_a_damaged_one_is_refused() -> None:
    index = WorkspaceIndex("w")
    index.position = 42
    live = {f"e{i}": record(f"e{i}", i, f"name{i}", "t", [f"fact {i}"]) for i in range(1, 50)}
    for r in live.values():
        index.put(r)
    index.remove("e7")
    del live["e7"]
    image = index.image()
    loaded = WorkspaceIndex.from_image(image)
    assert loaded is not None
    assert (loaded.workspace, loaded.position, len(loaded)) == ("w", 42, 48)
    assert loaded.ranked("fact 12") == index.ranked("fact 12")
    assert loaded.fuzzy("nam12") == index.fuzzy("nam12")
    assert substring(loaded, live, "name1") == substring(index, live, "name1")
    assert WorkspaceIndex.from_image(image[: len(image) // 2]) is None
    assert WorkspaceIndex.from_image(b"not an image") is None


# --- counting, paging and weighing without listing every match ------------------------------

WORDS = st.sampled_from(["tea", "teapot", "cat", "cathode", "dog", "x1", "common"])
ENTITY = st.tuples(st.lists(WORDS, min_size=1, max_size=3).map(" ".join), st.sampled_from(["t", "person"]),
                   st.lists(st.lists(WORDS, max_size=4).map(" ".join), max_size=3))


def apply(index: WorkspaceIndex, live: dict[str, EntityRecord], changes, *, shuffle: int = 0) -> None:  # type: ignore[no-untyped-def]
    """Apply (slot, content) changes, as the fold would: a new stream's seq is its first change's."""
    for step, (slot, content) in enumerate(changes, start=1):
        stream = f"e{slot}"
        if content is None:
            index.remove(stream)
            live.pop(stream, None)
            continue
        name, entity_type, observations = content
        previous = live.get(stream)
        live[stream] = record(stream, previous.seq if previous else step, name, entity_type, observations,
                              (previous.version + 1) if previous else 1)
        index.put(live[stream])


def in_order(live: dict[str, EntityRecord]) -> list[EntityRecord]:
    return sorted(live.values(), key=lambda r: r.seq)


CHANGES = st.lists(st.tuples(st.integers(0, 12), st.none() | ENTITY), max_size=60)
PATHS = st.sampled_from([(512, 64, 1024), (1, 64, 0), (1, 0, 0), (1, 10**9, 0), (512, 64, 10**9), (1, 64, 2)])
"""(DENSE, SPARSE, FEW): bitmaps built each time or kept; pages sorted or found by walking the order;
a rare run's documents listed as a set."""


@settings(max_examples=200, deadline=None)
@given(changes=CHANGES, query=st.lists(WORDS, min_size=1, max_size=2).map(" ".join), page=st.integers(1, 5),
       paths=PATHS, reload=st.booleans())
def test_a_selection_counts_exactly_and_its_pages_make_the_whole_answer_in_creation_order(
        changes, query, page, paths, reload) -> None:  # type: ignore[no-untyped-def]
    import chronograph.projections.search.selection as chosen
    import chronograph.projections.search.wordindex as module

    saved = module.DENSE, chosen.SPARSE, module.FEW
    module.DENSE, chosen.SPARSE, module.FEW = paths
    try:
        index = WorkspaceIndex("w")
        live: dict[str, EntityRecord] = {}
        apply(index, live, changes)
        if reload:
            index = WorkspaceIndex.from_image(index.image())  # type: ignore[assignment]
            assert index is not None
            apply(index, live, changes[: len(changes) // 2])  # and changed again after loading
        expected = [r.stream for r in in_order(live) if matches(r, query)]
        selection = index.select(query)
        assert selection is not None
        if " " in query:  # several runs: the candidates hold every one of them, the phrase is checked after
            candidates = selection.streams()
            assert [s for s in candidates if matches(live[s], query)] == expected
            words = query.split()
            assert candidates == [r.stream for r in in_order(live)
                                  if all(any(w in t for t in terms(" ".join(folded(r)))) for w in words)]
            return
        assert selection.count == len(expected)
        pages, offset = [], 0
        while offset <= len(expected):
            pages += selection.streams(offset, page)
            offset += page
        assert pages == expected == selection.streams()
    finally:
        module.DENSE, chosen.SPARSE, module.FEW = saved


def test_a_catch_up_in_any_order_keeps_pages_in_creation_order() -> None:
    index = WorkspaceIndex("w")
    for seq in (5, 3, 9, 1):  # a new entity older than the newest: the order is rebuilt when next needed
        index.put(record(f"e{seq}", seq, "common", "t"))
    selection = index.select("common")
    assert selection is not None and selection.streams(0, 2) == ["e1", "e3"] and selection.streams(2) == ["e5", "e9"]


@settings(max_examples=150, deadline=None)
@given(changes=CHANGES, query=st.lists(WORDS, min_size=1, max_size=3).map(" ".join), depth=st.integers(1, 8),
       fuzzy=st.booleans())
def test_a_ranking_keeps_the_best_a_full_sort_keeps_and_counts_every_match(changes, query, depth, fuzzy) -> None:  # type: ignore[no-untyped-def]
    index = WorkspaceIndex("w")
    live: dict[str, EntityRecord] = {}
    apply(index, live, changes)
    whole = index.ranking(query, fuzzy=fuzzy)
    best = index.ranking(query, fuzzy=fuzzy, depth=depth)
    assert best.hits == whole.hits[:depth]
    assert best.total == whole.total == len(whole.hits)
    if not fuzzy:  # every entity holding a word of the query, counted
        words = set(query.split())
        assert best.total == sum(1 for r in live.values() if words & set(terms(" ".join([r.name, *r.observations]))))


@settings(max_examples=100, deadline=None)
@given(changes=CHANGES, reload=st.booleans())
def test_the_index_knows_what_every_answer_of_its_entities_must_carry(changes, reload) -> None:  # type: ignore[no-untyped-def]
    index = WorkspaceIndex("w")
    live: dict[str, EntityRecord] = {}
    apply(index, live, changes)
    if reload:
        index = WorkspaceIndex.from_image(index.image())  # type: ignore[assignment]
        assert index is not None
    heads = sum(len(r.name) + len(r.entity_type) for r in live.values())
    chars = heads + sum(len(o) for r in live.values() for o in r.observations)
    notes = sum(len(r.observations) for r in live.values())
    assert index.volume() == (len(live), heads, chars, notes)
    everything = index.everything()
    assert everything.weigh(1, 0, 0, heads=True, ceiling=10**9) == len(live)
    weighed = everything.weigh(100, 2, 7, heads=False, ceiling=10**9, offset=1)  # a slice is summed
    later = in_order(live)[1:]
    assert weighed == sum(100 + 2 * (len(r.name) + len(r.entity_type) + sum(map(len, r.observations)))
                          + 7 * len(r.observations) for r in later)


def test_observations_with_a_valid_time_weigh_nothing_they_may_be_hidden() -> None:
    index = WorkspaceIndex("w")
    index.put(EntityRecord("a", "w", "Ada", "p", ["kept", "ended"], {}, 1, 0, 0, 1, {"ended": (None, 5)}))
    assert index.volume() == (1, 4, 8, 1)
