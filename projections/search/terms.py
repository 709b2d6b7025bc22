"""The words of a text as the word index sees them: an entity's searchable texts, the terms of
a text (runs of word characters, lowercased), the terms a ranked or fuzzy query ranks by
(stopwords left out), and how many edits fuzzy search forgives in a term."""

from __future__ import annotations

import re

from chronograph.projections.records import EntityRecord

__all__ = ["DIGIT", "STOPWORDS", "TERM", "edits_allowed", "entity_terms", "folded", "matches", "query_terms",
           "terms"]

TERM = re.compile(r"\w+")
DIGIT = re.compile(r"\d")


def folded(record: EntityRecord) -> tuple[str, ...]:
    """The searchable texts of an entity, lowercased: name, type, then observations."""
    return (record.name.lower(), record.entity_type.lower(), *(o.lower() for o in record.observations))


def entity_terms(record: EntityRecord) -> list[str]:
    """The terms of all of an entity's searchable texts (those of `folded`), in order: one pass
    over them joined by a line break, which no term spans and which leaves lowercasing as it
    is text by text; half the time of a pass per text."""
    return TERM.findall("\n".join((record.name, record.entity_type, *record.observations)).lower())


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
    if len(term) <= 3 or DIGIT.search(term):
        return 0
    return 1 if len(term) <= 7 else 2
