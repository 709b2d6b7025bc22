"""The word index of one workspace: postings that answer substring, BM25 and fuzzy search.

An entity's texts (name, type, observations), lowercased, are split into terms: the
runs of word characters (`\\w+`). Each term of the vocabulary has a posting list: the
documents holding it, each with how often (capped at 15, where BM25 has long saturated).

- **substring** (the official rule: the query inside one of the texts) needs a superset
  of the answer, which a caller then checks against the texts. Every run of word
  characters in the query lies inside one term of any text containing the query, so the
  documents holding, for each such run, a term containing it are that superset. The
  terms containing a run are found by one `str.find` sweep over the vocabulary joined
  into one string: C speed, no n-gram tables to build, keep or load.
- **ranked** scores the documents holding the query's terms by BM25.
- **fuzzy** does the same over the vocabulary terms within a small edit distance of each
  query term (rapidfuzz, optimal string alignment: a swap of two letters is one edit),
  each weighted by its closeness, so an exact match ranks above a typo. Terms with a
  digit are matched exactly: an id one digit off is another id.

A document is one version of an entity: a changed entity gets a new document and its
old one dies, so postings never need editing, only filtering by liveness, and are
compacted once the dead outnumber the living. Nothing here holds the texts themselves:
the entity views have them.

The whole index encodes to one `image` and decodes from it in milliseconds, so a new
process loads it from the store instead of building it from every entity.
"""

from __future__ import annotations

import math
import re
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator

import msgspec
from chronograph.projections.records import EntityRecord
from chronograph.projections.sealed import seal_array, sound

__all__ = ["IMAGE_FORMAT", "STOPWORDS", "WorkspaceIndex", "folded", "matches", "query_terms", "terms"]

IMAGE_FORMAT = 2
"""2: sealed with a checksum (see `projections.sealed`); a damaged image is rebuilt."""
TERM = re.compile(r"\w+")
K1, B = 1.2, 0.75
"""BM25's term-frequency saturation and length normalisation."""
TF_BITS = 4
TF_MAX = (1 << TF_BITS) - 1
MAX_DOCS = 1 << (32 - TF_BITS)
"""A posting is `doc << TF_BITS | tf` in 32 bits."""
_DIGIT = re.compile(r"\d")
SEP = "\x00"
"""Separates the terms of the joined vocabulary (no term holds it: it is not a word character)."""


def folded(record: EntityRecord) -> tuple[str, ...]:
    """The searchable texts of an entity, lowercased: name, type, then observations."""
    return (record.name.lower(), record.entity_type.lower(), *(o.lower() for o in record.observations))


def matches(record: EntityRecord, query: str) -> bool:
    """The official server's rule: the query, case-insensitively, in name, type or an observation."""
    needle = query.lower()
    return any(needle in text for text in folded(record))


def terms(text: str) -> list[str]:
    """The terms of `text`, lowercased, in order."""
    return TERM.findall(text.lower())


STOPWORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below "
    "between both but by can could did do does doing down during each few for from further had has have "
    "having he her here hers him his how i if in into is it its itself just me more most my no nor not "
    "of off on once only or other our ours out over own same she should so some such than that the their "
    "theirs them then there these they this those through to too under until up very was we were what "
    "when where which while who whom why will with would you your yours".split()
)
"""English words too common to rank by: a ranked or fuzzy query leaves them out unless it
has no other word (as Lucene's English analyzer does). Substring search keeps them."""


def query_terms(query: str) -> list[str]:
    """The distinct terms of a ranked or fuzzy query, in order, stopwords left out when others remain."""
    found = list(dict.fromkeys(terms(query)))
    content = [term for term in found if term not in STOPWORDS]
    return content or found


def edits_allowed(term: str) -> int:
    """How many edits fuzzy search forgives in `term`: none up to 3 letters, 1 up to 7, else 2;
    none in a term with a digit (an id, a date or a version one digit off is another one)."""
    if len(term) <= 3 or _DIGIT.search(term):
        return 0
    return 1 if len(term) <= 7 else 2


