"""Connections to a PostgreSQL log when the database goes away and comes back, or will not take
another: the pool serves again as soon as the database is back (its reconnect back-off does not
outlast the outage), and a connection that cannot be made says the database's own reason (too
many clients, shutting down) with what to do. Outages are a proxy that refuses connections; a
full `max_connections` and a shutdown are a private cluster's (skipped where `initdb` is missing)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from chronograph.eventstore import StoreUnavailableError
from support.cluster import cluster
from support.postgres import SERVER, database
from support.tcpproxy import TcpProxy

pglog = pytest.importorskip("chronograph.eventstore.postgres.log")
import psycopg  # noqa: E402 (after the skip: the postgresql extra)


@contextmanager
def proxied() -> Iterator[tuple[TcpProxy, Any]]:
    """A log of this run's database reached through a proxy, and the proxy."""
    host, port = SERVER.rsplit("@", 1)[-1].rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    log = pglog.PgLog(database().log_url().replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}"))
    try:
        yield proxy, log
    finally:
        log.close()
        proxy.close()


def test_the_pool_serves_again_as_soon_as_the_database_is_back_after_an_outage() -> None:
    with proxied() as (proxy, log):
        log.head()
        proxy.refuse()
        for _ in range(2):  # calls while it is down: the pool's connections are lost and it tries to reconnect
            with pytest.raises(StoreUnavailableError, match="cannot be reached"), log.patience(1.0):
                log.head()
        time.sleep(9)  # an outage long enough for psycopg_pool's own back-off to wait 8 s before its next attempt
        proxy.mend()
        log.pool.pop_stats()
        with log.patience(3.0):  # (then a connection of its own: the pool's next attempt is 8 s away without the fix)
            assert log.head() == 0
        served = log.pool.pop_stats()
    assert served.get("connections_num", 0) >= 1, served  # the pool connected again for this read


def test_a_database_with_no_connection_free_is_said_so_with_what_to_do() -> None:
    with cluster(max_connections="4", superuser_reserved_connections="0") as made:
        url = made.url + "?schema=full"
        log = pglog.PgLog(url)
        hogs: list[psycopg.Connection[Any]] = []
        try:
            taken = [log.pool.getconn() for _ in range(log.pool.get_stats()["pool_available"])]
            with pytest.raises(psycopg.OperationalError):
                while True:
                    hogs.append(psycopg.connect(made.url, connect_timeout=3))
            with pytest.raises(StoreUnavailableError) as refused:
                log.head()
            for connection in taken:
                log.pool.putconn(connection)
            with pytest.raises(StoreUnavailableError) as opening:
                pglog.PgLog(url)
        finally:
            for hog in hogs:
                hog.close()
            log.close()
    for said in (str(refused.value), str(opening.value)):
        assert "takes no more connections" in said and "too many clients" in said, said
        assert "raise max_connections" in said, said
    assert "couldn't get a connection" not in str(refused.value)


def test_a_database_shutting_down_is_said_so() -> None:
    with cluster() as made:
        url = made.url + "?schema=down"
        log = pglog.PgLog(url)
        with psycopg.connect(made.url, autocommit=True) as held:  # a smart shutdown waits for this session
            taken = [log.pool.getconn() for _ in range(log.pool.get_stats()["pool_available"])]
            command = [str(made.bindir / "pg_ctl"), "-D", str(made.data), "-m", "smart", "stop", "--no-wait"]
            if os.geteuid() == 0:
                command = ["runuser", "-u", "postgres", "--", *command]
            subprocess.run(command, check=True, capture_output=True, timeout=60)
            try:
                with pytest.raises(StoreUnavailableError) as refused:
                    log.head()
            finally:
                for connection in taken:
                    log.pool.putconn(connection)
                log.close()
            held.execute("SELECT 1")
    said = str(refused.value)
    assert "is shutting down or starting up" in said and "retry once it is up" in said, said
