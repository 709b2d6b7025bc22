"""What is embedded of an entity: each observation on its own, and the entity as their mean.

Each observation is embedded as `<name> (<type>). <observation>` (cut at `MAX_TEXT`
characters; an entity without observations as `<name> (<type>).`), and the entity's
vector is the normalised mean of them. So every observation counts, however many there
are (one passage of them all was cut at the model's 256 word pieces: a session of a
dozen turns lost its last ones), an entity of one observation is embedded exactly as
before, and the vector of each observation is at hand to say which ones match a query.

When an entity changes, only the texts it did not have before are embedded: the others'
vectors are found by digest in the parts stored for its previous version. An entity that
gains one observation among three hundred costs one short text, not three hundred.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from chronograph.projections.errors import EmbeddingsUnavailableError
from chronograph.projections.records import EntityRecord
from chronograph.projections.search.embedder import MAX_TEXT, Embedder
from chronograph.projections.search.splade import LocalSplade, Weights
from chronograph.projections.search.vectors import DIGEST, Parts, load_numpy

__all__ = ["PASSAGES", "Embedded", "digest", "embed_records", "entity_texts", "observation_text", "term_texts"]

PASSAGES = "/observations"
"""Added to the model's id where the vectors are kept: vectors made this way never mix
with those of the former one-passage text (a store made before re-embeds)."""

Embedded = tuple[Any, Parts]
"""An entity's unit vector and the parts it was made of."""


def entity_texts(record: EntityRecord) -> list[str]:
    """The texts embedded for `record`: one per observation, each led by the name and type."""
    texts = [observation_text(record, o) for o in record.observations if o.strip()]
    return texts or [f"{record.name} ({record.entity_type})."[:MAX_TEXT]]


def term_texts(record: EntityRecord) -> list[str]:
    """The texts whose term weights are kept for `record`, one per text of `entity_texts`: each
    observation alone (an entity without observations: none, a blank text). Names and types are
    the embedding's: on bench_recall's turns (named by their ids) weights of `D3:7 (turn).
    <observation>` found less (fused recall@10 0.738 against 0.754), a candidate comes from the
    embedding, which has read the name already, and a name weighed only where nothing else is
    said ranked bare entities above the one a name query asks for."""
    return [o[:MAX_TEXT] for o in record.observations if o.strip()] or [""]


def observation_text(record: EntityRecord, observation: str) -> str:
    """What is embedded of one observation of `record`."""
    return f"{record.name} ({record.entity_type}). {observation}"[:MAX_TEXT]


def digest(text: str) -> bytes:
    """The short digest a text's vector is found by among an entity's parts."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST).digest()


def _check_vectors(embedder: Embedder, made: Any, count: int, stored: Any) -> None:
    """Refuse what an embedder made unless it is `count` rows of finite numbers of one width (the
    width of the vectors stored beside them, `stored`, if any): a vector of NaN kept as embedded
    would never be found and never be made again.

    Raises:
        EmbeddingsUnavailableError: Saying what was wrong (the texts are embedded again later).
    """
    np = load_numpy()
    matrix = np.asarray(made, dtype=np.float32)
    width = None if stored is None else len(stored)
    if matrix.ndim != 2 or len(matrix) != count or (width is not None and matrix.shape[1] != width):
        raise EmbeddingsUnavailableError(
            f"the embedding model {embedder.model} gave vectors of shape {tuple(matrix.shape)} for {count} texts"
            + ("" if width is None else f" beside stored ones {width} wide"))
    if not np.isfinite(matrix).all():
        raise EmbeddingsUnavailableError(f"the embedding model {embedder.model} gave vectors that are not numbers "
                                         "(NaN or infinite)")


def embed_records(embedder: Embedder, records: Sequence[EntityRecord],
                  known: Mapping[str, Sequence[Parts]] | None = None,
                  weigher: LocalSplade | None = None) -> list[Embedded]:
    """The vector and parts of each record, embedding only texts not in `known` (the stored
    parts of each record's stream, when it has some: under this id and the other, see
    `Semantic.former`); with `weigher`, the parts keep each text's term weights too, weighing
    only those `known` lacks (parts kept without weights give their vectors, and only the
    weights are made).

    Raises:
        EmbeddingsUnavailableError: If the embedder or the weigher cannot run.
    """
    known = known or {}
    texts = [entity_texts(r) for r in records]
    keys = [[digest(t) for t in ts] for ts in texts]
    vectors: dict[bytes, Any] = {}
    weights: dict[bytes, Weights] = {}
    for record, ks in zip(records, keys, strict=True):
        for parts in known.get(record.stream, ()):
            stored = parts.keys()
            if not set(ks) & set(stored):
                continue
            matrix = parts.rows(len(parts.data) // 2 // len(stored))
            rows = parts.term_rows()
            for i, key in enumerate(stored):
                vectors.setdefault(key, matrix[i])
                if rows is not None:
                    weights.setdefault(key, rows[i])
    embed: dict[bytes, str] = {}
    weigh: dict[bytes, str] = {}
    for record, ts, ks in zip(records, texts, keys, strict=True):
        for text, alone, key in zip(ts, term_texts(record), ks, strict=True):
            if key not in vectors:
                embed.setdefault(key, text)
            if weigher is not None and key not in weights:
                weigh.setdefault(key, alone)
    np = load_numpy()
    if embed:
        embedded = embedder.embed(list(embed.values()))
        _check_vectors(embedder, embedded, len(embed), next(iter(vectors.values()), None))
        vectors.update(zip(embed, embedded, strict=True))
    if weigh and weigher is not None:
        weights.update(zip(weigh, weigher.weigh(list(weigh.values())), strict=True))
    out: list[Embedded] = []
    for record, ks in zip(records, keys, strict=True):
        matrix = np.stack([vectors[k] for k in ks]).astype(np.float32)
        mean = matrix.mean(axis=0)
        vector = mean / max(float(np.linalg.norm(mean)), 1e-12)
        parts = Parts(record.version, b"".join(ks), np.asarray(matrix, dtype="<f2").tobytes())
        if weigher is not None:
            made = [weights[k] for k in ks]
            parts.term_counts = np.asarray([len(ids) for ids, _ in made], dtype="<u2").tobytes()
            parts.term_ids = b"".join(ids.tobytes() for ids, _ in made)
            parts.term_weights = b"".join(steps.tobytes() for _, steps in made)
        out.append((vector, parts))
    return out
