"""Where the store lives: a flag, else the environment, else a per-user default."""

from __future__ import annotations

import os
import re
from pathlib import Path

from chronograph.eventstore.postgres.address import refuse_mistyped_url

__all__ = [
    "ACTOR_ENV", "DATABASE_SCHEMES", "MODEL_CACHE_ENV", "STORE_ENV", "TERM_WEIGHTS_ENV", "TOKEN_ENV", "default_store",
    "model_cache", "resolve_store", "url_scheme",
]

STORE_ENV = "CHRONOGRAPH_STORE"
TOKEN_ENV = "CHRONOGRAPH_TOKEN"
ACTOR_ENV = "CHRONOGRAPH_ACTOR"
EMBEDDINGS_ENV = "CHRONOGRAPH_EMBEDDINGS"
"""The default of --embeddings (auto, local, off or an endpoint URL)."""
TERM_WEIGHTS_ENV = "CHRONOGRAPH_TERM_WEIGHTS"
"""The default of --term-weights (on or off)."""


def default_store() -> Path:
    """The per-user default: e.g. ~/.local/share/chronograph/store on Linux."""
    import platformdirs  # only when no store is named

    return Path(platformdirs.user_data_dir("chronograph", appauthor=False)) / "store"


MODEL_CACHE_ENV = "CHRONOGRAPH_MODEL_CACHE"
"""Another folder for the embedding model's optimised graph, or "off" to keep none."""


def model_cache() -> Path | None:
    """Where the embedding model's optimised graph is kept: $CHRONOGRAPH_MODEL_CACHE ("off":
    nowhere), else e.g. ~/.cache/chronograph/models."""
    named = os.environ.get(MODEL_CACHE_ENV)
    if named:
        return None if named == "off" else Path(named).expanduser()
    import platformdirs  # only when the bundled model loads

    return Path(platformdirs.user_cache_dir("chronograph", appauthor=False)) / "models"


def resolve_store(flag: str | os.PathLike[str] | None) -> Path | str:
    """The store: the flag if given, else $CHRONOGRAPH_STORE, else the per-user default; a
    directory, or a postgresql:// URL (returned as the text it is).

    Raises:
        StoreOpenError: If it begins as a database URL does but is none (`postgresql:/host`).
    """
    named = str(flag) if flag else os.environ.get(STORE_ENV)
    if not named:
        return default_store()
    if url_scheme(named.strip()) is not None:  # a URL pasted with a space or a line break around it
        named = named.strip()
    refuse_mistyped_url(named)
    scheme = url_scheme(named)
    if scheme in DATABASE_SCHEMES:
        return scheme + named[len(scheme):]
    return Path(named).expanduser()


DATABASE_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def url_scheme(store: str) -> str | None:
    """The scheme of `store` if it is a URL, in lower case (a URL's scheme is read in any case);
    None if it names a folder."""
    found = _SCHEME.match(store)
    return None if found is None else found[1].lower()
