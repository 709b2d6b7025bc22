"""A stand-in embedder for the embedding machinery's tests: fast, deterministic, no model."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from chronograph.projections.errors import EmbeddingsUnavailableError


class Words:
    """A vector per word, a text is their mean; counts its calls and keeps what it embedded,
    and can be taken down (`down = True`) like a failing endpoint."""

    model = "test-words"

    def __init__(self) -> None:
        self.calls = 0
        self.texts: list[str] = []
        self.down = False

    def load(self) -> None:
        if self.down:
            raise EmbeddingsUnavailableError("the test endpoint is down")

    def embed(self, texts: Sequence[str]) -> Any:
        self.load()
        self.calls += 1
        self.texts.extend(texts)
        rows = []
        for text in texts:
            row = np.zeros(64, dtype=np.float32)
            for word in text.lower().replace(".", " ").replace("(", " ").replace(")", " ").split():
                row[hashlib.blake2b(word.encode(), digest_size=1).digest()[0] % 64] += 1
            rows.append(row / (np.linalg.norm(row) or 1.0))
        return np.array(rows, dtype=np.float32)
