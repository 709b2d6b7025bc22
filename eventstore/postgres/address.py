"""The address of a log in PostgreSQL: a database URL and a schema; read without the driver.

    postgresql://user@host:5432/dbname                   schema "chronograph"
    postgresql://user@host/dbname?schema=team_memory     another log in the same database
"""

from __future__ import annotations

import re
from os import PathLike
from urllib.parse import SplitResult, parse_qsl, quote, urlencode, urlsplit, urlunsplit

from chronograph.eventstore.errors import StoreOpenError

__all__ = ["holds_secret", "is_database_url", "refuse_mistyped_url", "shown", "split_url", "without_secrets"]

_URL_LIKE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|postgres(?:ql)?[:/])", re.IGNORECASE)
"""What begins as a URL does (a scheme, two slashes), or as a PostgreSQL one mistyped (a folder
`notes:/x` is a folder)."""
_USER = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*(?::/*|//))([^:@/?#\[\],]*):(?!\d+(?:[,/?#]|$))")
"""A scheme (its slashes, if any) and a user followed by a password (see `_user_info`); not a host
followed by its port (`host:5432/db`, `h1:5432,h2:5433`), nor an IPv6 host."""


def _user_info(text: str) -> tuple[str, str, str, str] | None:
    """(scheme and slashes, user, password, what follows its `@`) of what begins as a URL does, if it
    holds a password. The password runs to the last `@` before the first `/` (as libpq reads it; a
    password may hold `@`, a query may too), or, with a `/` in the password, the last `@` before the
    query, or, with a `?` or `#` in it as well, the last `@` of all: more rather than less."""
    found = _USER.match(text)
    if not found:
        return None
    body = text[found.end():]
    for end in (body.find("/"), min((i for i in (body.find("?"), body.find("#")) if i >= 0), default=-1)):
        at = body.rfind("@", 0, end) if end >= 0 else -1
        if at >= 0:
            break
    else:
        at = body.rfind("@")
    return None if at < 0 else (found.group(1), found.group(2), body[:at], body[at + 1:])


def holds_secret(url: str) -> bool:
    """Whether `url` spells a password (or a key's passphrase): in its user part, however pasted,
    or as a parameter (`password=`, `sslpassword=`, any case)."""
    try:
        parameters = parse_qsl(urlsplit(url).query)
    except ValueError:
        parameters = []
    return _user_info(url) is not None or any("password" in key.lower() for key, _ in parameters)
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
    info = _user_info(text)
    safe = _PASSWORD_PARAMETER.sub(r"\1***", text if info is None else f"{info[0]}{info[1]}@{info[3]}")
    if not is_database_url(safe):
        return safe
    try:
        return split_url(safe)[2]
    except ValueError:  # a schema that is not a name (or a host the parser refuses): shown without the query
        try:
            parts = urlsplit(safe)
            return urlunsplit((parts.scheme, _netloc(parts), parts.path, "", ""))
        except ValueError:
            return safe.split("?", 1)[0]


def without_secrets(message: str, url: str) -> str:
    """`message` (the driver's or the server's words about `url`), unless the URL's parser did not
    read its password whole (pasted unencoded with a `/`, `?`, `#` or `@` in it, or after three
    slashes): libpq then names its pieces as a host, a database or a parameter, so its words are
    replaced by what to do.
    (libpq never quotes a password it read whole; replacing its text wherever it appears blanked
    roles and hosts spelt like it, and told the password by what was blanked.)"""
    info = _user_info(url)
    if info and (re.search(r"[/?#@]", info[2]) or info[2] != urlsplit(url).password):
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
