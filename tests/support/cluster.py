"""A PostgreSQL cluster of one test's own, to crash at will: made with the machine's `initdb`,
run by `pg_ctl` on a free port, stopped with `-m immediate` (what a power cut or a killed
postmaster leaves: whatever the write-ahead log had not flushed is lost) and started again
(crash recovery) on the same port. Root runs the server as the `postgres` user, as PostgreSQL requires.

The test is skipped where no PostgreSQL binaries are installed or the cluster cannot be made.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


class Cluster:
    """A running private cluster; `url` reaches its `postgres` database."""

    def __init__(self, bindir: Path, data: Path, port: int, settings: dict[str, str]) -> None:
        self.bindir, self.data, self.port = bindir, data, port
        options = [f"-p {port}", "-c listen_addresses=127.0.0.1", f"-c unix_socket_directories={data}"]
        self.options = " ".join([*options, *(f"-c {key}={value}" for key, value in settings.items())])
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-o", self.options, "-l", str(self.data / "server.log"),
                  "-w", "start")

    def crash(self) -> None:
        """Stop the server at once, as a crash would: nothing unflushed survives."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def cluster(**settings: str) -> Iterator[Cluster]:
    """A fresh cluster with these server settings, started; stopped and deleted afterwards."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.skip("no PostgreSQL binaries (initdb) on this machine to make a private cluster")
    bindir = Path(found[-1]).parent
    root = Path(tempfile.mkdtemp(prefix="chronograph-cluster-"))
    data = root / "data"
    try:
        data.mkdir()
        if os.geteuid() == 0:
            if shutil.which("runuser") is None:
                pytest.skip("running as root without runuser: no way to start PostgreSQL as another user")
            os.chmod(root, 0o755)
            shutil.chown(data, "postgres", "postgres")
        made = Cluster(bindir, data, _free_port(), settings)
        try:
            made._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        except (subprocess.CalledProcessError, LookupError) as error:
            pytest.skip(f"cannot make a private PostgreSQL cluster: {error}")
        for attempt in range(3):  # the free port may be taken by another worker before the server binds it
            try:
                made.start()
                break
            except subprocess.CalledProcessError:
                if attempt == 2:
                    raise
                made = Cluster(bindir, data, _free_port(), settings)
        try:
            yield made
        finally:
            try:
                made.crash()
            except subprocess.CalledProcessError:
                pass  # stopped already
    finally:
        shutil.rmtree(root, ignore_errors=True)