class _Image(msgspec.Struct, array_like=True, gc=False):
    format: int
    workspace: str
    position: int
    streams: list[str]
    alive: bytes
    versions: bytes
    seqs: bytes
    lengths: bytes
    total_length: int
    vocabulary: str
    postings: list[bytes]


_decoder = msgspec.msgpack.Decoder(_Image)
_encoder = msgspec.msgpack.Encoder()


class WorkspaceIndex:
    """Postings of one workspace's entities, current at `position`."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.position = 0
        """The log position the index reflects (kept by its owner)."""
        self._docs: dict[str, int] = {}
        """stream -> its live document"""
        self._streams: list[str] = []
        self._alive = bytearray()
        self._versions = array("Q")
        self._seqs = array("Q")
        self._lengths = array("I")
        self._vocabulary: list[str] = []
        self._ids: dict[str, int] = {}
        self._postings: list[array[int]] = []
        self._total_length = 0
        self._joined = ""
        self._offsets = array("I")
        self._by_length: dict[int, tuple[list[str], list[int]]] = {}
        self._bucketed = 0

    def __len__(self) -> int:
        return len(self._docs)

    def knows(self, stream: str) -> bool:
        """Whether `stream` is a live entity of this index."""
        return stream in self._docs

    # --- changes --------------------------------------------------------------------------

    def put(self, record: EntityRecord) -> None:
        """Index `record`, replacing what was indexed for its stream (unless it is that version)."""
        doc = self._docs.get(record.stream)
        if doc is not None:
            if self._versions[doc] == record.version:
                return
            self._kill(doc)
        if len(self._streams) >= MAX_DOCS:
            self._compact()
        counts = Counter(term for text in folded(record) for term in TERM.findall(text))
        doc = self._docs[record.stream] = len(self._streams)
        self._streams.append(record.stream)
        self._alive.append(1)
        self._versions.append(record.version)
        self._seqs.append(record.seq)
        length = sum(counts.values())
        self._lengths.append(length)
        self._total_length += length
        ids, postings = self._ids, self._postings
        for term, count in counts.items():
            tid = ids.get(term)
            if tid is None:
                tid = self._learn(term)
            postings[tid].append(doc << TF_BITS | min(count, TF_MAX))
        if len(self._streams) > 4096 and len(self._streams) > 2 * len(self._docs):
            self._compact()

    def remove(self, stream: str) -> None:
        """Forget the entity of `stream`."""
        doc = self._docs.pop(stream, None)
        if doc is not None:
            self._kill(doc)

    def _kill(self, doc: int) -> None:
        self._alive[doc] = 0
        self._total_length -= self._lengths[doc]

    def _learn(self, term: str) -> int:
        tid = self._ids[term] = len(self._vocabulary)
        self._vocabulary.append(term)
        self._postings.append(array("I"))
        return tid

    # --- substring ------------------------------------------------------------------------

    def containing(self, query: str) -> list[str] | None:
        """Streams of the entities that may contain `query` (a superset), oldest first.

        None means every entity may: the query has no word character to look up.
        """
        runs = set(TERM.findall(query.lower()))
        if not runs:
            return None
        found: set[int] | None = None
        for run in sorted(runs, key=len, reverse=True):
            docs = self._documents_with(self._terms_containing(run))
            found = docs if found is None else found & docs
            if not found:
                return []
        assert found is not None
        return [self._streams[doc] for doc in sorted(found, key=self._seqs.__getitem__)]

    def _terms_containing(self, run: str) -> Iterator[int]:
        """Ids of the vocabulary terms that contain `run`."""
        self._join()
        joined, offsets, find = self._joined, self._offsets, self._joined.find
        at = find(run)
        while at >= 0:
            tid = bisect_right(offsets, at) - 1
            yield tid
            at = find(run, offsets[tid + 1] if tid + 1 < len(offsets) else len(joined))

    def _join(self) -> None:
        if len(self._offsets) < len(self._vocabulary):
            new = self._vocabulary[len(self._offsets):]
            start = len(self._joined)
            for term in new:
                self._offsets.append(start)
                start += len(term) + 1
            self._joined += "".join(term + SEP for term in new)

    def _documents_with(self, tids: Iterable[int]) -> set[int]:
        alive, postings = self._alive, self._postings
        docs: set[int] = set()
        for tid in tids:
            docs.update(doc for entry in postings[tid] if alive[doc := entry >> TF_BITS])
        return docs

    # --- ranked and fuzzy -----------------------------------------------------------------

    def ranked(self, query: str) -> list[tuple[str, float]]:
        """(stream, BM25 score) of every entity holding a term of `query`, best first."""
        groups = [{tid: 1.0} for term in query_terms(query) if (tid := self._ids.get(term)) is not None]
        return self._scored(groups)

    def fuzzy(self, query: str) -> list[tuple[str, float]]:
        """(stream, score) of every entity holding a term of `query` or a near spelling, best first.

        A term of four to seven letters forgives one edit, a longer one two; a near
        spelling counts for 1/(1 + edits) of the exact term.
        """
        groups = []
        for term in query_terms(query):
            variants: dict[int, float] = {}
            if (tid := self._ids.get(term)) is not None:
                variants[tid] = 1.0
            allowed = edits_allowed(term)
            if allowed:
                for tid, edits in self._near(term, allowed):
                    variants.setdefault(tid, 1 / (1 + edits))
            if variants:
                groups.append(variants)
        return self._scored(groups)

    def full_score(self, query: str, fuzzy: bool = False) -> float:
        """What a document of average length holding each term of `query` once scores (with
        `fuzzy`, a term no document holds counts as its nearest spelling that one does, as
        fuzzy search scores it; otherwise as the rarest term): the top of a 0..1 scale."""
        live = len(self._docs)

        def idf(tid: int) -> float:
            frequency = sum(1 for entry in self._postings[tid] if self._alive[entry >> TF_BITS])
            return math.log(1 + (live - frequency + 0.5) / (frequency + 0.5)) if frequency else 0.0

        rarest = math.log(1 + (live + 0.5) / 0.5)
        total = 0.0
        for term in query_terms(query):
            tid = self._ids.get(term)
            weight = 0.0 if tid is None else idf(tid)
            allowed = edits_allowed(term) if fuzzy and not weight else 0
            if allowed:
                weight = max((idf(near) / (1 + edits) for near, edits in self._near(term, allowed)), default=0.0)
            total += weight or rarest
        return total

    def _near(self, term: str, allowed: int) -> Iterator[tuple[int, int]]:
        """(term id, edits) of the vocabulary terms within `allowed` edits of `term`."""
        from rapidfuzz import process  # noqa: PLC0415 (loaded on the first fuzzy search only)
        from rapidfuzz.distance import OSA  # noqa: PLC0415

        self._bucket()
        for length in range(max(1, len(term) - allowed), len(term) + allowed + 1):
            bucket = self._by_length.get(length)
            if bucket is None:
                continue
            words, tids = bucket
            for _, edits, at in process.extract(term, words, scorer=OSA.distance, score_cutoff=allowed, limit=None):
                if edits:
                    yield tids[at], int(edits)

    def _bucket(self) -> None:
        vocabulary = self._vocabulary
        for tid in range(self._bucketed, len(vocabulary)):
            term = vocabulary[tid]
            if _DIGIT.search(term):
                continue  # matched exactly only (see edits_allowed)
            bucket = self._by_length.get(len(term))
            if bucket is None:
                bucket = self._by_length[len(term)] = ([], [])
            bucket[0].append(term)
            bucket[1].append(tid)
        self._bucketed = len(vocabulary)

    def _scored(self, groups: list[dict[int, float]]) -> list[tuple[str, float]]:
        """BM25 over `groups` (one per query term: its variants and their weights), best first.

        A document scores, for each group, its best variant's weighted BM25 term score.
        """
        live = len(self._docs)
        if not groups or not live:
            return []
        average = self._total_length / live or 1.0
        alive, lengths, postings = self._alive, self._lengths, self._postings
        scores: dict[int, float] = {}
        for group in groups:
            best: dict[int, float] = {}
            for tid, weight in group.items():
                entries = [entry for entry in postings[tid] if alive[entry >> TF_BITS]]
                frequency = len(entries)
                idf = weight * math.log(1 + (live - frequency + 0.5) / (frequency + 0.5))
                for entry in entries:
                    doc, count = entry >> TF_BITS, entry & TF_MAX
                    score = idf * count * (K1 + 1) / (count + K1 * (1 - B + B * lengths[doc] / average))
                    if score > best.get(doc, 0.0):
                        best[doc] = score
            for doc, score in best.items():
                scores[doc] = scores.get(doc, 0.0) + score
        seqs, streams = self._seqs, self._streams
        order = sorted(scores.items(), key=lambda item: (-item[1], seqs[item[0]]))
        return [(streams[doc], score) for doc, score in order]

    # --- upkeep ---------------------------------------------------------------------------

    def _compact(self) -> None:
        """Renumber the live documents and drop the dead ones' postings."""
        alive = self._alive
        live = [doc for doc in range(len(self._streams)) if alive[doc]]
        renumbered = array("I", bytes(4 * len(self._streams)))
        for new, old in enumerate(live):
            renumbered[old] = new
        self._postings = [
            array("I", (renumbered[e >> TF_BITS] << TF_BITS | e & TF_MAX for e in posting if alive[e >> TF_BITS]))
            for posting in self._postings
        ]
        self._streams = [self._streams[doc] for doc in live]
        self._alive = bytearray(b"\x01" * len(live))
        self._versions = array("Q", (self._versions[doc] for doc in live))
        self._seqs = array("Q", (self._seqs[doc] for doc in live))
        self._lengths = array("I", (self._lengths[doc] for doc in live))
        self._docs = {stream: doc for doc, stream in enumerate(self._streams)}

    def image(self) -> bytes:
        """The index as bytes, to keep in the store."""
        if len(self._streams) > 2 * len(self._docs):
            self._compact()
        return seal_array(_encoder.encode(_Image(
            IMAGE_FORMAT, self.workspace, self.position, self._streams, bytes(self._alive),
            self._versions.tobytes(), self._seqs.tobytes(), self._lengths.tobytes(),
            self._total_length, SEP.join(self._vocabulary), [posting.tobytes() for posting in self._postings],
        )))

    @classmethod
    def from_image(cls, data: bytes) -> WorkspaceIndex | None:
        """The index an `image` holds (None if it is of another format or damaged)."""
        if not sound(data):
            return None
        try:
            image = _decoder.decode(data)
        except msgspec.DecodeError:
            return None
        if image.format != IMAGE_FORMAT:
            return None
        index = cls(image.workspace)
        index.position = image.position
        index._streams = image.streams
        index._alive = bytearray(image.alive)
        index._versions.frombytes(image.versions)
        index._seqs.frombytes(image.seqs)
        index._lengths.frombytes(image.lengths)
        index._docs = {stream: doc for doc, stream in enumerate(image.streams) if image.alive[doc]}
        index._vocabulary = image.vocabulary.split(SEP) if image.vocabulary else []
        index._ids = {term: tid for tid, term in enumerate(index._vocabulary)}
        index._postings = [array("I", posting) for posting in image.postings]
        index._total_length = image.total_length
        sizes = {len(index._streams), len(index._alive), len(index._versions), len(index._seqs), len(index._lengths)}
        if len(sizes) != 1 or len(index._postings) != len(index._vocabulary):
            return None
        return index
