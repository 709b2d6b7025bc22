"""Suggestions that keep a graph clean: likely duplicates, repeated observations, stale facts.

A query, never a change: acting on a suggestion stays `merge_entities`,
`delete_observations` or `invalidate_observations`, each an event.

- **merges**: pairs of entities that are likely one. Candidates share a name word (or a
  surname with an initial: "A. Lovelace"), so the work grows with the workspace, not with
  its square. A pair's confidence comes from its names (one the other's words, an initial
  for a first name, a typo), then its evidence: the same type, shared observations, shared
  neighbours. Names that disagree (two first names beside one surname) are no pair; a
  short name that fits several entities ("Ada" beside two Adas) is only as likely as its
  share.
- **duplicateObservations**: observations of one entity that say the same thing (equal
  once case, punctuation and spacing are set aside, or nearly equal).
- **possiblyStale**: an older observation that a newer one on the same entity appears to
  supersede: the same predicate ("lives in", "moved to" are one), another value. Older and
  newer are by when each was recorded (`provenance.recorded`: a merge moves an observation
  without making it newer), read from the log for the entities where two values compete.

Measured on a labelled set (`bench/bench_suggestions.py`): see docs/performance.md.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated

from chronograph.application.core.provenance import recorded
from chronograph.application.engine.arguments import D, ReadArgs
from chronograph.application.engine.outputs import Out
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.eventstore import LogReader, clock
from chronograph.projections import EntityRecord, Graph
from msgspec import Meta

__all__ = ["Suggestions", "SuggestionsOut", "suggest"]

THRESHOLD = 0.8
"""Suggestions less likely than this are not made unless asked."""
BLOCK = 60
"""A name word shared by more entities than this proposes no pair by itself (a common word)."""
DUPLICATE = 92.0
"""How alike (rapidfuzz's token-sort ratio, 0-100) two observations must be to be one."""
MAX_OBSERVATIONS = 400
"""Observations of one entity compared with each other at most (the newest)."""
HONORIFICS = frozenset("dr mr mrs ms miss prof sir dame mx the".split())

PREDICATES: dict[str, tuple[str, ...]] = {
    "lives in": ("lives in", "moved to", "relocated to", "is based in", "based in", "lives at", "resides in",
                 "now lives in"),
    "works at": ("works at", "works for", "joined", "is employed by", "employed by", "now works at",
                 "moved to work at"),
    "role": ("is a", "is an", "works as", "role is", "became a", "became an", "promoted to"),
    "prefers": ("prefers", "favorite is", "favourite is", "switched to preferring"),
    "uses": ("uses", "switched to", "now uses", "migrated to"),
    "status": ("status is", "is now", "status:"),
    "reports to": ("reports to", "manager is", "managed by"),
    "email": ("email is", "email:", "e-mail is"),
    "phone": ("phone is", "phone:", "phone number is"),
    "age": ("is aged", "age is", "age:"),
}
"""Predicates whose phrasings say the same thing about a subject (one value at a time)."""
MANY = {"uses": ("switched to", "now uses", "migrated to")}
"""Predicates that hold several values at once: a newer value supersedes an older one only when
it says it replaced it (these phrasings)."""
_PHRASES = sorted(((phrase, key) for key, phrases in PREDICATES.items() for phrase in phrases),
                  key=lambda item: -len(item[0]))
_KEY_VALUE = re.compile(r"^\s*([A-Za-z][\w ]{0,30}?)\s*:\s*(\S.*)$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class Suggestions(ReadArgs, kw_only=True):
    threshold: Annotated[float, Meta(ge=0, le=1), D(description="Least confidence")] = THRESHOLD
    limit: Annotated[int, Meta(ge=1, le=1000), D(description="Per kind")] = 50


class MergeOut(Out, kw_only=True):
    entities: list[str]
    confidence: float
    evidence: list[str]


class DuplicateOut(Out, kw_only=True):
    entity: str
    observations: list[str]
    similarity: float


class StaleOut(Out, kw_only=True):
    entity: str
    older: str
    newer: str
    confidence: float
    evidence: str


class SuggestionsOut(Out, kw_only=True):
    merges: list[MergeOut]
    duplicate_observations: list[DuplicateOut]
    possibly_stale: list[StaleOut]


@CORE.query("suggest_cleanup", "Suggest Cleanup", "Likely duplicate entities, repeated and stale observations, "
            "with evidence; writes nothing")
def suggest_cleanup(memory: Memory, args: Suggestions) -> SuggestionsOut:
    """What may need merging, deleting or invalidating in the workspace."""
    with memory.timeline.at("suggest_cleanup") as moment:
        return suggest(moment.graph, args.workspace, args.threshold, args.limit, moment.log, moment.position)


def suggest(graph: Graph, workspace: str, threshold: float = THRESHOLD, limit: int = 50, log: LogReader | None = None,
            position: int | None = None) -> SuggestionsOut:
    """The suggestions for `workspace` at least `threshold` likely, at most `limit` of each kind.
    With `log` (the graph's, as of `position`), stale facts are told by when each was recorded;
    without, by the order of the entity's observations (the order they were added, but for merges)."""
    records = list(graph.entities(workspace))
    now = clock.now_us()
    current = [_current(record, now) for record in records]
    merges = _merges(graph, workspace, records, current, threshold)[:limit]
    duplicates: list[DuplicateOut] = []
    stale: list[StaleOut] = []
    for record, observations in zip(records, current, strict=True):
        duplicates.extend(_duplicates(record.name, observations))
        order = None if log is None else _order(log, record, position)
        stale.extend(s for s in _stale(record.name, observations, order) if s.confidence >= threshold)
    duplicates.sort(key=lambda d: -d.similarity)
    stale.sort(key=lambda s: -s.confidence)
    return SuggestionsOut(merges=merges, duplicate_observations=duplicates[:limit], possibly_stale=stale[:limit])


def _current(record: EntityRecord, now: int) -> list[str]:
    """The observations true now (one whose valid time has ended was invalidated already)."""
    if not record.validity:
        return record.observations
    spans = record.validity
    return [o for o in record.observations if _valid_after(spans.get(o), now)]


def _valid_after(span: tuple[int | None, int | None] | None, now: int) -> bool:
    until = None if span is None else span[1]
    return until is None or until > now


# -- merges ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Name:
    words: tuple[str, ...]
    """The name's words, lowercased, honorifics left out."""

    @property
    def initials(self) -> tuple[str, ...]:
        return tuple(w[0] for w in self.words)


def _name(text: str) -> _Name:
    words = tuple(w for w in (m.lower() for m in _WORD.findall(text)) if w not in HONORIFICS)
    return _Name(words or tuple(m.lower() for m in _WORD.findall(text)))


def _fits(short: str, long: str) -> bool:
    """Whether the name word `short` can stand for `long`: the same word, or its initial."""
    return short == long or (len(short) == 1 and long.startswith(short))


def _name_likeness(a: _Name, b: _Name) -> tuple[float, str] | None:
    """How likely two names name one thing, from the names alone, and why (None: they disagree)."""
    from rapidfuzz.distance import OSA  # noqa: PLC0415 (loaded when suggestions are asked for)

    if not a.words or not b.words:
        return None
    if a.words == b.words:
        return 0.97, "the same name but for case, punctuation or a title"
    shorter, longer = (a, b) if len(a.words) <= len(b.words) else (b, a)
    if len(shorter.words) == len(longer.words):
        if all(_fits(x, y) or _fits(y, x) for x, y in zip(shorter.words, longer.words, strict=True)):
            return 0.9, "the same words, one of them an initial"
        differing = [(x, y) for x, y in zip(a.words, b.words, strict=True) if x != y]
        if len(differing) == 1:  # one word misspelt: a typo inside a real word, never another word or number
            x, y = differing[0]
            if not any(c.isdigit() for c in x + y) and min(len(x), len(y)) >= 4:
                distance = OSA.distance(x, y)
                if distance <= 2 and len(a.words) > 1 and x == a.words[0]:
                    return 0.7, f"first names {distance} letter(s) apart ({x}, {y}): may be two people"
                if distance == 1:
                    return 0.88, "one letter apart"
                if distance == 2 and min(len(x), len(y)) >= 7:
                    return 0.82, "two letters apart"
        return None
    # One name is shorter: each of its words must stand for one of the longer's, in order.
    position = 0
    for word in shorter.words:
        while position < len(longer.words) and not _fits(word, longer.words[position]):
            position += 1
        if position == len(longer.words):
            return None
        position += 1
    if all(len(w) == 1 for w in shorter.words):
        return None  # initials alone name too many things
    if shorter.words[-1] == longer.words[-1] and len(shorter.words) >= 2:
        return 0.9, "the same last name, the first given in full in one and as an initial or left out"
    if shorter.words[-1] == longer.words[-1]:
        return 0.72, f"{' '.join(shorter.words)!r} is the last word of the longer name"
    if shorter.words[0] == longer.words[0]:
        return 0.82, f"{' '.join(shorter.words)!r} begins the longer name"
    return 0.7, "the words of one name are among the other's"


def _merges(graph: Graph, workspace: str, records: list[EntityRecord], current: list[list[str]],
            threshold: float) -> list[MergeOut]:
    names = [_name(record.name) for record in records]
    blocks: dict[str, list[int]] = defaultdict(list)
    for index, name in enumerate(names):
        for word in set(name.words):
            if len(word) > 1:
                blocks[word].append(index)
    pairs: set[tuple[int, int]] = set()
    for members in blocks.values():
        if len(members) > BLOCK:
            continue
        for i, first in enumerate(members):
            for second in members[i + 1:]:
                pairs.add((first, second))
    for index, name in enumerate(names):  # a one-letter typo in the only word that would block them
        if len(name.words) == 1 and len(name.words[0]) >= 6:
            for other in _near(name.words[0], blocks):
                for member in blocks[other][:BLOCK]:
                    if member != index:
                        pairs.add((min(index, member), max(index, member)))
    scored: list[tuple[float, int, int, list[str]]] = []
    fits: dict[int, int] = defaultdict(int)
    for first, second in pairs:
        likeness = _name_likeness(names[first], names[second])
        if likeness is None:
            continue
        score, why = likeness
        shorter = first if len(names[first].words) < len(names[second].words) else second
        if len(names[first].words) != len(names[second].words):
            fits[shorter] += 1
        evidence = [why]
        a, b = records[first], records[second]
        if a.entity_type.lower() != b.entity_type.lower():
            score -= 0.35
            evidence.append(f"different types ({a.entity_type}, {b.entity_type})")
        else:
            evidence.append(f"both {a.entity_type}")
        shared = set(map(_normal, current[first])) & set(map(_normal, current[second]))
        if shared:
            score += min(0.08, 0.04 * len(shared))
            evidence.append(f"{len(shared)} shared observation{'s' if len(shared) > 1 else ''}")
        neighbours = _neighbours(graph, workspace, a.name) & _neighbours(graph, workspace, b.name)
        if neighbours:
            score += min(0.06, 0.03 * len(neighbours))
            evidence.append(f"shared neighbours: {', '.join(sorted(neighbours)[:3])}")
        scored.append((score, first, second, evidence))
    out: list[MergeOut] = []
    for score, first, second, evidence in scored:
        shorter = first if len(names[first].words) < len(names[second].words) else second
        if fits[shorter] > 1 and len(names[first].words) != len(names[second].words):
            score /= fits[shorter] ** 0.5 * 1.2
            evidence.append(f"{records[shorter].name!r} fits {fits[shorter]} entities")
        confidence = round(max(0.0, min(0.99, score)), 2)
        if confidence >= threshold:
            older, newer = sorted((records[first], records[second]), key=lambda r: r.seq)
            out.append(MergeOut(entities=[older.name, newer.name], confidence=confidence, evidence=evidence))
    out.sort(key=lambda m: (-m.confidence, m.entities))
    return out


def _near(word: str, blocks: dict[str, list[int]]) -> Iterable[str]:
    from rapidfuzz import process  # noqa: PLC0415
    from rapidfuzz.distance import OSA  # noqa: PLC0415

    candidates = [w for w in blocks if abs(len(w) - len(word)) <= 1 and w != word and w[0] == word[0]]
    for other, _, _ in process.extract(word, candidates, scorer=OSA.distance, score_cutoff=1, limit=5):
        yield other


def _neighbours(graph: Graph, workspace: str, name: str) -> set[str]:
    return {r.target if r.source == name else r.source for r in graph.relations_of(workspace, name)}


# -- duplicate observations -------------------------------------------------------------------


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _duplicates(entity: str, observations: list[str]) -> list[DuplicateOut]:
    from rapidfuzz import fuzz  # noqa: PLC0415

    found: list[DuplicateOut] = []
    recent = observations[-MAX_OBSERVATIONS:]
    normal = [_normal(o) for o in recent]
    first_of: dict[str, int] = {}
    for index, text in enumerate(normal):
        if text in first_of:
            found.append(DuplicateOut(entity=entity, observations=[recent[first_of[text]], recent[index]],
                                      similarity=1.0))
            continue
        first_of[text] = index
    texts = list(first_of)
    for i, text in enumerate(texts):
        for other in texts[i + 1:]:
            if abs(len(text) - len(other)) > max(len(text), len(other)) * 0.2:
                continue
            if _differ_in_numbers(text, other):
                continue
            similarity = fuzz.token_sort_ratio(text, other, score_cutoff=DUPLICATE)
            if similarity:
                found.append(DuplicateOut(entity=entity, observations=[recent[first_of[text]], recent[first_of[other]]],
                                          similarity=round(similarity / 100, 2)))
    return found


def _differ_in_numbers(a: str, b: str) -> bool:
    """Whether two texts hold different numbers ("meets at 10" is not "meets at 11")."""
    return _numbers(a) != _numbers(b)


def _numbers(text: str) -> list[str]:
    return [word for word in text.split() if any(c.isdigit() for c in word)]


# -- stale facts --------------------------------------------------------------------------------


def _claim(observation: str) -> tuple[str, str] | None:
    """(predicate, value) of an observation that states one, else None."""
    text = " ".join(observation.strip().rstrip(".").split())
    lowered = text.lower()
    for phrase, key in _PHRASES:
        at = lowered.find(phrase)
        if at != -1 and (at == 0 or lowered[at - 1] == " ") and (
                at + len(phrase) == len(lowered) or not lowered[at + len(phrase)].isalnum()):
            subject = lowered[:at].strip()
            if len(subject.split()) > 3:  # the phrase is deep in a sentence: not a claim about the entity
                return None
            value = _normal(text[at + len(phrase):])
            return (key, value) if value else None
    match = _KEY_VALUE.match(text)
    if match:
        return _normal(match.group(1)), _normal(match.group(2))
    return None


def _order(log: LogReader, record: EntityRecord, position: int | None) -> Callable[[], dict[str, int]]:
    """observation -> the log position that recorded it, read when asked."""
    return lambda: {o: first.position for o, (first, _) in recorded(log, record, position).items()}


def _stale(entity: str, observations: list[str], order: Callable[[], dict[str, int]] | None = None) -> list[StaleOut]:
    claims = [(o, claim) for o in observations if (claim := _claim(o)) is not None]
    if order is not None and len({predicate for _, (predicate, _) in claims}) < len(claims):
        when = order()  # two claims of one predicate: read when each was recorded (list order among equals)
        claims.sort(key=lambda item: when.get(item[0], 0))
    latest: dict[str, tuple[str, str]] = {}
    found: list[StaleOut] = []
    for observation, (predicate, value) in reversed(claims):  # newest first: each predicate's newest value stands
        if predicate not in latest:
            latest[predicate] = (value, observation)
            continue
        newest_value, newest = latest[predicate]
        if value == newest_value or value in newest_value or newest_value in value:
            continue
        if predicate in MANY and not newest.lower().lstrip().startswith(MANY[predicate]):
            continue
        known = predicate in PREDICATES
        found.append(StaleOut(entity=entity, older=observation, newer=newest, confidence=0.9 if known else 0.8,
                              evidence=f"both say {predicate!r}, with another value; the newer was recorded later"))
    return found
