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
    if text == text.strip() and typed.startswith(("postgresql://", "postgres://")):  # a scheme in any case
        return
    if text != text.strip():
        raise StoreOpenError(f"{shown(text.strip())!r} has spaces around it: remove them; nothing was created")
    raise StoreOpenError(f"{shown(text)} is neither a folder nor a database URL: a PostgreSQL log's URL begins "
                         "postgresql:// (a colon, two slashes); nothing was created")


_USER_INFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:?/+)([^:@/]*):.*@")
"""What begins as a URL does (a scheme, slashes), then a user and a password up to the last `@`
(a password may hold `/` and `@`: all of it goes, and more rather than less)."""


def _without_password(text: str) -> str:
    """`text` without the password of what begins as a URL (or a PostgreSQL URL mistyped); a folder
    as it is."""
    return _USER_INFO.sub(r"\1\2@", text)


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
    given = dict(query).get("host", "")
    if not parts.hostname and given.startswith("/"):  # a socket's folder: shown as libpq takes it
        return connect, schema, f"{parts.scheme}://{parts.path}?{urlencode({'host': given, 'schema': schema})}"
    return connect, schema, urlunsplit((parts.scheme, _netloc(parts, given), parts.path, f"schema={schema}", ""))


def _netloc(parts: SplitResult, host: str = "") -> str:
    """The user, host (`host`: the one given as a parameter) and port of a URL, without its password."""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port that is not a number: libpq says so
        port = ""
    name = parts.hostname or host or "localhost"
    name = f"[{name}]" if ":" in name else name  # IPv6, bracketed as a URL spells it
    return f"{parts.username + '@' if parts.username else ''}{name}{port}"
