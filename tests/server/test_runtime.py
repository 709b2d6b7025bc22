"""The runtime: over HTTP, tool work leaves the event loop, one call at a time."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from chronograph.application import CORE
from chronograph.server.app import Runtime
from chronograph.server.config import Settings


class FakeContext:
    class session:  # noqa: N801 (the shape of the SDK's context)
        client_params = None

    class request_context:  # noqa: N801
        request = None


@pytest.mark.parametrize("offload", [True, False])
def test_calls_run_off_the_event_loop_only_when_asked(tmp_path: Path, offload: bool) -> None:
    runtime = Runtime(Settings(store=tmp_path / "store", actor="t"), offload=offload)
    runtime.open()
    seen: list[int] = []
    real = runtime.memory.read

    def read(tool: Any, arguments: dict[str, Any]) -> Any:
        seen.append(threading.get_ident())
        return real(tool, arguments)

    runtime.memory.read = read  # type: ignore[method-assign]

    async def main() -> int:
        await runtime.call(CORE["read_graph"], {}, FakeContext())  # type: ignore[arg-type]
        return threading.get_ident()

    try:
        loop_thread = anyio.run(main)
    finally:
        runtime.close()
    assert (seen[0] != loop_thread) is offload
