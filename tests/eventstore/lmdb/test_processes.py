"""Several processes append to one store at once: nothing lost, nothing doubled."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

from chronograph.eventstore import LmdbLog

ROOT = Path(__file__).resolve().parents[3]

WORKER = textwrap.dedent("""
    import sys
    from chronograph.eventstore import LmdbLog, ObservationsAdded, StreamWrite
    path, worker = sys.argv[1], int(sys.argv[2])
    with LmdbLog(path) as store:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(500):
            stream = f"shared-{i % 5}" if i % 2 else f"own-{worker}"
            event = ObservationsAdded(observations=(f"{worker}:{i}",))
            store.append([StreamWrite(stream, [event])], actor=f"worker-{worker}")
""")


def test_four_processes_appending_500_events_each_leave_2000_in_order(store_path: Path) -> None:
    LmdbLog(store_path).close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(store_path), str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )
        for n in range(4)
    ]
    for worker in workers:  # all open before any writes, so they really overlap
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.close()
    for worker in workers:
        assert worker.wait(timeout=120) == 0
        assert worker.stdout is not None
        worker.stdout.close()

    with LmdbLog(store_path) as store:
        events = list(store.read_all())
    assert [e.position for e in events] == list(range(1, 2001))
    assert sorted(e.event.observations[0] for e in events) == sorted(
        f"{w}:{i}" for w in range(4) for i in range(500)
    )
    versions: dict[str, list[int]] = defaultdict(list)
    for envelope in events:
        versions[envelope.stream].append(envelope.version)
    assert all(seen == list(range(1, len(seen) + 1)) for seen in versions.values())
