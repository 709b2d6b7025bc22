"""Forgetting, as the views see it: every trace of erased streams taken out of what the log fed.

The log runs the views' erase hook inside the erasure's own transaction, with the events
as they were before they were erased. From them the hook learns what the views may hold
(the names an entity bore, the relations) and removes it: the live records with their
indexes and counts, the streams from every name's history, the embeddings, the saved
search index of each workspace concerned, and the snapshots from the first erased event
on (a snapshot before it never saw the erased content). What is left equals a fold of the
erased log, which is what a rebuild would produce.

Databases of kept answers (`ANSWER_CACHES`) are emptied whole: an answer may quote anything.
The tables whose keys spell an entity's text (`repack_texts`: a type's count, a name) are
rewritten whole: a branch page keeps a deleted key as a separator.

Caches that live outside the transaction (a process's search indexes, past graphs,
vector matrices, snapshots and images about to be saved) compare the log's erasure count
with the one they were filled at, and let go of what they hold when it moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import lmdb
from chronograph.eventstore import EntityCreated, EntityRenamed, Envelope, LmdbEnv, RelationCreated
from chronograph.projections.keys import ANSWER_CACHES
from chronograph.projections.states.lmdbstate import LmdbState
from chronograph.projections.tables import Tables

__all__ = ["Erased", "drop_answers", "erased", "purge_orphan_vectors", "purge_views", "purge_vectors", "repack_texts"]


class Erased:
    """What the original events of an erasure say the views may hold."""

    def __init__(self) -> None:
        self.entities: dict[str, set[tuple[str, str]]] = {}
        """entity stream -> every (workspace, name) it bore"""
        self.relations: dict[str, set[int]] = {}
        """relation stream, under the id it had -> the positions of the creations erased in it (a
        stream another relation took up keeps that one's events)"""
        self.workspaces: set[str] = set()

    @property
    def streams(self) -> set[str]:
        """Every erased stream, under the id it had."""
        return {*self.entities, *self.relations}


def erased(originals: Iterable[Envelope]) -> Erased:
    """What `originals` (an erasure's events as they were, oldest first) put in the views."""
    found = Erased()
    workspace_of: dict[str, str] = {}
    for envelope in originals:
        event = envelope.event
        if isinstance(event, EntityCreated):
            workspace_of[envelope.stream] = event.workspace
            found.entities.setdefault(envelope.stream, set()).add((event.workspace, event.name))
            found.workspaces.add(event.workspace)
        elif isinstance(event, EntityRenamed) and envelope.stream in workspace_of:
            workspace = workspace_of[envelope.stream]
            found.entities[envelope.stream].update({(workspace, event.name), (workspace, event.previous)})
        elif isinstance(event, RelationCreated):
            found.relations.setdefault(envelope.stream, set()).add(envelope.position)
            found.workspaces.add(event.workspace)
    return found


def purge_views(state: LmdbState, what: Erased) -> None:
    """Remove the erased entities and relations from the live views: records, indexes,
    counts, and each stream from the history of every name it bore. A relation goes if the event
    that created it was erased (its record keeps that position, `seq`)."""
    for stream in what.entities:
        entity = state.get_entity(stream)
        if entity is not None:
            state.remove_entity(entity)
    for stream, created in what.relations.items():
        relation = state.get_relation(stream)
        if relation is not None and relation.seq in created:
            state.remove_relation(relation)
    for stream, names in what.entities.items():
        for workspace, name in names:
            state.drop_name_stream(workspace, name, stream)


def purge_vectors(txn: lmdb.Transaction, db: lmdb._Database, streams: Sequence[str]) -> int:
    """Delete the embeddings of `streams` under every model in the vectors database; return
    how many went. A model's keys share an 8-byte prefix, so each model is one seek."""
    gone = 0
    with txn.cursor(db) as cursor:
        found = cursor.first()
        while found:
            prefix = bytes(cursor.key())[:8]
            for stream in streams:
                if txn.delete(prefix + stream.encode(), db=db):
                    gone += 1
            following = _after(prefix)
            found = following is not None and cursor.set_range(following)
    return gone


def purge_orphan_vectors(txn: lmdb.Transaction, db: lmdb._Database, state: LmdbState) -> int:
    """Delete the embeddings of entities the views no longer hold (forgotten while these views
    were away, or gone otherwise: no answer uses them); return how many went."""
    orphans = []
    with txn.cursor(db) as cursor:
        for key in cursor.iternext(values=False):
            stream = bytes(key)[8:]  # after the model's prefix; a prefix alone is its checkpoint
            if stream and state.get_entity(stream.decode("utf-8", "surrogatepass")) is None:
                orphans.append(bytes(key))
    for key in orphans:
        txn.delete(key, db=db)
    return len(orphans)


def drop_answers(env: LmdbEnv, txn: lmdb.Transaction) -> int:
    """Empty every database of kept answers (`ANSWER_CACHES`) in `txn`, found by name, whoever
    opened them; return how many there were."""
    with txn.cursor() as cursor:  # the main database: one key per named database
        names = [bytes(key) for key, _ in cursor]
    found = [name for name in names if ANSWER_CACHES.fullmatch(name.decode("utf-8", "replace"))]
    for name in found:
        txn.drop(env.env.open_db(name, txn=txn, create=False), delete=False)
    return len(found)


def repack_texts(txn: lmdb.Transaction, tables: Tables, *, names: bool = False) -> None:
    """Rewrite whole, in key order, the tables whose keys spell text an erased entity gave:
    `workspaces` (each type's count, `keys.type_count_key`: small) and, with `names`, `names`
    (`keys.name_key`). A key deleted from a B-tree stays in the file as a separator in a branch
    page when it was the first of a page that split, and no scrub of free pages reaches it; after a
    rewrite every separator is a key the table holds. The names are rewritten only when the
    erased names are not known to look for (`LmdbEnv.scrub`'s needles): after an erasure made
    by another process, which this one folds from its records alone."""
    for db in (tables.workspaces, tables.names) if names else (tables.workspaces,):
        with txn.cursor(db) as cursor:
            items = [(bytes(key), bytes(value)) for key, value in cursor]
        txn.drop(db, delete=False)
        with txn.cursor(db) as cursor:
            cursor.putmulti(items, append=True)


def _after(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key that starts with `prefix` (None: there is none)."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes([stripped[-1] + 1]) if stripped else None

