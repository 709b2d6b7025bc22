"""A state machine: random appends behave exactly as a simple in-memory model predicts."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field

from chronograph.eventstore import (
    ANY,
    EXISTS,
    NO_STREAM,
    ConcurrencyError,
    ExpectedVersion,
    IdempotencyConflictError,
    LmdbLog,
    ObservationsAdded,
    StreamWrite,
)
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

STREAMS = ["a", "b", "c", "x" * 600]
events = st.lists(
    st.sampled_from(["red", "green", "blue"]).map(lambda t: ObservationsAdded(observations=(t,))),
    min_size=1, max_size=3,
)
expected_versions: st.SearchStrategy[ExpectedVersion] = st.one_of(
    st.sampled_from([ANY, NO_STREAM, EXISTS]), st.integers(min_value=0, max_value=4)
)
writes = st.lists(
    st.builds(StreamWrite, st.sampled_from(STREAMS), events, expected_versions),
    min_size=1, max_size=3,
)


@dataclass
class Model:
    log: list[tuple[str, int, ObservationsAdded]] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)
    keys: dict[str, tuple[list[StreamWrite], tuple[int, int]]] = field(default_factory=dict)

    def accepts(self, expected: ExpectedVersion, current: int) -> bool:
        if expected == ANY:
            return True
        if expected == NO_STREAM:
            return current == 0
        if expected == EXISTS:
            return current > 0
        return current == expected

    def append(self, batch: list[StreamWrite], key: str | None) -> str | tuple[int, int]:
        if key is not None and key in self.keys:
            recorded, positions = self.keys[key]
            return positions if recorded == batch else "conflict"
        versions = dict(self.versions)
        staged = []
        for write in batch:
            current = versions.get(write.stream, 0)
            if not self.accepts(write.expected, current):
                return "concurrency"
            for event in write.events:
                current += 1
                staged.append((write.stream, current, event))
            versions[write.stream] = current
        first = len(self.log) + 1
        self.log.extend(staged)
        self.versions = versions
        if key is not None:
            self.keys[key] = (batch, (first, len(self.log)))
        return first, len(self.log)


class AppendMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp()
        self.store = LmdbLog(self.directory + "/store", sync=False, map_size=1 << 20)
        self.model = Model()

    @rule(batch=writes, key=st.none() | st.sampled_from(["k1", "k2"]))
    def append(self, batch: list[StreamWrite], key: str | None) -> None:
        predicted = self.model.append(batch, key)
        try:
            result = self.store.append(batch, actor="model", idempotency_key=key)
            outcome: str | tuple[int, int] = (result.first_position, result.last_position)
        except ConcurrencyError:
            outcome = "concurrency"
        except IdempotencyConflictError:
            outcome = "conflict"
        assert outcome == predicted

    @invariant()
    def the_log_reads_back_as_the_model_log(self) -> None:
        stored = [(e.stream, e.version, e.event) for e in self.store.read_all(batch_size=5)]
        assert stored == self.model.log
        assert all(self.store.stream_version(s) == self.model.versions.get(s, 0) for s in STREAMS)

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory)


AppendMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=20, deadline=None)
test_appends_follow_the_model = AppendMachine.TestCase
