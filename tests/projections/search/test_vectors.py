"""Stored vectors: parts kept before term weights still read; term scores; one model cleared alone."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
from chronograph.eventstore import LmdbEnv
from chronograph.projections.search.vectors import TERM_STEP, Parts, Vectors


def test_parts_stored_before_term_weights_read_as_parts_without_them() -> None:
    stored = msgspec.msgpack.encode([3, b"d" * 8, np.ones(4, dtype="<f2").tobytes()])  # three fields, as kept before
    parts = msgspec.msgpack.decode(stored, type=Parts)
    assert parts.version == 3 and parts.rows(4).shape == (1, 4)
    assert parts.term_rows() is None and parts.term_scores(np.ones(10, dtype=np.float32)) is None


def test_a_row_s_term_score_is_the_dot_product_of_the_two_weightings() -> None:
    rows = [(np.array([1, 4, 7], dtype="<u2"), np.array([50, 100, 25], dtype=np.uint8)),
            (np.array([], dtype="<u2"), np.array([], dtype=np.uint8)),
            (np.array([4], dtype="<u2"), np.array([10], dtype=np.uint8))]
    parts = Parts(1, b"d" * 24, b"", np.array([3, 0, 1], dtype="<u2").tobytes(),
                  b"".join(i.tobytes() for i, _ in rows), b"".join(w.tobytes() for _, w in rows))
    query = np.zeros(10, dtype=np.float32)
    query[[1, 4, 9]] = [2.0, 0.5, 3.0]
    expected = [sum(query[i] * w / TERM_STEP for i, w in zip(ids, weights, strict=True)) for ids, weights in rows]
    assert np.allclose(parts.term_scores(query), expected)
    assert [list(ids) for ids, _ in parts.term_rows() or []] == [[1, 4, 7], [], [4]]


def test_clearing_a_model_drops_its_vectors_parts_and_checkpoint_and_no_other_model_s(tmp_path: Path) -> None:
    env = LmdbEnv(tmp_path / "env", sync=False)
    try:
        mine, other = Vectors(env, "mine"), Vectors(env, "other")
        for vectors in (mine, other):
            env.write(lambda txn, v=vectors: v.store(txn, [("s1", "w", 1, np.ones(4), Parts(1, b"d" * 8, b"\0" * 8)),
                                                           ("s2", "w", 1, np.ones(4))], (), 7))
        env.write(mine.clear)
        with env.read() as txn:
            assert (mine.checkpoint(txn), mine.versions(txn, ["s1", "s2"]), mine.parts(txn, "s1")) == (0, {}, None)
            assert (other.checkpoint(txn), other.versions(txn, ["s1", "s2"])) == (7, {"s1": 1, "s2": 1})
            assert other.parts(txn, "s1") is not None
    finally:
        env.close()
