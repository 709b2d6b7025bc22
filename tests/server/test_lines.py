"""The stdio wire's descriptors: the pipe a reply goes out on is widened where the system allows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from chronograph.server.lines import PIPE, widen, wire

fcntl = pytest.importorskip("fcntl")
pytestmark = pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")


def test_a_pipe_is_widened_to_hold_a_megabyte_reply() -> None:
    read, write = os.pipe()
    try:
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) < PIPE
        widen(write)
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == PIPE
    finally:
        os.close(read)
        os.close(write)


def test_widening_what_is_not_a_pipe_leaves_it_as_it_is(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    try:
        widen(fd)  # no error: a server whose stdout is a file serves as before
        os.write(fd, b"still written\n")
    finally:
        os.close(fd)
    assert (tmp_path / "out").read_bytes() == b"still written\n"


def test_the_wire_writes_replies_on_a_widened_pipe() -> None:
    read, write = os.pipe()
    saved = os.dup(1)
    os.dup2(write, 1)
    try:
        with wire() as (_, stdout):
            assert fcntl.fcntl(stdout, fcntl.F_GETPIPE_SZ) == PIPE
    finally:
        os.dup2(saved, 1)
        for fd in (saved, read, write):
            os.close(fd)
