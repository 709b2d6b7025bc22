"""Key layouts of the view databases.

Every key of a workspace starts with its 4-byte `workspace_key`, the number the views gave it
when they first met it (`number_key` keeps it), so one workspace's keys are contiguous and,
the prefixes all being one length, another's can never be reached by a prefix scan.
"""

from __future__ import annotations

import re

import msgspec
from chronograph.eventstore.compact import relation_stream
from chronograph.eventstore.keys import Stored, digest, pack_u32, pack_u64, stream_key, text_key, unpack_u64

__all__ = [
    "ANSWER_CACHES",
    "ENTITY",
    "INCOMING",
    "LAST_NUMBER",
    "LAST_WORKSPACE",
    "NO_WORKSPACE",
    "OUTGOING",
    "RELATION",
    "VECTORS",
    "adjacency_end",
    "adjacency_key",
    "adjacency_key_of",
    "adjacency_name",
    "adjacency_pair",
    "adjacency_prefix",
    "context_key",
    "identity_value",
    "is_totals_key",
    "name_key",
    "number_key",
    "order_key",
    "order_prefix",
    "record_key",
    "relation_key",
    "totals_key",
    "type_count_key",
    "vector_prefix",
    "workspace_key",
    "workspace_of",
]

ENTITY = b"e"
RELATION = b"r"
OUTGOING = b"o"
INCOMING = b"i"
_TOTALS = b"\x00"
_CONTEXT = b"c"


_NUMBERS = b"\xff" * 4
"""workspaces: the prefix of the keys that number the workspaces (number 0xFFFFFFFF is never given)."""
LAST_NUMBER = _NUMBERS + b"#"
"""workspaces: the last number given (a `workspace_key`, sealed)."""
NO_WORKSPACE = bytes(4)
"""The prefix of a workspace the views have not met (number 0 is never given: no key starts with it)."""
LAST_WORKSPACE = 0xFFFF_FFFE
"""The highest number a workspace is given."""


def workspace_key(number: int) -> bytes:
    """The 4-byte prefix of every key of the workspace numbered `number` (view format 8; format 7
    took a 16-byte digest of the name: 12 bytes more in each of five tables' keys)."""
    return pack_u32(number)


def number_key(workspace: str) -> bytes:
    """workspaces: `workspace`'s name -> its `workspace_key`, sealed."""
    return _NUMBERS + b"n" + text_key(workspace)


def record_key(stream: str) -> bytes:
    """entities: stream -> record, and identities: a relation's stream -> its `relation_key`,
    under the stream's `stream_key`.

    The order index holds an entity's key as its value (view format 4; format 3 kept the
    text). An entity's key keeps its stream's time order (format 5; format 4 took its digest,
    so every new entity landed on a random leaf and left the pages two-thirds full).
    """
    return stream_key(stream)


def relation_key(workspace: bytes, seq: int) -> bytes:
    """relations: (workspace, creation position) -> RelationRecord, so that a workspace's
    relations lie in creation order and a new one lands at the tree's right edge (view format 7);
    `identities` maps each relation's `record_key` to this key."""
    return workspace + pack_u64(seq)


def identity_value(spelled: bool, key: bytes) -> bytes:
    """identities: what a relation's stream maps to, its `relation_key`, without the workspace's
    number when the stream is the one its fields spell (`relation_stream`; view format 9: every
    relation's stream but one an erasure renamed), whose workspace `workspace_of` reads back."""
    return key[4:] if spelled else key


def workspace_of(stream: str) -> str | None:
    """The workspace a relation's stream spells (`relation_stream`, to the byte), or None for
    another stream."""
    if not stream.startswith(_RELATION_STREAM):
        return None
    try:
        identity = _spelled_identity(stream[len(_RELATION_STREAM):])
    except msgspec.DecodeError:  # a ValidationError is one
        return None
    return identity[0] if relation_stream(*identity) == stream else None


_RELATION_STREAM = "relation:"
_spelled_identity = msgspec.json.Decoder(tuple[str, str, str, str]).decode


