"""How the views' LMDB transactions relate to the log's: the one place that knows where both live.

Views keep their tables in an LMDB environment. When that environment is the log's own
(`Colocated`, the embedded store), a view fold happens inside the append's transaction:
a writer reads its own write at once and views and log are one consistent snapshot. A
log elsewhere (a database server) gets a binding of its own, in which the views commit
after the log and catch up from their checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol, TypeVar

import lmdb
from chronograph.eventstore import CommitUnconfirmedError, LmdbEnv, LmdbLog, LmdbTransaction, LogReader, LogTransaction

__all__ = ["Binding", "Colocated", "Remote", "bind"]

T = TypeVar("T")


class Binding(Protocol):
    """A log and the environment holding its views, and how their transactions nest."""

    env: LmdbEnv
    unsure: bool
    """Whether the log may hold a write the views rolled back (its commit's answer never came):
    they must catch up before they answer (`Views.refresh`)."""

    def write(self, work: Callable[[LogTransaction, lmdb.Transaction], T],
              since: Callable[[lmdb.Transaction], int] | None = None) -> T:
        """Run `work(log transaction, views transaction)`: both commit, or neither does.

        `since(views transaction)`: the position the views stand at, so that a log elsewhere
        can send what follows with its lock (a hint: the work reads the log as it must)."""
        ...

    def read(self) -> AbstractContextManager[tuple[LogReader, lmdb.Transaction]]:
        """A log reader and a views read transaction, as one snapshot where the backend allows."""
        ...

    def hook_txn(self, tx: LogTransaction) -> lmdb.Transaction:
        """The views transaction that goes with the log transaction `tx` (for inline folds)."""
        ...

    def log_in(self, txn: lmdb.Transaction) -> AbstractContextManager[LogReader]:
        """A log reader to use beside the views write transaction `txn`."""
        ...

    def fold(self, work: Callable[[LogReader, lmdb.Transaction], T]) -> T:
        """Run `work(log reader, views write transaction)`: views catching up, which read the
        log but append nothing (so no writer of the log is held up)."""
        ...


class Colocated:
    """Views kept in the LMDB log's own environment: one transaction for both."""

    def __init__(self, log: LmdbLog) -> None:
        self.log = log
        self.env = log.environment
        self.unsure = False  # (one transaction: the views commit with the log)

    def write(self, work: Callable[[LogTransaction, lmdb.Transaction], T],
              since: Callable[[lmdb.Transaction], int] | None = None) -> T:
        def both(tx: LmdbTransaction) -> T:
            return work(tx, tx.txn)

        return self.log.transact(both)

    @contextmanager
    def read(self) -> Iterator[tuple[LogReader, lmdb.Transaction]]:
        with self.env.read() as txn:
            yield self.log.reader(txn), txn

    def hook_txn(self, tx: LogTransaction) -> lmdb.Transaction:
        assert isinstance(tx, LmdbTransaction)
        return tx.txn

    @contextmanager
    def log_in(self, txn: lmdb.Transaction) -> Iterator[LogReader]:
        yield self.log.reader(txn)

    def fold(self, work: Callable[[LogReader, lmdb.Transaction], T]) -> T:
        return self.log.transact(lambda tx: work(tx, tx.txn))


class Remote:
    """Views kept in a local LMDB environment (a cache) of a log in a database server.

    A write decides against the database's current state: it takes the log's write
    transaction (and lock), catches the views up inside it, decides, appends, folds inline,
    commits the log and only then the views. If the views' commit fails after the log's,
    the views are behind, never ahead, and catch up from their checkpoint. The events the
    views have not seen come back with the lock (see `PgLog.transaction`), so catching up
    costs the lock's holder no round trip of its own.
    """

    def __init__(self, log: Any, env: LmdbEnv) -> None:
        self.log = log
        self.env = env
        self.unsure = False

    def write(self, work: Callable[[LogTransaction, lmdb.Transaction], T],
              since: Callable[[lmdb.Transaction], int] | None = None) -> T:
        def attempt(txn: lmdb.Transaction) -> T:  # run again from scratch if the local map grows
            with self.log.transaction(None if since is None else since(txn)) as tx:
                tx.views_txn = txn
                outcome = work(tx, txn)
                self.log.commit(tx)
            return outcome

        try:
            return self.env.write(attempt)
        except CommitUnconfirmedError:  # the log may hold what the views roll back now
            self.unsure = True
            raise

    @contextmanager
    def read(self) -> Iterator[tuple[LogReader, lmdb.Transaction]]:
        with self.env.read() as txn, self.log.read(lazy=True) as reader:
            yield reader, txn

    def hook_txn(self, tx: LogTransaction) -> lmdb.Transaction:
        txn = getattr(tx, "views_txn", None)
        assert txn is not None, "a log transaction of a remote log opened outside its views' binding"
        return txn

    def log_in(self, txn: lmdb.Transaction) -> AbstractContextManager[LogReader]:
        return self.log.read(lazy=True)

    def fold(self, work: Callable[[LogReader, lmdb.Transaction], T]) -> T:
        def attempt(txn: lmdb.Transaction) -> T:
            with self.log.read() as reader:
                return work(reader, txn)

        return self.env.write(attempt)


def bind(log: object, cache: LmdbEnv | None = None) -> Binding:
    """The binding of `log` and the environment its views live in (`cache`, for a log that
    keeps none of its own).

    Raises:
        TypeError: If no binding knows this kind of log, or a remote log has no cache.
    """
    if isinstance(log, LmdbLog):
        return Colocated(log)
    if cache is not None and hasattr(log, "transaction") and hasattr(log, "commit"):
        return Remote(log, cache)
    raise TypeError(f"no views binding for a log of type {type(log).__name__} (a remote log needs a cache)")
