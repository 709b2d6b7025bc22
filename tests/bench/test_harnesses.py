"""Short runs of the crash and concurrency harnesses (the long ones: tools/reliability_report.py)."""

from __future__ import annotations

import pytest
from concurrency_harness import main as concurrency_main
from crash_harness import main as crash_main

pytestmark = pytest.mark.wire  # a server in a subprocess: skip locally with -m 'not wire'


def test_five_sigkills_under_write_load_lose_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert crash_main(["--kills", "5", "--seed", "7"]) == 0  # 1 if anything was lost or partial
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split() == ["kills", "5"] for line in lines)
    assert any(line.split()[:5] == ["acknowledged", "writes", "lost", "0", "0"] for line in lines)


def test_four_servers_racing_on_shared_entities_lose_nothing_and_have_one_winner_per_race(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert concurrency_main(["--servers", "4", "--writes", "60", "--races", "6"]) == 0
    assert "6 of 6" in capsys.readouterr().out


def test_the_retrieval_benchmark_finds_paraphrases_by_meaning_and_typos_by_spelling(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from bench_retrieval import main as retrieval_main

    assert retrieval_main(["--distractors", "200", "--json", str(tmp_path / "r.json")]) == 0
    results = json.loads((tmp_path / "r.json").read_text())["results"]
    assert results["paraphrase"]["ranked"]["recall_at_3"] <= 0.1  # no shared words to rank by
    assert results["paraphrase"]["semantic"]["recall_at_3"] >= 0.9
    assert results["paraphrase"]["hybrid"]["recall_at_3"] >= 0.8
    assert results["misspelt"]["fuzzy"]["recall_at_3"] >= 0.9
    assert all(mode["recall_at_3"] == 1.0 for name, mode in results["exact"].items() if name != "semantic")
