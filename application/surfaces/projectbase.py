"""The base of a three-way fold of a project's `.mcp/memory.json`: which of its lines this store
wrote, kept as keyed digests in what `knownprojects` records of the files.

A file changed since the store wrote it may be behind the log too (a process killed between a
commit and its mirror, then an edit or a `git pull` into the stale file). Folded whole, what the
log deleted since would be parked as conflicts, and an entity it erased (whose name the log no
longer holds) created again. So each line of the file as written is recorded: an entity's name
and type, each of its observations, each relation. Folding, a line still as written takes the
log's state (it is left out of the fold; the mirror that follows writes what the log holds),
and only the lines edited since are folded (`edited`).

A line is kept as a 16-byte BLAKE2b digest keyed with the store's own random secret (beside the
views: `knownprojects.secret`), never as text: without the secret, a digest cannot confirm a
guess of what a line said. The digests are grouped by entity, under a keyed digest of its name
(a relation's under both its ends'), so that what no longer exists can be taken out (`kept`).
A record written after an erasure holds none of the erased entity's lines (its lines are
those of a file written from the log, or kept only for live entities), and `knownprojects.wrote`
scrubs the store's file of the record it replaced.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from hashlib import blake2b
from typing import Any

import msgspec

__all__ = ["SECRET_SIZE", "Lines", "edited", "kept", "lines"]

SECRET_SIZE = 32
"""The bytes of the secret the digests are keyed with (BLAKE2b takes up to 64)."""


class Lines(msgspec.Struct, frozen=True, array_like=True):
    """The keyed digests of the lines of a `memory.json` as the store wrote it: keyed digest of an
    entity's name -> those of its name and type, its observations and the relations it is an end of."""

    entities: dict[bytes, list[bytes]]

    def held(self) -> set[bytes]:
        """Every line's digest."""
        return {line for group in self.entities.values() for line in group}


def lines(graph: dict[str, Any], secret: bytes, memo: dict[tuple[str, ...], list[bytes]] | None = None) -> Lines:
    """The lines of the n2n graph `graph` as the mirror writes it (`entities`, each with `name`,
    `entityType`, `observations`; `relations`, each with `from`, `relationType`, `to`).

    `memo`: the digests the previous call for this project made, by entity and relation, not made
    again (a mirror writes the whole file after each change, most of it as it was); it is left
    holding this call's only, so nothing the graph no longer holds stays in it."""
    last, now = memo or {}, {}

    def made(key: tuple[str, ...]) -> list[bytes]:
        """The digests of an entity's lines, ("e", name, type, *observations), or of one line."""
        found = last.get(key)
        if found is None and key[0] == "e":
            found = [_digest(secret, *key[:3]), *(_digest(secret, "o", key[1], o) for o in key[3:])]
        elif found is None:
            found = [_digest(secret, *key)]
        now[key] = found
        return found

    groups: dict[str, list[bytes]] = {}
    for entity in graph["entities"]:
        groups.setdefault(entity["name"], []).extend(
            made(("e", entity["name"], entity["entityType"], *entity["observations"])))
    for relation in graph["relations"]:
        [digest] = made(("r", relation["from"], relation["relationType"], relation["to"]))
        for end in dict.fromkeys((relation["from"], relation["to"])):
            groups.setdefault(end, []).append(digest)
    out = Lines({made(("n", name))[0]: group for name, group in groups.items()})
    if memo is not None:
        memo.clear()
        memo.update(now)
    return out


def edited(value: Any, base: Lines, secret: bytes) -> Any:
    """What of a `memory.json` whose JSON is `value` was edited since the store wrote the lines
    of `base`: its entities, observations and relations not as written. An entity whose name and
    type are as written is kept only for observations added since (with those alone); one whose
    name or type changed, with every observation not as written. Anything not in n2n's shape
    is left as it is, for the fold to refuse."""
    if not isinstance(value, dict):
        return value
    held, out = base.held(), dict(value)
    if isinstance(entities := value.get("entities"), list):
        out["entities"] = [item for item in (_entity(entity, held, secret) for entity in entities) if item is not None]
    if isinstance(relations := value.get("relations"), list):
        out["relations"] = [relation for relation in relations
                            if _line(secret, relation, "r", "from", "relationType", "to") not in held]
    return out


def kept(base: Lines, names: Iterable[str], secret: bytes) -> Lines:
    """`base` with the lines of the entities called `names` only: those of any other entity go,
    with the relations it is an end of."""
    keys = {_digest(secret, "n", name) for name in names}
    gone = {line for key, group in base.entities.items() if key not in keys for line in group}
    return Lines({key: [line for line in group if line not in gone]
                  for key, group in base.entities.items() if key in keys})


def _entity(entity: Any, held: set[bytes], secret: bytes) -> Any:
    """The entity `entity` of a file with what is as written taken out (None: all of it is)."""
    header = _line(secret, entity, "e", "name", "entityType")
    if header is None or not isinstance(observations := entity.get("observations", []), list):
        return entity
    name = entity["name"]
    fresh = [o for o in observations if not (isinstance(o, str) and _digest(secret, "o", name, o) in held)]
    if header in held and not fresh:
        return None
    return {**entity, "observations": fresh}


def _line(secret: bytes, item: Any, kind: str, *fields: str) -> bytes | None:
    """The digest of the line `item` of a file, made of its `fields` (None: not such a line)."""
    if not isinstance(item, dict) or not all(isinstance(item.get(field), str) for field in fields):
        return None
    return _digest(secret, kind, *(item[field] for field in fields))


def _digest(secret: bytes, kind: str, *parts: str) -> bytes:
    """The digest of a line: a BLAKE2b keyed with `secret`, fed each part, its length first."""
    digest = _keyed(secret).copy()  # cheaper than keying a new one: a mirror digests every line it writes
    for part in (kind, *parts):
        data = part.encode("utf-8", "surrogatepass")  # a file's text may hold lone surrogates
        digest.update(len(data).to_bytes(4, "big"))
        digest.update(data)
    return digest.digest()


@lru_cache(maxsize=4)
def _keyed(secret: bytes) -> Any:
    return blake2b(key=secret, digest_size=16)
