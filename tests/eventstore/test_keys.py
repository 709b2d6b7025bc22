"""Keys: long text is hashed into LMDB's limit, never rejected or truncated."""

from __future__ import annotations

from chronograph.eventstore.keys import MAX_KEY_BYTES, text_key


def test_short_text_is_kept_verbatim() -> None:
    assert text_key("entity-1") == b"=entity-1"


def test_text_longer_than_the_limit_is_hashed_to_a_fixed_width() -> None:
    key = text_key("x" * 10_000)
    assert key.startswith(b"#") and len(key) == 33 and len(key) <= MAX_KEY_BYTES


def test_long_texts_that_share_a_prefix_get_different_keys() -> None:
    assert text_key("a" * 600 + "1") != text_key("a" * 600 + "2")


def test_a_hashed_key_never_equals_a_verbatim_one() -> None:
    hashed = text_key("y" * 1000)
    assert text_key(hashed[1:].decode("latin-1")) != hashed
