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

__all__ = ["SAMPLE", "ReplyBudget", "reply_size"]

SAMPLE = 50
"""Entities of the small page a refusal measures to say which page size fits."""
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

    def __init__(self, tool: str, limit: int | None, *, summary: bool, shape: dict[str, Any] | None = None) -> None:
        self.tool = tool
        self.limit = limit
        self.summary = summary
        self.entity = _carried(shape) if shape is not None else _HEADS if summary else _FULL
        """The least bytes an entity costs in this answer, before its texts (`shape`: the keys
        of an entity as the answer spells them, with empty values, when they are not ours)."""
        self.spent = 0
        """A lower bound of the bytes of what was built so far."""

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
        return selection.weigh(self.entity, CHAR, 0 if self.summary else _OBSERVATION, heads=self.summary,
                               ceiling=self.limit, offset=offset, limit=limit) + relations * _RELATION

    def add(self, record: EntityRecord) -> bool:
        """Count one more entity built; whether the bound is now over the limit."""
        if self.limit is None:
            return False
        chars = len(record.name) + len(record.entity_type)
        if not self.summary:
            shown = record.observations if not record.validity else \
                [o for o in record.observations if o not in record.validity]
            chars += sum(map(len, shown))
            self.spent += _OBSERVATION * len(shown)
        self.spent += self.entity + CHAR * chars
        return self.spent > self.limit

    def add_relation(self, record: RelationRecord) -> bool:
        """Count one more relation built; whether the bound is now over the limit."""
        if self.limit is None:
            return False
        self.spent += _RELATION + CHAR * (len(record.source) + len(record.target) + len(record.relation_type))
        return self.spent > self.limit

    def refuse(self, bound: int, count: int, sample: Callable[[int], tuple[Any, int]], hint: str) -> ReplyTooLargeError:
        """The refusal of an answer (of `count` entities) that takes at least `bound` bytes;
        `sample(n)` builds a page of the answer's first `n` entities (and says how many it holds),
        so the page size that fits is measured on the answer itself; `hint` says how to page,
        with that size for {fit}."""
        assert self.limit is not None
        output, held = sample(min(SAMPLE, max(1, count)))
        each = max(1.0, reply_size(output) / max(1, held))
        fit = max(1, int(self.limit / each * 0.8))
        return ReplyTooLargeError(self.tool, bound, self.limit, hint.format(fit=fit), at_least=True)
