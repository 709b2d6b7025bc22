"""A FIFO the code under test must never wait on: should it open it for reading anyway, a
writer opens and closes it after a while and the block fails, so the regression fails the
test, not hangs it."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def never_waited_on(fifo: Path, patience: float = 10.0) -> Iterator[None]:
    """Make `fifo`; if a reader still waits on it `patience` seconds into the block, give it an
    end of file, and fail once the block ends.

    Raises:
        AssertionError: If something waited on the FIFO.
    """
    os.mkfifo(fifo)
    done, waited = threading.Event(), threading.Event()

    def release() -> None:
        while not done.wait(patience):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                waited.set()
            except OSError as error:
                if error.errno not in (errno.ENXIO, errno.ENOENT):  # ENXIO: no reader waits
                    raise

    watcher = threading.Thread(target=release, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
    assert not waited.is_set(), f"{fifo} was opened for reading and waited on"
