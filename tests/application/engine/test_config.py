"""Where things live by default: the embedding model's optimised graph in a per-user cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from chronograph.application.engine.config import model_cache


def test_the_model_cache_is_per_user_or_where_the_environment_says(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("CHRONOGRAPH_MODEL_CACHE", str(tmp_path))
    assert model_cache() == tmp_path
    monkeypatch.setenv("CHRONOGRAPH_MODEL_CACHE", "off")
    assert model_cache() is None
    monkeypatch.delenv("CHRONOGRAPH_MODEL_CACHE")
    found = model_cache()
    assert found is not None and found.parts[-2:] == ("chronograph", "models")
