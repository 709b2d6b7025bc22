"""Synthetic but realistic graph workloads shared by the benchmark scripts.

Entities get names, one of twenty types and observations drawn from a vocabulary with a
long tail, so search sees common and rare words as it would in a real memory.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from chronograph.eventstore import (
    ContextUpdated,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationsAdded,
    RelationCreated,
    StreamWrite,
)
from chronograph.projections import context_stream, relation_stream

TYPES = [f"type{i}" for i in range(20)]
_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "do", "fe", "gi", "hu"]


def vocabulary(size: int, seed: int = 7) -> list[str]:
    """`size` distinct made-up words."""
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Workload:
    """Generates entities, observations and relations; `rare` words appear a few times only."""

    def __init__(self, seed: int = 1, workspace: str = "default") -> None:
        self.rng = random.Random(seed)
        self.workspace = workspace
        self.words = vocabulary(5000)
        self.weights = [1 / (rank + 1) for rank in range(len(self.words))]  # Zipf-like
        self.entities: list[tuple[str, str]] = []  # (stream, name)
        self.live: set[int] = set()

    def sentence(self) -> str:
        return " ".join(self.rng.choices(self.words, self.weights, k=self.rng.randint(4, 8)))

    def name(self, i: int) -> str:
        return f"Entity {i:07d}"

    def rare_term(self, i: int) -> str:
        """A token that only the entity numbered `i` (a multiple of 1000) carries."""
        return f"zqx{i}rare"

    def entity(self, i: int, observations: int = 3) -> tuple[str, EntityCreated]:
        stream = f"entity-{self.workspace}-{i}"
        texts = [self.sentence() for _ in range(observations)]
        if i % 1000 == 0:
            texts[0] += " " + self.rare_term(i)
        event = EntityCreated(
            workspace=self.workspace, name=self.name(i), entity_type=self.rng.choice(TYPES),
            observations=tuple(texts),
        )
        self.entities.append((stream, self.name(i)))
        self.live.add(len(self.entities) - 1)
        return stream, event

    def entity_writes(self, start: int, count: int, observations: int = 3) -> list[StreamWrite]:
        return [StreamWrite(s, [e], "no_stream") for s, e in
                (self.entity(i, observations) for i in range(start, start + count))]

    def relation(self) -> tuple[str, RelationCreated]:
        a, b = self.rng.sample(range(len(self.entities)), 2)
        source, target = self.entities[a][1], self.entities[b][1]
        kind = self.rng.choice(["knows", "uses", "owns", "depends_on"])
        event = RelationCreated(workspace=self.workspace, source=source, target=target, relation_type=kind)
        return relation_stream(self.workspace, source, kind, target), event

    def mixed(self, count: int) -> Iterator[StreamWrite]:
        """A realistic mix of `count` events: creates, observations, relations, updates."""
        made = 0
        while made < count:
            roll = self.rng.random()
            if roll < 0.25 or len(self.entities) < 10:
                stream, event = self.entity(len(self.entities), self.rng.randint(1, 3))
                yield StreamWrite(stream, [event])
            elif roll < 0.65:
                stream = self.rng.choice(self.entities)[0]
                yield StreamWrite(stream, [ObservationsAdded(observations=(self.sentence(),))])
            elif roll < 0.90:
                stream, event = self.relation()
                yield StreamWrite(stream, [event])
            elif roll < 0.97:
                stream = self.rng.choice(self.entities)[0]
                yield StreamWrite(stream, [EntityUpdated(entity_type=self.rng.choice(TYPES))])
            elif roll < 0.99:
                stream = self.rng.choice(self.entities)[0]
                yield StreamWrite(stream, [EntityDeleted()])
            else:
                yield StreamWrite(context_stream(self.workspace), [
                    ContextUpdated(workspace=self.workspace, active_task=self.sentence())
                ])
            made += 1
