"""The registry: a tool is declared once, its Structs read from its handler's annotations."""

from __future__ import annotations

import pytest
from chronograph.application import CORE, PROFILES, Registry
from chronograph.application.engine.arguments import ReadArgs
from chronograph.application.engine.outputs import Out
from chronograph.application.profiles import OFFICIAL_TOOLS, SHARED_TEAM_TOOLS


class Echo(ReadArgs, kw_only=True):
    text: str


class Echoed(Out, kw_only=True):
    text: str


def test_a_declared_handler_becomes_a_tool_with_the_structs_of_its_annotations() -> None:
    registry = Registry()

    @registry.query("echo", "Echo", "Say it back")
    def echo(memory: object, args: Echo) -> Echoed:
        return Echoed(text=args.text)

    tool = registry["echo"]
    assert (tool.name, tool.title, tool.kind, tool.arguments, tool.output) == ("echo", "Echo", "read", Echo, Echoed)
    assert tool.handler(None, Echo(text="hi")) == Echoed(text="hi") and not tool.writes


def test_a_handler_without_typed_arguments_is_refused_when_declared() -> None:
    registry = Registry()
    with pytest.raises(TypeError, match="annotate its `args`"):

        @registry.command("broken", "Broken", "No types")
        def broken(batch, args):  # type: ignore[no-untyped-def]
            return None


def test_a_name_is_declared_once() -> None:
    registry = Registry()

    @registry.query("echo", "Echo", "Say it back")
    def echo(memory: object, args: Echo) -> Echoed:
        return Echoed(text=args.text)

    with pytest.raises(ValueError, match="registered already"):
        registry.query("echo", "Echo", "Again")(echo)


def test_the_official_profile_is_the_nine_official_tools_in_their_order() -> None:
    assert PROFILES["official"].tools.names() == list(OFFICIAL_TOOLS)


def test_the_default_profile_offers_every_core_tool_official_ones_first_and_team_sessions_and_locks() -> None:
    names = PROFILES["chronograph"].tools.names()
    assert names[:9] == list(OFFICIAL_TOOLS) and sorted(names) == sorted([*CORE.names(), *SHARED_TEAM_TOOLS])


def test_every_command_writes_and_every_query_reads() -> None:
    for tool in CORE:
        assert tool.writes == (tool.kind in ("write", "delete")), tool.name