def name_key(workspace: bytes, name: str) -> bytes:
    """names: (workspace, name) -> NameRecord."""
    return workspace + text_key(name)


def order_prefix(workspace: bytes, kind: bytes) -> bytes:
    """order: the prefix of a workspace's entities (ENTITY; relations keep their own order, see
    `relation_key`)."""
    return workspace + kind


def order_key(workspace: bytes, kind: bytes, seq: int) -> bytes:
    """order: (workspace, ENTITY, creation position) -> stream key (a workspace's relations are
    in creation order in their own table, see `relation_key`)."""
    return workspace + kind + pack_u64(seq)


def adjacency_prefix(workspace: bytes, name: str, direction: bytes) -> bytes:
    """adjacency: the prefix of the flat keys of the relations leaving (OUTGOING) or reaching
    (INCOMING) `name` (see `adjacency_key`)."""
    return adjacency_name(workspace, name) + direction


def adjacency_name(workspace: bytes, name: str) -> bytes:
    """adjacency: the key under which the table keeps every relation end of `name` (see
    `adjacency_pair`)."""
    return workspace + digest(name.encode("utf-8", "surrogatepass"), 16)


def adjacency_key(workspace: bytes, name: str, direction: bytes, seq: int) -> bytes:
    """adjacency: (workspace, name, direction, relation creation position): the workspace and the
    position are the relation's `relation_key`. The table keeps it as an `adjacency_pair`."""
    return adjacency_prefix(workspace, name, direction) + pack_u64(seq)


def adjacency_pair(key: bytes) -> tuple[bytes, bytes]:
    """How the adjacency table keeps an `adjacency_key`: the name's key (`adjacency_name`) and,
    as one of its sorted duplicates of 8 bytes, the direction followed by the relation's creation
    position less its first byte, always 0 (`adjacency_end` reads it back). View format 10: one
    key a name, not one a direction (a key of its own per relation end took 236 bytes an entity at
    50k, one a direction 207, one a name 132). Pairs sort as the flat keys do, so rows made of
    flat keys are written as they are sorted.

    Raises:
        OverflowError: For a creation position of 2**56 or more (a log of 72 quadrillion events).
    """
    if key[-8]:
        raise OverflowError(f"a relation created at position {unpack_u64(key[-8:])} is past what the views keep")
    return key[:-9], key[-9:-8] + key[-7:]


def adjacency_key_of(key: Stored, value: Stored) -> bytes:
    """The `adjacency_key` an `adjacency_pair` keeps."""
    return bytes(key) + bytes(value[:1]) + b"\0" + bytes(value[1:])


def adjacency_end(value: Stored) -> tuple[bytes, bytes]:
    """(direction, the relation's creation position as 8 bytes) of a duplicate in adjacency (see
    `adjacency_pair`)."""
    return bytes(value[:1]), b"\0" + bytes(value[1:])


def totals_key(workspace: bytes) -> bytes:
    """workspaces: a workspace's WorkspaceRecord."""
    return workspace + _TOTALS


def is_totals_key(key: bytes) -> bool:
    """Whether a workspaces key is some workspace's `totals_key`."""
    return len(key) == 5 and key[4:] == _TOTALS


def context_key(workspace: bytes) -> bytes:
    """workspaces: a workspace's ContextRecord."""
    return workspace + _CONTEXT


def type_count_key(workspace: bytes, kind: bytes, type_name: str) -> bytes:
    """workspaces: how many live entities (ENTITY) or relations (RELATION) have a type."""
    return workspace + kind + text_key(type_name)


VECTORS = "vectors.v1"
"""The database of the embeddings: (model prefix + entity stream) -> vector, and each model
prefix alone -> the position its vectors are current through."""


def vector_prefix(model: str) -> bytes:
    """vectors: the 8-byte prefix of every key of `model`."""
    return digest(model.encode(), 8)


ANSWER_CACHES = re.compile(r"replies\.v\d+")
"""The databases that keep answers a server gave (the stdio front's `replies.v<n>`). They are
derived from the code, not the log, but an answer may quote what the store held: every
erasure drops them whole, wherever it happens (a cache refills by itself)."""
