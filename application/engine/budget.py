"""How large one reply may be, and telling an answer is over it before building it.

A server sets `Memory.reply_limit` (its `--max-reply`); a query that may answer many
entities asks its `ReplyBudget` before it builds them. What every answer of an entity
must carry is known from the word index without reading the entity (its name, type and
the observations always shown, in characters; see `WorkspaceIndex` and `Volume`), so a
lower bound of the reply's bytes costs a sum, not a build: when even that is over the
limit, the query refuses at once, saying the page size that fits (measured on a small
page of the very answer). The reply carries each entity twice, as structured content
(compact JSON) and inside the text block (JSON pretty-printed with two spaces, then
encoded as a JSON string, which doubles every quote and line break); the bound counts
both, at the shallowest nesting any answer has, and nothing an answer may leave out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from chronograph.application.errors import ReplyTooLargeError
from chronograph.projections.records import EntityRecord, RelationRecord
from chronograph.projections.search.selection import Selection

__all__ = ["MARGIN", "SAMPLE", "ReplyBudget", "entities_of", "page_fit", "reply_size"]

SAMPLE = 50
"""Entities of the small page a refusal measures to say which page size fits."""
MARGIN = 0.8
"""The share of the limit a page a refusal advises is sized to fill (entities further on may be larger)."""
_encoder = msgspec.json.Encoder()


def reply_size(output: Any) -> int:
    """The bytes a reply of `output` carries: its compact JSON and its pretty text as a JSON string."""
    raw = _encoder.encode(output)
    return len(raw) + len(_encoder.encode(msgspec.json.format(raw, indent=2).decode()))


def _least_size(output: Any) -> int:
    """The bytes a reply of `output` carries at least: its compact JSON, and its text as a JSON
    string, printed compact (Chronograph's own profiles print it so; the others, indented)."""
    raw = _encoder.encode(output)
    return len(raw) + len(_encoder.encode(raw.decode()))


def _carried(entity: dict[str, Any]) -> int:
    """The bytes one more item of this shape adds to a reply, at least (with empty texts)."""
    return _least_size([entity]) - _least_size([])


_FULL = _carried({"name": "", "entityType": "", "observations": []})
_HEADS = _carried({"name": "", "entityType": ""})
_OBSERVATION = _carried({"name": "", "entityType": "", "observations": [""]}) - _FULL
_RELATION = _carried({"from": "", "to": "", "relationType": ""})
CHAR = 2
"""Bytes each character of a text costs at least: once in each of the two forms."""


class ReplyBudget:
    """The reply limit of one query (None: no limit), and the lower bound of what it has built so far."""

    def __init__(self, tool: str, limit: int | None, *, summary: bool, shape: dict[str, Any] | None = None,
                 observations: int | None = None) -> None:
        self.tool = tool
        self.limit = limit
        self.summary = summary
        self.entity = _carried(shape) if shape is not None else _HEADS if summary else _FULL
        """The least bytes an entity costs in this answer, before its texts (`shape`: the keys
        of an entity as the answer spells them, with empty values, when they are not ours)."""
        self.cap = None if summary else observations
        """At most this many observations an entity of the answer holds (observationsLimit; None: all)."""
        self.spent = 0
        """A lower bound of the bytes of what was built so far."""
        self.fitted = 0
        """How many of the entities counted so far fit in the limit, with the advice's `MARGIN`, by that bound."""

    @property
    def active(self) -> bool:
        """Whether there is a limit to keep."""
        return self.limit is not None

    def selection(self, selection: Selection, *, offset: int = 0, limit: int | None = None,
                  relations: int = 0) -> int:
        """A lower bound of the reply of the selected entities (`limit` of them after `offset`) and
        `relations` relations, counted only as far as the limit (0 without a limit)."""
        if self.limit is None:
            return 0
        entity, char, observation, heads = self._costs()
        return selection.weigh(entity, char, observation, heads=heads, ceiling=self.limit, offset=offset, limit=limit,
                               cap=self.cap) + relations * _RELATION

    def fitting(self, selection: Selection, *, offset: int = 0, limit: int | None = None) -> int:
        """How many of the selected entities after `offset` fit in the limit, with the advice's
        `MARGIN`, by the lower bound: a page of more would be refused again, whatever a sample says."""
        assert self.limit is not None
        entity, char, observation, heads = self._costs()
        return selection.fitting(entity, char, observation, heads=heads, ceiling=int(self.limit * MARGIN),
                                 offset=offset, limit=limit, cap=self.cap)

    def _costs(self) -> tuple[int, int, int, bool]:
        """What `Selection.weigh` counts: an entity, a character, an observation; heads only? (Of
        an observation past a cap, which the answer may leave out, no character is counted.)"""
        return self.entity, CHAR, 0 if self.summary else _OBSERVATION, self.summary or self.cap is not None

    def add(self, record: EntityRecord) -> bool:
        """Count one more entity built; whether the bound is now over the limit."""
        if self.limit is None:
            return False
        chars = len(record.name) + len(record.entity_type)
        if not self.summary:
            always = record.observations if not record.validity else \
                [o for o in record.observations if o not in record.validity]
            if self.cap is None:
                shown, texts = len(always), sum(map(len, always))
            else:  # it keeps `cap` of them, the query says which: at least the shortest of all it holds
                shown = min(self.cap, len(always))
                texts = sum(sorted(map(len, record.observations))[:shown])
            chars += texts
            self.spent += _OBSERVATION * shown
        self.spent += self.entity + CHAR * chars
        if self.spent <= self.limit * MARGIN:
            self.fitted += 1
        return self.spent > self.limit

    def add_relation(self, record: RelationRecord) -> bool:
        """Count one more relation built; whether the bound is now over the limit."""
        if self.limit is None:
            return False
        self.spent += _RELATION + CHAR * (len(record.source) + len(record.target) + len(record.relation_type))
        return self.spent > self.limit

    def refuse(self, bound: int, count: int, sample: Callable[[int], tuple[Any, int]], hint: str, *,
               fits: int | None = None, alone: str | None = None) -> ReplyTooLargeError:
        """The refusal of an answer (of `count` entities) that takes at least `bound` bytes;
        `sample(n)` builds a page of the answer's first `n` entities (and says how many it holds),
        so the page size that fits is measured on the answer itself (and is at most `fits`, the
        entities that fit by the lower bound, when known); `hint` says how to page, with that size
        for {fit}, and `alone` what to do when not even one entity fits."""
        assert self.limit is not None
        output, held = sample(min(SAMPLE, max(1, count)))
        fit = page_fit(output, reply_size(output), self.limit, more=count - held)
        if fits is not None:
            fit = min(fit, fits)
        if fit < 1 and alone is not None:
            return ReplyTooLargeError(self.tool, bound, self.limit, alone, at_least=True)
        return ReplyTooLargeError(self.tool, bound, self.limit, hint.format(fit=max(1, fit)), at_least=True)


def entities_of(output: Any) -> list[Any]:
    """The entities of an answer (ours, or another server's shape of one), as it holds them."""
    if isinstance(output, dict):
        held = output.get("entities")
        if held is None and isinstance(output.get("graph"), dict):
            held = output["graph"].get("entities")
        return held if isinstance(held, list) else []
    reply = getattr(output, "reply", None)
    if isinstance(reply, dict):
        return entities_of(reply)
    held = getattr(output, "entities", None)
    return held if isinstance(held, list) else []


def page_fit(output: Any, size: int, limit: int, *, more: int = 0) -> int:
    """How many of the first entities of `output` (a reply of `size` bytes) a reply of `limit`
    bytes holds, with a margin: each entity is given a share of `size` as large as its share of
    the entities' JSON (what else the reply carries shared out with them, so a share is never
    less than the entity costs), and `more` entities not built are taken at their average."""
    entities = entities_of(output)
    if not entities:
        return 0
    weights = [len(_encoder.encode(entity)) for entity in entities]
    each = size / max(1, sum(weights))
    room, held = limit * MARGIN, 0
    for weight in weights:
        room -= weight * each
        if room < 0:
            return held
        held += 1
    return held + min(more, int(room / (size / len(entities)))) if more > 0 else held
