"""The address of a log in PostgreSQL: a database URL and a schema; read without the driver.

    postgresql://user@host:5432/dbname                   schema "chronograph"
    postgresql://user@host/dbname?schema=team_memory     another log in the same database
"""

from __future__ import annotations

import re
from os import PathLike
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

from chronograph.eventstore.errors import StoreOpenError

__all__ = ["is_database_url", "refuse_mistyped_url", "shown", "split_url"]

_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:/+[^:/@?#]*):[^@/?#]*@")
"""The password in what begins as a URL (`scheme://user:password@`)."""


def is_database_url(store: object) -> bool:
    """Whether `store` names a PostgreSQL database rather than a directory."""
    return isinstance(store, str) and store.startswith(("postgresql://", "postgres://"))


def shown(store: str | PathLike[str]) -> str:
    """`store` as every message shows it: a database URL without its password and query (its schema
    kept), a folder as it is."""
    if not is_database_url(store):  # a URL of another scheme, or mistyped, loses its password too
        return _PASSWORD.sub(r"\1@", str(store))
    try:
        return split_url(str(store))[2]
    except ValueError:  # a schema that is not a name: shown without the query
        parts = urlsplit(str(store))
        return urlunsplit((parts.scheme, _netloc(parts), parts.path, "", ""))


def refuse_mistyped_url(store: str | PathLike[str]) -> None:
    """Refuse `store` if, being no database URL, it begins as one does (`postgresql:/host/db`): a
    typo, which would otherwise name a folder to create.

    Raises:
        StoreOpenError: If it does.
    """
    if not is_database_url(store) and str(store).lower().startswith(("postgresql:", "postgres:")):
        raise StoreOpenError(f"{shown(store)} is neither a folder nor a database URL: a PostgreSQL log's URL begins "
                             "postgresql:// (two slashes); nothing was created")


def split_url(url: str) -> tuple[str, str, str]:
    """(the connection URL for libpq, the schema, the URL to show: without a password).

    Raises:
        ValueError: If the schema named is not a plain identifier.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for key, value in query if key == "schema"), "chronograph")
    if not schema.replace("_", "").isalnum() or not schema[0].isalpha() or len(schema) > 48:
        raise ValueError(f"schema {schema!r} is not a plain name (letters, digits, _; up to 48)")
    rest = urlencode([(key, value) for key, value in query if key != "schema"])
    connect = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, ""))
    return connect, schema, urlunsplit((parts.scheme, _netloc(parts), parts.path, f"schema={schema}", ""))


def _netloc(parts: SplitResult) -> str:
    """The user, host and port of a URL, without its password."""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port that is not a number: libpq says so
        port = ""
    return f"{parts.username + '@' if parts.username else ''}{parts.hostname or 'localhost'}{port}"
