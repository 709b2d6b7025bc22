"""The address of a log in PostgreSQL: a database URL and a schema; read without the driver.

    postgresql://user@host:5432/dbname                   schema "chronograph"
    postgresql://user@host/dbname?schema=team_memory     another log in the same database
"""

from __future__ import annotations

import re
from os import PathLike
from urllib.parse import SplitResult, parse_qsl, quote, urlencode, urlsplit, urlunsplit

from chronograph.eventstore.errors import StoreOpenError

__all__ = ["is_database_url", "refuse_mistyped_url", "shown", "split_url", "without_secrets"]

_URL_LIKE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|postgres(?:ql)?[:/])", re.IGNORECASE)
"""What begins as a URL does (a scheme, two slashes), or as a PostgreSQL one mistyped (a folder
`notes:/x` is a folder)."""
_USER_INFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*(?::/*|//))([^:@/?#]*):(.*)@")
"""A scheme (its slashes, if any), a user, and a password up to the last `@`: a password pasted
unencoded may hold `/`, `?` and `@`, so all of it goes, and more rather than less."""
_PASSWORD_PARAMETER = re.compile(r"(?i)(\bpassword=)[^&#\s]*")
"""libpq's password given as a parameter (`?password=...`)."""

def is_database_url(store: object) -> bool:
    """Whether `store` names a PostgreSQL database rather than a directory."""
    return isinstance(store, str) and store.startswith(("postgresql://", "postgres://"))


def shown(store: str | PathLike[str]) -> str:
    """`store` as every message shows it: a database URL without its password and query (its schema
    kept), a folder as it is. Anything that begins as a URL, mistyped or of another scheme, loses
    its password however it is written (in the user part, pasted unencoded, or as a parameter)."""
    text = str(store)
    if not _URL_LIKE.match(text):
        return text
    safe = _PASSWORD_PARAMETER.sub(r"\1***", _USER_INFO.sub(r"\1\2@", text))
    if not is_database_url(safe):
        return safe
    try:
        return split_url(safe)[2]
    except ValueError:  # a schema that is not a name: shown without the query
        parts = urlsplit(safe)
        return urlunsplit((parts.scheme, _netloc(parts), parts.path, "", ""))


def without_secrets(message: str, url: str) -> str:
    """`message` (the driver's or the server's words about `url`), unless the URL's parser did not
    read its password whole (pasted unencoded with a `/`, `?`, `#` or `@` in it, or after three
    slashes): libpq then names its pieces as a host, a database or a parameter, so its words are
    replaced by what to do.
    (libpq never quotes a password it read whole; replacing its text wherever it appears blanked
    roles and hosts spelt like it, and told the password by what was blanked.)"""
    found = _USER_INFO.match(url)
    if found and (re.search(r"[/?#@]", found.group(3)) or found.group(3) != urlsplit(url).password):
        return ("the URL's password holds a character a URL gives a meaning to (/ ? # @): write it "
                "percent-encoded (%2F %3F %23 %40), or give it in PGPASSWORD or ~/.pgpass")
    return message


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
    rest = urlencode([(key, value) for key, value in query if key != "schema"], quote_via=quote)  # space: %20
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
