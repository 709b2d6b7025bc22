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

def is_database_url(store: object) -> bool:
    """Whether `store` names a PostgreSQL database rather than a directory."""
    return isinstance(store, str) and store.startswith(("postgresql://", "postgres://"))


def shown(store: str | PathLike[str]) -> str:
    """`store` as every message shows it: a database URL without its password and query (its schema
    kept), a folder as it is."""
    if not is_database_url(store):  # a URL of another scheme, or mistyped, loses its password too
        return _without_password(str(store))
    try:
        return split_url(str(store))[2]
    except ValueError:  # a schema that is not a name: shown without the query
        parts = urlsplit(str(store))
        return urlunsplit((parts.scheme, _netloc(parts), parts.path, "", ""))


def refuse_mistyped_url(store: str | PathLike[str]) -> None:
    """Refuse `store` if, being no database URL, it begins as one does (`postgresql:/host/db`,
    `postgresql//host/db`, a URL pasted with a space before it): a typo, which would otherwise name
    a folder to create (its name spelling the password, if the URL held one).

    Raises:
        StoreOpenError: If it does.
    """
    text = str(store)
    typed = text.strip().lower()
    if not typed.startswith(("postgresql:", "postgres:", "postgresql//", "postgres//")):
        return
    if text != text.strip():
        raise StoreOpenError(f"{shown(text.strip())!r} has spaces around it: remove them; nothing was created")
    if typed.startswith(("postgresql://", "postgres://")):  # a scheme is read in any case
        return
    raise StoreOpenError(f"{shown(text)} is neither a folder nor a database URL: a PostgreSQL log's URL begins "
                         "postgresql:// (a colon, two slashes); nothing was created")


def _without_password(text: str) -> str:
    """`text` with what stands between a user's name and the host (user:password@) cut to the name,
    if it looks like a URL (a scheme and a slash, or a PostgreSQL one's beginning); else as it is."""
    head, at, rest = text.rpartition("@")
    looks = re.match(r"[A-Za-z][A-Za-z0-9+.-]*:/", text) or text.lower().startswith(("postgresql//", "postgres//"))
    if not at or not looks:
        return text
    scheme, slashes, user = head.rpartition("/")
    return f"{scheme}{slashes}{user.split(':', 1)[0]}@{rest}"


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
    if not parts.netloc:  # postgresql:///db (libpq's socket, or ?host=): urlunsplit drops the empty authority
        connect = f"{parts.scheme}://{parts.path}" + (f"?{rest}" if rest else "")
    return connect, schema, urlunsplit((parts.scheme, _netloc(parts, dict(query).get("host")), parts.path,
                                        f"schema={schema}", ""))


def _netloc(parts: SplitResult, host: str | None = None) -> str:
    """The user, host (`host`: the one given as a parameter) and port of a URL, without its password."""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port that is not a number: libpq says so
        port = ""
    return f"{parts.username + '@' if parts.username else ''}{parts.hostname or host or 'localhost'}{port}"
