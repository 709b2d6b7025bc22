"""Opening a store: a directory (the embedded LMDB log, its views beside it in one file) or a
PostgreSQL URL (the log in the database, the views in a local cache that catches up from it).

    ~/.local/share/chronograph/store             LMDB
    postgresql://user@host/db?schema=memory      PostgreSQL; views in --cache, else
                                                 ~/.cache/chronograph/<the log's id>
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import lmdb
from chronograph.eventstore import EventLog, LmdbEnv, LmdbLog, StoreOpenError
from chronograph.eventstore.lmdb.env import DATA_FILE
from chronograph.eventstore.postgres.address import is_database_url, refuse_mistyped_url, shown

__all__ = ["OpenStore", "default_cache", "is_database_url", "open_log", "open_store", "shown", "store_exists"]


class OpenStore(NamedTuple):
    """A log, and the environment of its views when they do not live beside it."""

    log: EventLog
    cache: LmdbEnv | None


def default_cache(store_id: str) -> Path:
    """Where the views of the database log `store_id` live on this machine by default."""
    import platformdirs  # only for a database store

    return Path(platformdirs.user_cache_dir("chronograph", appauthor=False)) / store_id


def store_exists(location: str | os.PathLike[str]) -> bool:
    """Whether a store is at `location` (a database URL is taken to hold one: opening says)."""
    return is_database_url(location) or (Path(location) / DATA_FILE).exists()


def open_log(location: str | os.PathLike[str], *, readonly: bool = False, create: bool = True) -> EventLog:
    """The log of the store at `location` alone, without its views (for tools that read only
    the log: the audit, a copy, a backup).

    Raises:
        EventStoreError: If it cannot be opened.
    """
    if not is_database_url(_checked(location)):
        return LmdbLog(Path(location), readonly=readonly, create=create)
    log: EventLog = _pglog()(str(location), readonly=readonly, create=create)
    return log


def open_store(
    location: str | os.PathLike[str],
    *,
    sync: bool = True,
    readonly: bool = False,
    max_size: int | None = None,
    cache: str | os.PathLike[str] | None = None,
    create: bool = True,
) -> OpenStore:
    """Open the store at `location` (a directory or a postgresql:// URL).

    Raises:
        EventStoreError: If it cannot be opened (see the subclasses), or the database cannot
            be reached.
    """
    if not is_database_url(_checked(location)):
        return OpenStore(LmdbLog(Path(location), sync=sync, readonly=readonly, max_map_size=max_size,
                                 create=create), None)
    log = _pglog()(str(location), readonly=readonly, create=create)
    try:
        folder = Path(cache).expanduser() if cache else default_cache(log.store_id)
        env = LmdbEnv(folder, sync=False, max_map_size=max_size)  # a cache: the log in the database is durable
    except BaseException:
        log.close()
        raise
    try:
        _claim(env, log.store_id, log.location)
    except BaseException:
        env.close()
        log.close()
        raise
    return OpenStore(log, env)


def _checked(location: str | os.PathLike[str]) -> str | os.PathLike[str]:
    refuse_mistyped_url(location)  # a folder would be made under its name
    return location


def _pglog() -> Any:
    """The PostgreSQL log class (psycopg is imported only for a database store).

    Raises:
        StoreOpenError: If the postgresql extra is not installed.
    """
    try:
        from chronograph.eventstore.postgres.log import PgLog  # noqa: PLC0415
    except ImportError as error:
        raise StoreOpenError(f"a postgresql:// store needs the PostgreSQL driver ({error.name} is missing): "
                             "pip install 'chronograph[postgresql]'") from None
    return PgLog


def _claim(env: LmdbEnv, store_id: str, location: str) -> None:
    """Mark the cache `env` as holding views of the log `store_id`, or refuse one of another log.

    Raises:
        StoreOpenError: If the cache holds the views of another log, or is a store.
    """
    if "log" in env.database_names():
        raise StoreOpenError(f"{env.path} holds a store's log, not a cache; name another --cache (the views of a "
                             "postgresql:// store are kept apart from any store)")
    db = env.open_db("cache")

    def claim(txn: lmdb.Transaction) -> bytes:
        owner = txn.get(b"log", db=db)
        if owner is None:
            txn.put(b"log", store_id.encode(), db=db)
            return store_id.encode()
        return bytes(owner)

    owner = env.write(claim)
    if owner != store_id.encode():
        raise StoreOpenError(f"the cache at {env.path} holds the views of another log ({owner.decode()}), not of "
                             f"{shown(location)} ({store_id}); name another --cache, or delete that folder")
