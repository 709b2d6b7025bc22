"""Search: exact case-insensitive substring matching and BM25 word ranking, without scans.

Each workspace's entities are split (lowercased) into whitespace tokens. Postings map
a token to the entities holding it, and a trigram index over the *vocabulary* of
distinct tokens finds the tokens containing a query fragment. Any substring of a text
is made of fragments that each lie inside one token, so the entities whose tokens
contain every fragment of the query are a superset of the answer, and checking each
against its text makes the answer exact. The vocabulary grows far slower than the
text, so indexing an entity costs one posting per distinct token, not per trigram.

The index is kept in memory, one per workspace and process, built from the entity view
on first use and brought up to date from the log before every query. It is not written
inline to LMDB on purpose; see docs/decisions.md (a posting per token or trigram dirties
dozens of B-tree pages per durable write).

Postings only grow: an entity's old postings stay until the index is compacted, and
every candidate is verified against the entity's current text, so a stale posting can
cost a little time but never a wrong answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from chronograph.eventstore import EntityCreated, LogReader
from chronograph.projections.graph import LmdbGraph
from chronograph.projections.records import EntityRecord

__all__ = ["SearchIndex", "WorkspaceIndex", "folded", "matches"]

_TERM = re.compile(r"\w+")
K1, B = 1.2, 0.75
SHORT = 3
"""Fragments shorter than this are looked up by scanning the vocabulary (not the entities)."""


def folded(record: EntityRecord) -> tuple[str, ...]:
    """The searchable texts of an entity, lowercased: name, type, then observations."""
    return (record.name.lower(), record.entity_type.lower(), *(o.lower() for o in record.observations))


def matches(record: EntityRecord, query: str) -> bool:
    """The official server's rule: the query, case-insensitively, in name, type or an observation."""
    needle = query.lower()
    return any(needle in text for text in folded(record))


def _tokens(texts: Iterable[str]) -> set[str]:
    return {token for text in texts for token in text.split()}


def _terms(texts: Iterable[str]) -> list[str]:
    return [term for text in texts for term in _TERM.findall(text)]


