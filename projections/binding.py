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
from typing import Protocol, TypeVar

import lmdb
from chronograph.eventstore import LmdbEnv, LmdbLog, LmdbTransaction, LogReader, LogTransaction

__all__ = ["Binding", "Colocated", "bind"]

T = TypeVar("T")


class Binding(Protocol):
    """A log and the environment holding its views, and how their transactions nest."""

    env: LmdbEnv

    def write(self, work: Callable[[LogTransaction, lmdb.Transaction], T]) -> T:
        """Run `work(log transaction, views transaction)`: both commit, or neither does."""
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


class Colocated:
    """Views kept in the LMDB log's own environment: one transaction for both."""

    def __init__(self, log: LmdbLog) -> None:
        self.log = log
        self.env = log.environment

    def write(self, work: Callable[[LogTransaction, lmdb.Transaction], T]) -> T:
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


def bind(log: object) -> Binding:
    """The binding of `log` and the environment its views live in.

    Raises:
        TypeError: If no binding knows this kind of log.
    """
    if isinstance(log, LmdbLog):
        return Colocated(log)
    raise TypeError(f"no views binding for a log of type {type(log).__name__}")
