"""An embedder behind an OpenAI-compatible `/embeddings` endpoint: Ollama, vLLM, a hosted API.

The standard library's HTTP client is enough for one POST. An endpoint that is down,
slow or answers nonsense raises `EmbeddingsUnavailableError`; the embedding projector
retries later, and writes never wait for it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from chronograph.projections.errors import EmbeddingsUnavailableError
from chronograph.projections.search.vectors import load_numpy

__all__ = ["Endpoint"]

TIMEOUT = 30.0
BATCH = 64


class Endpoint:
    """The model `name` at the endpoint `url` (its base, or the full .../embeddings address)."""

    def __init__(self, url: str, name: str, *, api_key: str | None = None, timeout: float = TIMEOUT) -> None:
        self.url = url if url.rstrip("/").endswith("/embeddings") else url.rstrip("/") + "/embeddings"
        self.model = name
        self._api_key = api_key
        self._timeout = timeout

    def load(self) -> None:
        """Nothing to load: the endpoint is asked on each embedding."""

    def embed(self, texts: Sequence[str]) -> Any:
        """One unit vector per text, as the endpoint computes it."""
        try:
            np = load_numpy()
        except ImportError:
            raise EmbeddingsUnavailableError(
                "semantic search needs the semantic extra (numpy is not installed): "
                "pip install 'chronograph[semantic]'") from None
        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            rows.extend(self._post(list(texts[start:start + BATCH])))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = np.asarray(rows, dtype=np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def _post(self, batch: list[str]) -> list[list[float]]:
        body = json.dumps({"model": self.model, "input": batch}).encode()
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, body, headers, method="POST")  # noqa: S310 (the user's URL)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310
                answer = json.load(response)
            data = sorted(answer["data"], key=lambda item: item["index"])
            rows = [[float(x) for x in item["embedding"]] for item in data]
        except urllib.error.HTTPError as error:
            raise EmbeddingsUnavailableError(
                f"the embeddings endpoint {self.url} refused the request: HTTP {error.code} {error.reason}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise EmbeddingsUnavailableError(f"the embeddings endpoint {self.url} does not answer: {reason}") from None
        except (ValueError, KeyError, TypeError) as error:
            raise EmbeddingsUnavailableError(
                f"the embeddings endpoint {self.url} answered something else than embeddings ({error!r})") from None
        if len(rows) != len(batch) or len({len(row) for row in rows}) > 1 or not rows[0]:
            raise EmbeddingsUnavailableError(
                f"the embeddings endpoint {self.url} answered {len(rows)} vectors of uneven or no size "
                f"for {len(batch)} texts")
        return rows
