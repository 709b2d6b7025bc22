"""A word index as bytes to keep in the store: one image, whole or in parts.

An image holds everything a `WorkspaceIndex` holds, so a new process loads it in milliseconds
instead of indexing every entity. A process that holds the index writes it whole (one value).
A process that does not (an import, a copy, a restore) builds it with a `PartedImage` a part at
a time from the entities in creation order, so that it never holds more than one part's index:
each part is an index of `PART_DOCS` consecutive documents, numbered as in the whole index, and
the head (the value the workspace's key names) holds the last part, the creation order of every
document, and how many parts come before it. Each part is compressed with zstd (level 1: 0.46 of
the bytes, 7 ms to decompress 50,000 documents, where zlib took 40). Loading merges the parts in order: a term new to
the index joins the vocabulary where it first appears, and each document keeps its number, so
the index loaded from the parts is the one a single process would have built from the same
entities, to the byte of its image.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec
from chronograph.projections.records import EntityRecord
from chronograph.projections.sealed import SEAL, encode_sealed, seal, sound
from chronograph.projections.search.wordindex import SEP, TF_BITS, WorkspaceIndex

__all__ = ["IMAGE_FORMAT", "PART_DOCS", "PartedImage", "image_of", "index_of", "loader", "parts_of", "stamp_of"]

IMAGE_FORMAT = 5
"""2: sealed with a checksum (see `projections.sealed`); a damaged image is rebuilt.
3: each document's answer size (characters, observations) and the creation order.
4: in parts: a head holding the last part, and the parts before it under keys of their own.
5: each part, and the head's order and last part, compressed with zstd (171 -> 79 bytes a
document on the benchmarks' graph)."""
T = TypeVar("T")
PART_DOCS = 65_536
"""Documents in each part of an image built a part at a time (about 10 MB at the benchmarks'
150 bytes a document)."""


class _Part(msgspec.Struct, array_like=True, gc=False):
    """The documents `base`... of an index, their terms and postings (documents numbered as in
    the whole index)."""

    format: int
    workspace: str
    base: int
    streams: list[str]
    alive: bytes
    versions: bytes
    seqs: bytes
    lengths: bytes
    vocabulary: str
    postings: list[bytes]
    weights: list[bytes]
    """Each document's heads, chars and observations (see `Volume`)."""


class _Head(msgspec.Struct, array_like=True, gc=False):
    format: int
    workspace: str
    position: int
    total_length: int
    parts: tuple[bytes, int]
    """The image's id and how many parts come before the last (0: the image is whole)."""
    packed: bytes
    """A `_Tail`, compressed."""


class _Tail(msgspec.Struct, array_like=True, gc=False):
    order: bytes
    """The live documents in creation order."""
    last: _Part


class _Stamp(msgspec.Struct, array_like=True, gc=False):
    """The start of a head (the rest is skipped, not decoded)."""

    format: int
    workspace: str
    position: int


_stamp_decoder = msgspec.msgpack.Decoder(_Stamp)
_head_decoder = msgspec.msgpack.Decoder(_Head)
_tail_decoder = msgspec.msgpack.Decoder(_Tail)
_part_decoder = msgspec.msgpack.Decoder(_Part)
_encoder = msgspec.msgpack.Encoder()


def _packed(value: msgspec.Struct) -> bytes:
    """`value`'s msgpack, compressed."""
    import zstandard  # noqa: PLC0415 (5 ms, paid by the processes that keep or load an image)

    return zstandard.ZstdCompressor(level=1).compress(_encoder.encode(value))


def _unpacked(data: bytes, decoder: msgspec.msgpack.Decoder[T]) -> T | None:
    """What `_packed` made of it (None if it is not that)."""
    import zstandard  # noqa: PLC0415

    try:
        return decoder.decode(zstandard.ZstdDecompressor().decompress(data))
    except (zstandard.ZstdError, msgspec.DecodeError):
        return None


def image_of(index: WorkspaceIndex, parts: tuple[bytes, int] = (b"", 0), base: int = 0,
             total_length: int | None = None, order: bytes | None = None) -> bytes:
    """The head of `index`'s image: the whole index, or (with `parts`) the last part of an image
    in parts, numbered from `base`, with the whole image's `total_length` and `order`."""
    if len(index._streams) > 2 * len(index._docs):
        index._compact()
    if order is None:
        ordered = index._in_order()
        order = array("I", itertools.compress(ordered, map(index._alive.__getitem__, ordered))).tobytes()
    return encode_sealed(_encoder, _Head(IMAGE_FORMAT, index.workspace, index.position,
                         index._total_length if total_length is None else total_length, parts,
                         _packed(_Tail(order, _part(index, base)))))


def _part(index: WorkspaceIndex, base: int) -> _Part:
    """`index`'s documents as a part whose first document is `base`."""
    if base:
        shift = base << TF_BITS
        postings = [array("I", map(operator.add, posting, itertools.repeat(shift, len(posting)))).tobytes()
                    for posting in index._postings]
    else:
        postings = [posting.tobytes() for posting in index._postings]
    return _Part(IMAGE_FORMAT, index.workspace, base, index._streams, bytes(index._alive), index._versions.tobytes(),
                 index._seqs.tobytes(), index._lengths.tobytes(), SEP.join(index._vocabulary), postings,
                 [index._heads.tobytes(), index._chars.tobytes(), index._notes.tobytes()])


