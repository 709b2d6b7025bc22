"""A word index's image, whole or built a part at a time: the same index either way."""

from __future__ import annotations

from chronograph.projections import EntityRecord, WorkspaceIndex
from chronograph.projections.search.wordimage import PartedImage, index_of, parts_of
from hypothesis import given, settings
from hypothesis import strategies as st

words = st.sampled_from(["ada", "lovelace", "engine", "note", "x1", "ünïcode", "the", "Zebra"])
sentence = st.lists(words, min_size=0, max_size=5).map(" ".join)


def record(i: int, seq: int, name: str, observations: list[str], valid: bool = False) -> EntityRecord:
    validity = {observations[0]: (1, None)} if valid and observations else {}
    return EntityRecord(f"e{i}", "w", name, "person", list(observations), {}, 1, 0, 0, seq, validity=validity)


def built_in_parts(records: list[EntityRecord], docs: int, position: int) -> tuple[bytes, list[bytes]]:
    image = PartedImage("w", b"12345678", docs=docs)
    parts = [part for r in records if (part := image.put(r)) is not None]
    return image.head(position), parts


def built_whole(records: list[EntityRecord], position: int) -> WorkspaceIndex:
    index = WorkspaceIndex("w")
    for r in records:
        index.put(r)
    index.position = position
    return index


@settings(max_examples=60, deadline=None)
@given(entities=st.lists(st.tuples(sentence, st.lists(sentence, max_size=3), st.booleans()), max_size=40),
       docs=st.integers(1, 9), shuffled=st.booleans())
def test_an_image_built_a_part_at_a_time_is_the_image_built_whole(entities, docs, shuffled) -> None:  # type: ignore[no-untyped-def]
    records = [record(i, i + 1, name, observations, valid) for i, (name, observations, valid) in enumerate(entities)]
    if shuffled:  # entities met out of creation order: the order is sorted, as the whole index sorts it
        records.reverse()
    head, parts = built_in_parts(records, docs, 77)
    assert parts_of(head) == (b"12345678", len(records) // docs)
    loaded = index_of(head, parts)
    whole = built_whole(records, 77)
    assert loaded is not None
    assert loaded.image() == whole.image()
    for query in ("ada", "note engine", "zebr", "x1"):
        assert loaded.containing(query) == whole.containing(query)
        assert loaded.ranked(query) == whole.ranked(query)
        assert loaded.fuzzy(query) == whole.fuzzy(query)
    assert loaded.volume() == whole.volume()


def test_an_image_with_a_part_missing_or_damaged_is_not_loaded() -> None:
    records = [record(i, i + 1, f"name{i}", [f"fact {i}"]) for i in range(10)]
    head, parts = built_in_parts(records, 3, 5)
    assert len(parts) == 3
    assert index_of(head, parts) is not None
    assert index_of(head, parts[:2]) is None  # one missing
    assert index_of(head, [parts[0], parts[2], parts[1]]) is None  # out of order
    damaged = bytearray(parts[1])
    damaged[len(damaged) // 2] ^= 1
    assert index_of(head, [parts[0], bytes(damaged), parts[2]]) is None


def test_a_loaded_index_takes_changes_like_one_built_whole() -> None:
    records = [record(i, i + 1, f"name{i}", [f"fact {i}"]) for i in range(10)]
    head, parts = built_in_parts(records, 4, 10)
    loaded, whole = index_of(head, parts), built_whole(records, 10)
    assert loaded is not None
    for index in (loaded, whole):
        index.put(record(3, 4, "renamed", ["fact three"]))
        index.remove("e5")
        index.put(record(10, 11, "new", ["fact ten"]))
    assert loaded.image() == whole.image()
    assert loaded.containing("fact") == whole.containing("fact")
