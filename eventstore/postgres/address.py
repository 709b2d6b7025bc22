"""The address of a log in PostgreSQL: a database URL and a schema; read without the driver.

    postgresql://user@host:5432/dbname                   schema "chronograph"
    postgresql://user@host/dbname?schema=team_memory     another log in the same database
"""

from __future__ import annotations

import re
from contextlib import suppress
from os import PathLike
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from chronograph.eventstore.errors import StoreOpenError

__all__ = ["holds_secret", "is_database_url", "refuse_mistyped_url", "shown", "split_url", "without_secrets"]

_URL_LIKE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|postgres(?:ql)?[:/])", re.IGNORECASE)
"""What begins as a URL does (a scheme, two slashes), or as a PostgreSQL one mistyped (a folder
`notes:/x` is a folder)."""
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*(?::/*|//)")
"""A scheme and its slashes (if any), as a URL begins, or a PostgreSQL one mistyped."""


def _user_info(text: str) -> tuple[str, str, str, str] | None:
    """(scheme and slashes, user, password, what follows its `@`) of what begins as a URL does, if
    it may hold a password. libpq takes the user part to the first `@` before the first `/`; a
    password pasted unencoded may hold `@`, `/`, `?` and `#`, so where any other `@` stands outside
    a parameter's value (`application_name=me@laptop` is one), the password is taken to run to the
    last `@` of all: more rather than less."""
    found = _SCHEME.match(text)
    if not found:
        return None
    body = text[found.end():]
    slash = body.find("/")
    first = body.find("@", 0, len(body) if slash < 0 else slash)  # libpq's user part
    at = body.rfind("@") if "@" in _outside_values(body[first + 1:]) else first
    if at < 0:
        return None
    user, colon, password = body[:at].partition(":")
    return (found.group(), user, password, body[at + 1:]) if colon else None


def _outside_values(text: str) -> str:
    """`text` without the values of its query's parameters (`key=value` after its `?`)."""
    path, mark, query = text.partition("?")
    kept = [item.partition("=")[0] if re.match(r"^[A-Za-z_][A-Za-z0-9_%]*=", item) else item
            for item in query.split("&")] if mark else []
    return path + "".join(kept)


def holds_secret(url: str) -> bool:
    """Whether `url` may spell a password (or a key's passphrase): in its user part, however pasted,
    or as a parameter (`password=`, `sslpassword=`, any case, percent-encoded or not)."""
    query = url.partition("?")[2]
    keys = [unquote(item.partition("=")[0]).lower() for item in query.split("&")]
    return _user_info(url) is not None or any("password" in key for key in keys)


def is_database_url(store: object) -> bool:
    """Whether `store` names a PostgreSQL database rather than a directory."""
    return isinstance(store, str) and store.startswith(("postgresql://", "postgres://"))


def shown(store: str | PathLike[str]) -> str:
    """`store` as every message shows it: a database URL without its password and query (its schema
    kept), a folder as it is. Anything that begins as a URL, mistyped or of another scheme, loses
    its password however it is written (in the user part, pasted unencoded), and its query."""
    text = str(store)
    if not _URL_LIKE.match(text):
        return text
    info = _user_info(text)
    safe = text if info is None else f"{info[0]}{info[1]}@{info[3]}"
    if is_database_url(safe):
        with suppress(ValueError):  # a schema that is not a name, a host the parser refuses: as below
            return split_url(safe)[2]
    return safe.partition("?")[0].partition("#")[0]


def without_secrets(message: str, url: str) -> str:
    """`message` (the driver's or the server's words about `url`), unless the URL's parser did not
    read its password whole (pasted unencoded with a `/`, `?`, `#` or `@` in it, or after three
    slashes): libpq then names its pieces as a host, a database or a parameter, so its words are
    replaced by what to do.
    (libpq never quotes a password it read whole; replacing its text wherever it appears blanked
    roles and hosts spelt like it, and told the password by what was blanked.)"""
    info = _user_info(url)
    try:
        read = urlsplit(url).password
    except ValueError:
        read = None
    if info and (re.search(r"[/?#@]", info[2]) or info[2] != read):
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
