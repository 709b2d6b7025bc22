"""What search_nodes' filters keep (entityTypes, relationTypes, metadata), and the relations its
answer lists, all at one valid time: a relation whose valid time ended (or has not begun) neither
lets an entity pass relationTypes nor is listed, and metadata is compared as JSON (`1` is not
`true`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from chronograph.application.core.validtime import valid_relation
from chronograph.application.engine.jsonvalues import same_json
from chronograph.projections import EntityRecord, Graph, RelationRecord, relations_touching

__all__ = ["Filter", "everything"]


def everything(record: EntityRecord) -> bool:
    """The filter that keeps every entity."""
    return True


class Filter:
    """Whether an entity passes the filters; and the relations of the types asked for, true at `valid`."""

    def __init__(self, graph: Graph, workspace: str, *, valid: int, types: Iterable[str] | None = None,
                 relation_types: Iterable[str] | None = None, metadata: dict[str, Any] | None = None) -> None:
        self.graph = graph
        self.workspace = workspace
        self.valid = valid
        """The valid time (µs) the answer is for, read once: validAt, else now."""
        self.types = None if types is None else set(types)
        self.relation_types = None if relation_types is None else set(relation_types)
        self.metadata = metadata
        self.active = self.types is not None or self.relation_types is not None or self.metadata is not None
        """Whether any filter was asked for."""

    def __call__(self, record: EntityRecord) -> bool:
        if self.types is not None and record.entity_type not in self.types:
            return False
        if self.metadata is not None:
            held = record.metadata or {}
            if any(key not in held or not same_json(held[key], value) for key, value in self.metadata.items()):
                return False
        return self.relation_types is None or any(True for _ in self.relations([record.name]))

    def relations(self, names: Iterable[str]) -> Iterator[RelationRecord]:
        """The relations touching `names` that are true at `valid` and of the types asked for, each
        once, oldest first."""
        found = relations_touching(self.graph, self.workspace, names)
        kinds, valid = self.relation_types, self.valid
        return (r for r in found if (kinds is None or r.relation_type in kinds) and valid_relation(r, valid))
