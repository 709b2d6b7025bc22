"""A Kuzu memory graph database as records of the import (`--from kuzu`).

The Kuzu memory graph server keeps each database in one Kuzu file (`memory.kuzu`, and one file
per further database), with one node table and one relation table:
`Entity(name STRING PRIMARY KEY, type STRING, observations STRING[], embedding FLOAT[384],
created_date DATE, updated_date DATE)` and `RELATED_TO(FROM Entity TO Entity,
relationship_type STRING, confidence FLOAT, created_date DATE)`. As in the `kuzu` profile, a
database is the workspace of its name (the file's stem): a database file imports into one
workspace, a folder of them into one each. Relations keep their confidence, entities their
creation date (`importedCreatedAt`); embeddings are not imported (ours are made by our model).

Kuzu's files are read by Kuzu itself, the optional extra `chronograph[kuzu]`, opened read-only
and read a row at a time (never the whole graph).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chronograph.application.lifecycle.sources import Placed, Source, SourceError, provenance, register

__all__ = ["KUZU"]

MAGIC = b"KUZU"
INSTALL = "pip install 'chronograph[kuzu]' (in a checkout: uv sync --extra kuzu)"


def _is_database(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as file:
        return file.read(len(MAGIC)) == MAGIC


def _databases(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix == ".kuzu" and _is_database(p))
    return [path]


def _recognises(path: Path) -> bool:
    return _is_database(path) or (path.is_dir() and bool(_databases(path)))


def read(path: Path, workspace: str) -> Iterator[Placed]:
    """The records of the Kuzu database (or folder of them) at `path`, a workspace per database,
    each placed by its database and the entity's name (a relation's ends and type).

    Raises:
        SourceError: If Kuzu is not installed, or a file is no Kuzu memory graph (nothing is written).
    """
    try:
        import kuzu  # noqa: PLC0415 (an optional extra, loaded only to read Kuzu)
    except ImportError:
        raise SourceError(f"reading a Kuzu database needs the kuzu package: {INSTALL}") from None
    origin = {"importedFrom": provenance(KUZU, path)}
    for database in _databases(path):
        yield "", {"type": "workspace", "name": database.stem}
        try:
            db = kuzu.Database(str(database), read_only=True)
            connection = kuzu.Connection(db)
            tables = {row[1] for row in _rows(connection.execute("CALL show_tables() RETURN *"))}
        except RuntimeError as error:
            raise SourceError(f"{database} cannot be opened as a Kuzu database ({_first_line(error)}); nothing "
                              "was written") from None
        if not {"Entity", "RELATED_TO"} <= tables:
            raise SourceError(f"{database} is a Kuzu database but not a Kuzu memory graph (no Entity and "
                              "RELATED_TO tables); nothing was written")
        try:
            entities = connection.execute(
                "MATCH (e:Entity) RETURN e.name, e.type, e.observations, e.created_date ORDER BY e.name")
            for name, kind, observations, created in _rows(entities):
                record: dict[str, Any] = {"type": "entity", "name": name, "entityType": kind or "entity",
                                          "observations": [o for o in observations or [] if o],
                                          "metadata": origin}
                if created is not None:
                    record["createdAt"] = created.isoformat()
                yield f"{database.name}: entity {_shown(name)}", record
            relations = connection.execute(
                "MATCH (a:Entity)-[r:RELATED_TO]->(b:Entity) RETURN a.name, b.name, r.relationship_type, "
                "r.confidence")
            for source, target, kind, confidence in _rows(relations):
                relation: dict[str, Any] = {"type": "relation", "from": source, "to": target,
                                            "relationType": kind or "RELATED_TO"}
                if confidence is not None:
                    relation["confidence"] = round(float(confidence), 6)
                yield f"{database.name}: relation {_shown(source)} -[{_shown(kind)}]-> {_shown(target)}", relation
        except RuntimeError as error:
            raise SourceError(f"{database}: Kuzu could not read it ({_first_line(error)}); nothing was "
                              "written") from None
        finally:
            connection.close()
            db.close()


def _rows(result: Any) -> Iterator[list[Any]]:
    """A query's rows, one at a time."""
    while result.has_next():
        yield result.get_next()


def _shown(value: Any) -> str:
    """A name in a record's place, cut short: the problem's own words say the rest."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


KUZU = register(Source("kuzu", "a Kuzu memory graph database", _recognises, read))