def stamp_of(head: bytes) -> tuple[str, int] | None:
    """The workspace and the position of an image's head, read without decoding or checking the
    rest (None: of another format)."""
    try:
        stamp = _stamp_decoder.decode(head)
    except msgspec.DecodeError:
        return None
    return (stamp.workspace, stamp.position) if stamp.format == IMAGE_FORMAT else None


def parts_of(head: bytes) -> tuple[bytes, int] | None:
    """The id and the count of the parts an image's head needs read beside it (None: damaged, or
    of another format)."""
    decoded = _decode_head(head)
    return None if decoded is None else decoded.parts


def _decode_head(data: bytes) -> _Head | None:
    if not sound(data):
        return None
    try:
        head = _head_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    return head if head.format == IMAGE_FORMAT else None


def index_of(head_data: bytes, parts: Sequence[bytes] = ()) -> WorkspaceIndex | None:
    """The index an image holds: its head and the parts it names, in order (None if it is of
    another format, damaged, or a part is missing)."""
    head = _decode_head(head_data)
    if head is None or head.parts[1] != len(parts):
        return None
    decoded = []
    for data in parts:
        part = _unpacked(data[:-SEAL], _part_decoder) if sound(data) else None
        if part is None:
            return None
        decoded.append(part)
    tail = _unpacked(head.packed, _tail_decoder)
    if tail is None:
        return None
    decoded.append(tail.last)
    if any(part.format != IMAGE_FORMAT or part.workspace != head.workspace for part in decoded):
        return None
    index = WorkspaceIndex(head.workspace)
    index.position = head.position
    if not all(_merge(index, part) for part in decoded):
        return None
    index._total_length = head.total_length
    index._order.frombytes(tail.order)
    alive = index._alive
    index._docs = {stream: doc for doc, stream in enumerate(index._streams) if alive[doc]}
    if len(index._order) != len(index._docs) or (index._order and max(index._order) >= len(index._streams)):
        return None
    index._totals = [sum(itertools.compress(column, alive)) for column in (index._heads, index._chars, index._notes)]
    index._place = None  # built when a change first needs it
    return index


def _merge(index: WorkspaceIndex, part: _Part) -> bool:
    """Add `part`'s documents and postings to `index`; whether they fit (the part starts where the
    index ends, and its columns agree)."""
    if part.base != len(index._streams) or len(part.weights) != 3:
        return False
    count = len(part.streams)
    index._streams += part.streams
    index._alive += part.alive
    index._versions.frombytes(part.versions)
    index._seqs.frombytes(part.seqs)
    index._lengths.frombytes(part.lengths)
    for column, data in zip((index._heads, index._chars, index._notes), part.weights, strict=True):
        column.frombytes(data)
    total = part.base + count
    if {len(index._alive), len(index._versions), len(index._seqs), len(index._lengths), len(index._heads),
            len(index._chars), len(index._notes)} != {total}:
        return False
    vocabulary = part.vocabulary.split(SEP) if part.vocabulary else []
    if len(vocabulary) != len(part.postings):
        return False
    if not index._vocabulary:  # the first part: taken as it is
        index._vocabulary = vocabulary
        index._ids = {term: tid for tid, term in enumerate(vocabulary)}
        index._postings = [array("I", posting) for posting in part.postings]
        return True
    ids, known, postings = index._ids, index._vocabulary, index._postings
    for term, posting in zip(vocabulary, part.postings, strict=True):
        tid = ids.get(term)
        if tid is None:  # first met in this part: it joins the vocabulary here, as it did when indexed
            ids[term] = len(known)
            known.append(term)
            postings.append(array("I", posting))
        else:
            postings[tid].frombytes(posting)
    return True


class PartedImage:
    """An image built a part at a time from a workspace's entities, in creation order: `put` each
    entity (it returns a part's bytes when one is full, to keep under `part_key(n)`), then
    `head` gives the head. Holds one part's index, and four bytes a document for the order."""

    def __init__(self, workspace: str, image_id: bytes, *, docs: int = PART_DOCS) -> None:
        self.workspace = workspace
        self.image_id = image_id
        self.docs = docs
        self.parts = 0
        """The parts returned so far."""
        self._index = WorkspaceIndex(workspace)
        self._base = 0
        self._total_length = 0
        self._seqs = array("Q")
        self._ordered = True

    def put(self, record: EntityRecord) -> bytes | None:
        """Index `record` (a live entity not met before); a full part's bytes, or None."""
        if self._seqs and record.seq < self._seqs[-1]:
            self._ordered = False
        self._seqs.append(record.seq)
        self._index.put(record)
        if len(self._index) < self.docs:
            return None
        return self._cut()

    def _cut(self) -> bytes:
        index = self._index
        part = seal(_packed(_part(index, self._base)))
        self._base += len(index._streams)
        self._total_length += index._total_length
        self.parts += 1
        self._index = WorkspaceIndex(self.workspace)
        return part

    def head(self, position: int) -> bytes:
        """The head of the image, current at `position` (after the last `put`)."""
        seqs = self._seqs
        documents = range(len(seqs))
        order = array("I", documents if self._ordered else sorted(documents, key=seqs.__getitem__))
        self._index.position = position
        return image_of(self._index, (self.image_id, self.parts), self._base,
                        self._total_length + self._index._total_length, order.tobytes())


def loader(head: bytes, part: Callable[[bytes, int], bytes | None]) -> WorkspaceIndex | None:
    """The index of an image whose head is `head`, its parts read with `part(image id, number)`."""
    named = parts_of(head)
    if named is None:
        return None
    image_id, count = named
    found = []
    for number in range(count):
        data = part(image_id, number)
        if data is None:
            return None
        found.append(data)
    return index_of(head, found)
