"""The word index of one workspace: postings that answer substring, BM25 and fuzzy search.

An entity's texts are split into terms (`terms`). Each term of the vocabulary has a posting
list: the documents holding it, each with how often (capped at 15, where BM25 has long saturated).

- **substring** (the official rule: the query inside one of the texts) needs a superset of the
  answer, which a caller then checks against the texts. Every run of word characters in the
  query lies inside one term of any text containing the query, so the documents holding, for
  each such run, a term containing it are that superset. The terms containing a run are found
  by one `str.find` sweep over the vocabulary joined into one string: C speed, no n-gram tables.
- **ranked** scores the documents holding the query's terms by BM25.
- **fuzzy** does the same over the vocabulary terms near each query term (`spellings`), each
  weighted by its closeness, so an exact match ranks above a typo.

A document is one version of an entity: a changed entity gets a new document and its old one
dies, so postings never need editing, only filtering by liveness, and are compacted once the dead
outnumber the living. Nothing here holds the texts themselves: the entity views have them.

Counting and paging cost what the page costs: a term's documents are also a bitmap (a Python int,
one byte per document, so that `int.from_bytes` of the liveness bytes is the live set), kept for
the terms common enough to need one, so a query's matches are counted by AND, OR and a popcount,
never by materialising them; the documents are kept in creation order (`seq`), so a page of a
common word is the first matches met in that order. Each document also keeps the characters an
answer must carry for it (name, type and the observations without a valid time), so a caller can
tell an answer is too large to send before building it.

The whole index encodes to one `image` and decodes from it in milliseconds (`wordimage`), so
a new process loads it from the store instead of building it from every entity.
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from chronograph.projections.records import EntityRecord
from chronograph.projections.search.selection import Ranking, Selection, Volume
from chronograph.projections.search.spellings import Spellings
from chronograph.projections.search.terms import TERM, edits_allowed, entity_terms, query_terms

__all__ = ["WorkspaceIndex"]

K1, B = 1.2, 0.75
"""BM25's term-frequency saturation and length normalisation."""
TF_BITS = 4
TF_MAX = (1 << TF_BITS) - 1
MAX_DOCS = 1 << (32 - TF_BITS)
"""A posting is `doc << TF_BITS | tf` in 32 bits."""
SEP = "\x00"
"""Separates the terms of the joined vocabulary (no term holds it: it is not a word character)."""
DENSE = 512
"""Postings at least this long keep a bitmap (built once, extended as they grow)."""
FEW = 1024
"""A run of a query whose terms have at most this many postings is looked up as a set of documents."""


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
        self._spellings = Spellings()
        self._heads = array("I")
        self._chars = array("I")
        self._notes = array("I")
        self._totals = [0, 0, 0]
        """The live documents' heads, chars and observations (see `Volume`)."""
        self._order = array("I")
        """Documents in creation order (`seq`); a dead one stays until it is replaced or compacted."""
        self._place: array[int] | None = array("I")
        """doc -> its index in `_order` (meaningful for live documents while `_ordered`; None: to be built)"""
        self._ordered = True
        self._bits: dict[int, tuple[int, int]] = {}
        """tid -> (bitmap of its postings' documents, how many postings it covers): dense terms only"""

    def __len__(self) -> int:
        return len(self._docs)

    def knows(self, stream: str) -> bool:
        """Whether `stream` is a live entity of this index."""
        return stream in self._docs

    # --- changes --------------------------------------------------------------------------

    def put(self, record: EntityRecord) -> None:
        """Index `record`, replacing what was indexed for its stream (unless it is that version)."""
        old = self._docs.get(record.stream)
        if old is not None:
            if self._versions[old] == record.version:
                return
            self._kill(old)
        if len(self._streams) >= MAX_DOCS:
            self._compact()
            old = None  # renumbered: its place is found again below
        counts = Counter(entity_terms(record))
        doc = self._docs[record.stream] = len(self._streams)
        self._streams.append(record.stream)
        self._alive.append(1)
        self._versions.append(record.version)
        self._seqs.append(record.seq)
        length = sum(counts.values())
        self._lengths.append(length)
        self._total_length += length
        self._weigh(record)
        self._arrange(doc, old, record.seq)
        ids, postings, base = self._ids, self._postings, doc << TF_BITS
        for term, count in counts.items():  # the build's innermost loop: no call but the append
            tid = ids.get(term)
            if tid is None:
                tid = self._learn(term)
            postings[tid].append(base | (count if count < TF_MAX else TF_MAX))
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
        totals = self._totals
        totals[0] -= self._heads[doc]
        totals[1] -= self._chars[doc]
        totals[2] -= self._notes[doc]

    def _weigh(self, record: EntityRecord) -> None:
        """Keep what an answer must carry for the new document: characters count bytes from
        below (UTF-8 takes at least one byte per character, JSON adds quotes and escapes)."""
        shown = record.observations
        if record.validity:  # an observation with a valid time may be hidden: it counts nothing
            shown = [o for o in shown if o not in record.validity]
        heads = len(record.name) + len(record.entity_type)
        chars = heads + sum(map(len, shown))
        self._heads.append(heads)
        self._chars.append(chars)
        self._notes.append(len(shown))
        totals = self._totals
        totals[0] += heads
        totals[1] += chars
        totals[2] += len(shown)

    def _arrange(self, doc: int, old: int | None, seq: int) -> None:
        """Place the new document `doc` in creation order: where the version it replaces was, or
        last; anything else (a catch-up in another order) rebuilds the order when next needed."""
        if not self._ordered:
            return
        order, seqs, place = self._order, self._seqs, self._place
        if place is None:  # loaded from an image: the places are built when a change needs them
            place = self._place = array("I", bytes(4 * doc))
            for at, placed in enumerate(order):
                place[placed] = at
        if old is not None and seqs[old] == seq:
            at = place[old]
            order[at] = doc
            place.append(at)
        elif not order or seqs[order[-1]] <= seq:
            place.append(len(order))
            order.append(doc)
        else:
            self._ordered = False

    def _in_order(self) -> array[int]:
        """The documents in creation order (dead ones among them), rebuilt if it was lost."""
        if not self._ordered:
            seqs, alive = self._seqs, self._alive
            self._order = array("I", sorted((d for d in range(len(self._streams)) if alive[d]), key=seqs.__getitem__))
            place = array("I", bytes(4 * len(self._streams)))
            for at, doc in enumerate(self._order):
                place[doc] = at
            self._place = place
            self._ordered = True
        return self._order

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
        selection = self.select(query)
        return None if selection is None else selection.streams()

    def select(self, query: str) -> Selection | None:
        """The live documents that may contain `query` (a superset; exactly the answer when the
        query is one run of word characters), counted without listing them.

        None means every entity may: the query has no word character to look up.
        """
        runs = set(TERM.findall(query.lower()))
        if not runs:
            return None
        postings = self._postings
        found_terms = {run: list(self._terms_containing(run)) for run in runs}
        sizes = {run: sum(len(postings[tid]) for tid in tids) for run, tids in found_terms.items()}
        rarest = min(runs, key=sizes.__getitem__)
        if sizes[rarest] <= FEW:  # a rare word: its few documents, checked against the other runs
            alive = self._alive
            docs = {doc for tid in found_terms[rarest] for entry in postings[tid] if alive[doc := entry >> TF_BITS]}
            for run in runs - {rarest}:
                if not docs:
                    break
                if sizes[run] <= FEW:
                    docs &= {entry >> TF_BITS for tid in found_terms[run] for entry in postings[tid]}
                else:
                    flags = self._bitmap(found_terms[run]).to_bytes(len(self._streams), "little")
                    docs = {doc for doc in docs if flags[doc]}
            return Selection(self, None, sorted(docs, key=self._seqs.__getitem__))
        found = self._live_bits()
        for run in sorted(runs, key=sizes.__getitem__):
            found &= self._bitmap(found_terms[run])
            if not found:
                break
        return Selection(self, found)

    def everything(self) -> Selection:
        """Every live document."""
        return Selection(self, self._live_bits())

    def volume(self) -> Volume:
        """What an answer of every live entity must carry."""
        heads, chars, notes = self._totals
        return Volume(len(self._docs), heads, chars, notes)

    def _live_bits(self) -> int:
        return int.from_bytes(self._alive, "little")

    def _bitmap(self, tids: Iterable[int]) -> int:
        """The documents (dead ones too) holding any of the terms `tids`, one byte per document."""
        postings, bits = self._postings, 0
        spread: bytearray | None = None
        for tid in tids:
            posting = postings[tid]
            if len(posting) >= DENSE:
                bits |= self._dense(tid)
                continue
            if spread is None:
                spread = bytearray(len(self._streams))
            for entry in posting:
                spread[entry >> TF_BITS] = 1
        return bits if spread is None else bits | int.from_bytes(spread, "little")

    def _dense(self, tid: int) -> int:
        posting = self._postings[tid]
        bits, covered = self._bits.get(tid, (0, 0))
        if covered < len(posting):
            spread = bytearray(len(self._streams))
            for entry in posting[covered:]:
                spread[entry >> TF_BITS] = 1
            bits |= int.from_bytes(spread, "little")
            self._bits[tid] = (bits, len(posting))
        return bits

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

    # --- ranked and fuzzy -----------------------------------------------------------------

    def ranked(self, query: str, depth: int | None = None) -> list[tuple[str, float]]:
        """(stream, BM25 score) of every entity holding a term of `query` (the best `depth`), best first."""
        return self.ranking(query, depth=depth).hits

    def fuzzy(self, query: str, depth: int | None = None) -> list[tuple[str, float]]:
        """(stream, score) of every entity holding a term of `query` or a near spelling (the best
        `depth`), best first.

        A term of four to seven letters forgives one edit, a longer one two; a near
        spelling counts for 1/(1 + edits) of the exact term.
        """
        return self.ranking(query, fuzzy=True, depth=depth).hits

    def ranking(self, query: str, *, fuzzy: bool = False, depth: int | None = None) -> Ranking:
        """The best `depth` (None: all) of the entities `ranked` or `fuzzy` finds, best first, and
        how many it finds in all (exact: every one holding a term is scored, only the best kept)."""
        if not fuzzy:
            groups = [{tid: 1.0} for term in query_terms(query) if (tid := self._ids.get(term)) is not None]
            return self._scored(groups, depth)
        groups = []
        for term in query_terms(query):
            variants: dict[int, float] = {}
            if (tid := self._ids.get(term)) is not None:
                variants[tid] = 1.0
            allowed = edits_allowed(term)
            if allowed:
                for tid, edits in self._spellings.near(self._vocabulary, term, allowed):
                    variants.setdefault(tid, 1 / (1 + edits))
            if variants:
                groups.append(variants)
        return self._scored(groups, depth)

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
                near = self._spellings.near(self._vocabulary, term, allowed)
                weight = max((idf(other) / (1 + edits) for other, edits in near), default=0.0)
            total += weight or rarest
        return total

    def _scored(self, groups: list[dict[int, float]], depth: int | None = None) -> Ranking:
        """BM25 over `groups` (one per query term: its variants and their weights): the best
        `depth` first (ties: the older first), and how many documents scored.

        A document scores, for each group, its best variant's weighted BM25 term score. The
        best are kept with a bounded heap, not by sorting every document that scored.
        """
        live = len(self._docs)
        if not groups or not live:
            return Ranking([], 0)
        average = self._total_length / live or 1.0
        base, slope, lift = K1 * (1 - B), K1 * B / average, K1 + 1
        alive, lengths, postings = self._alive, self._lengths, self._postings
        scores: dict[int, float] = {}
        for group in groups:
            best: dict[int, float] = {} if len(groups) > 1 or len(group) > 1 else scores
            for tid, weight in group.items():
                entries = [entry for entry in postings[tid] if alive[entry >> TF_BITS]]
                frequency = len(entries)
                idf = weight * math.log(1 + (live - frequency + 0.5) / (frequency + 0.5)) * lift
                if best is scores:  # one term: each document once, nothing to merge
                    for entry in entries:
                        count = entry & TF_MAX
                        best[entry >> TF_BITS] = idf * count / (count + base + slope * lengths[entry >> TF_BITS])
                    continue
                for entry in entries:
                    doc, count = entry >> TF_BITS, entry & TF_MAX
                    score = idf * count / (count + base + slope * lengths[doc])
                    if score > best.get(doc, 0.0):
                        best[doc] = score
            if best is not scores:
                for doc, score in best.items():
                    scores[doc] = scores.get(doc, 0.0) + score
        seqs, streams = self._seqs, self._streams
        if depth is None or depth >= len(scores):
            chosen = list(scores)
        else:
            top = heapq.nlargest(depth, scores, key=scores.__getitem__)
            floor = scores[top[-1]]
            above = [doc for doc in top if scores[doc] > floor]
            tied = [doc for doc, score in scores.items() if score == floor]  # the older of them first
            chosen = above + heapq.nsmallest(depth - len(above), tied, key=seqs.__getitem__)
        chosen.sort(key=lambda doc: (-scores[doc], seqs[doc]))
        return Ranking([(streams[doc], scores[doc]) for doc in chosen], len(scores))

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
        self._heads = array("I", (self._heads[doc] for doc in live))
        self._chars = array("I", (self._chars[doc] for doc in live))
        self._notes = array("I", (self._notes[doc] for doc in live))
        if self._ordered:
            self._order = array("I", (renumbered[doc] for doc in self._order if alive[doc]))
            self._place = array("I", bytes(4 * len(live)))
            for at, doc in enumerate(self._order):
                self._place[doc] = at
        self._bits.clear()
        self._docs = {stream: doc for doc, stream in enumerate(self._streams)}

    def image(self) -> bytes:
        """The index as bytes, to keep in the store (see `wordimage`)."""
        from chronograph.projections.search.wordimage import image_of  # noqa: PLC0415 (it builds on this module)

        return image_of(self)

    @classmethod
    def from_image(cls, data: bytes, parts: Sequence[bytes] = ()) -> WorkspaceIndex | None:
        """The index an `image` holds, with the parts it names if it was kept in parts (None if
        it is of another format, damaged or incomplete)."""
        from chronograph.projections.search.wordimage import index_of  # noqa: PLC0415 (it builds on this module)

        return index_of(data, parts)