class WorkspaceIndex:
    """Postings of one workspace's entities, current at `position`."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.position = 0
        self._reset()

    def _reset(self) -> None:
        self._ids: dict[str, int] = {}
        self._texts: list[tuple[str, ...] | None] = []
        self._streams: list[str] = []
        self._seqs: list[int] = []
        self._lengths: list[int] = []
        self._postings: dict[str, list[int]] = {}
        """token -> documents that held it (possibly stale, possibly repeated)"""
        self._grams: dict[str, list[str]] = {}
        """trigram -> tokens of the vocabulary containing it"""
        self._term_tokens: dict[str, list[str]] = {}
        """BM25 term (a \\w+ run) -> tokens of the vocabulary containing it"""
        self._live = 0
        self._total_length = 0
        self._size = 0
        self._stale = 0

    def __len__(self) -> int:
        return self._live

    def put(self, record: EntityRecord) -> None:
        """Index `record`, replacing what was indexed for its stream."""
        texts = folded(record)
        doc = self._ids.get(record.stream)
        if doc is None:
            doc = self._ids[record.stream] = len(self._texts)
            self._texts.append(None)
            self._streams.append(record.stream)
            self._seqs.append(record.seq)
            self._lengths.append(0)
            old: set[str] = set()
            self._live += 1
        else:
            previous = self._texts[doc]
            if previous == texts:
                return
            old = _tokens(previous) if previous is not None else set()
        new = _tokens(texts)
        self._post(new - old, doc)
        self._stale += len(old - new)
        length = len(_terms(texts))
        self._total_length += length - self._lengths[doc]
        self._lengths[doc] = length
        self._texts[doc] = texts
        self._seqs[doc] = record.seq
        self._compact_if_stale()

    def remove(self, stream: str) -> None:
        """Forget the entity of `stream` (its postings turn stale)."""
        doc = self._ids.pop(stream, None)
        if doc is None:
            return
        old = self._texts[doc]
        assert old is not None
        self._stale += len(_tokens(old))
        self._texts[doc] = None
        self._live -= 1
        self._total_length -= self._lengths[doc]
        self._lengths[doc] = 0
        self._compact_if_stale()

    def knows(self, stream: str) -> bool:
        """Whether `stream` is an entity of this index."""
        return stream in self._ids

    # --- queries --------------------------------------------------------------------------

    def substring(self, query: str) -> list[str]:
        """Streams of the entities containing `query` case-insensitively, oldest first."""
        needle = query.lower()
        fragments = needle.split()
        texts = self._texts
        candidates: Iterable[int]
        if not fragments:  # empty or only whitespace: every entity is a candidate
            candidates = range(len(texts))
        else:
            found: set[int] | None = None
            for fragment in sorted(set(fragments), key=len, reverse=True):
                docs = self._documents_with(fragment)
                found = docs if found is None else found & docs
                if not found:
                    return []
            candidates = found or ()
        hits = [
            doc for doc in candidates
            if (doc_texts := texts[doc]) is not None and any(needle in t for t in doc_texts)
        ]
        hits.sort(key=self._seqs.__getitem__)
        return [self._streams[doc] for doc in hits]

    def ranked(self, query: str, limit: int) -> list[tuple[str, float]]:
        """(stream, BM25 score) of the best `limit` entities for the words of `query`."""
        terms = list(dict.fromkeys(_TERM.findall(query.lower())))
        if not terms or not self._live:
            return []
        candidates: set[int] = set()
        for term in terms:
            for token in self._term_tokens.get(term, ()):
                candidates.update(self._postings[token])
        frequencies: dict[int, dict[str, int]] = {}
        document_frequency = dict.fromkeys(terms, 0)
        for doc in candidates:
            doc_texts = self._texts[doc]
            if doc_texts is None:
                continue
            found = _terms(doc_texts)
            counts = {term: found.count(term) for term in terms}
            if any(counts.values()):
                frequencies[doc] = counts
                for term, count in counts.items():
                    document_frequency[term] += count > 0
        total = self._live
        average = self._total_length / total or 1.0
        idf = {
            term: math.log(1 + (total - df + 0.5) / (df + 0.5))
            for term, df in document_frequency.items()
        }
        scored = []
        for doc, counts in frequencies.items():
            norm = K1 * (1 - B + B * self._lengths[doc] / average)
            score = sum(idf[t] * c * (K1 + 1) / (c + norm) for t, c in counts.items() if c)
            scored.append((-score, self._seqs[doc], doc))
        scored.sort()
        return [(self._streams[doc], -negative) for negative, _, doc in scored[:limit]]

    def _documents_with(self, fragment: str) -> set[int]:
        """Documents holding a token that contains `fragment`."""
        if len(fragment) < SHORT:
            tokens: Iterable[str] = [t for t in self._postings if fragment in t]
        else:
            lists = []
            for i in range(len(fragment) - 2):
                holders = self._grams.get(fragment[i : i + 3])
                if holders is None:
                    return set()
                lists.append(holders)
            tokens = [t for t in min(lists, key=len) if fragment in t]
        docs: set[int] = set()
        postings = self._postings
        for token in tokens:
            docs.update(postings[token])
        return docs

    # --- maintenance ----------------------------------------------------------------------

    def _post(self, tokens: Iterable[str], doc: int) -> None:
        postings = self._postings
        for token in tokens:
            posting = postings.get(token)
            if posting is None:
                postings[token] = [doc]
                self._learn(token)
            else:
                posting.append(doc)
            self._size += 1

    def _learn(self, token: str) -> None:
        grams = self._grams
        for gram in {token[i : i + 3] for i in range(len(token) - 2)}:
            holders = grams.get(gram)
            if holders is None:
                grams[gram] = [token]
            else:
                holders.append(token)
        for term in set(_TERM.findall(token)):
            holders = self._term_tokens.get(term)
            if holders is None:
                self._term_tokens[term] = [token]
            else:
                holders.append(token)

    def _compact_if_stale(self) -> None:
        if self._stale > 1024 and self._stale * 2 > self._size:
            live = [(s, self._texts[doc], self._seqs[doc]) for s, doc in self._ids.items()]
            self._reset()
            for stream, texts, seq in live:
                assert texts is not None
                doc = self._ids[stream] = len(self._texts)
                self._texts.append(texts)
                self._streams.append(stream)
                self._seqs.append(seq)
                self._lengths.append(len(_terms(texts)))
                self._post(_tokens(texts), doc)
                self._live += 1
                self._total_length += self._lengths[doc]


class SearchIndex:
    """The search indexes of one process, one per workspace, caught up on every query."""

    def __init__(self) -> None:
        self._workspaces: dict[str, WorkspaceIndex] = {}

    def current(self, log: LogReader, graph: LmdbGraph, workspace: str) -> WorkspaceIndex:
        """The workspace's index, brought up to the position of `graph` (same snapshot as `log`)."""
        index = self._workspaces.get(workspace)
        if index is None or index.position > graph.position:
            index = self._workspaces[workspace] = WorkspaceIndex(workspace)
            for record in graph.entities(workspace):
                index.put(record)
        elif index.position < graph.position:
            touched: set[str] = set()
            for envelope in log.all(index.position + 1, graph.position):
                event = envelope.event
                if isinstance(event, EntityCreated):
                    if event.workspace == workspace:
                        touched.add(envelope.stream)
                elif index.knows(envelope.stream):
                    touched.add(envelope.stream)
            for stream in touched:
                found = graph.entity_by_stream(stream)
                if found is None:
                    index.remove(stream)
                else:
                    index.put(found)
        index.position = graph.position
        return index
