"""Usage errors: one line, the command's own --help, and an unknown flag or command named
with the nearest known one, before any other complaint could hide it."""

from __future__ import annotations

import argparse

import pytest
from chronograph.tools.cli import SUBCOMMANDS, build_parser, main


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_a_misspelt_flag_is_named_with_the_flag_meant_not_a_missing_required_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = refusal(capsys, "replay", "--positon", "5")
    assert err == ("chronograph replay: unknown flag --positon; did you mean --position? "
                   "(see chronograph replay --help)\n")


def long_flags(command: str) -> list[str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub = commands.choices[command]
    return [f for f in sub._option_string_actions if f.startswith("--") and f != "--help"]


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_command_names_a_misspelt_flag_and_points_at_its_own_help(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = long_flags(command)[-1]
    typo = flag[:3] + flag[4:] + "x"  # a letter dropped, one added: no longer a prefix of anything
    err = refusal(capsys, command, typo)
    assert err.startswith(f"chronograph {command}: unknown flag {typo}; did you mean --")
    assert err.endswith(f"(see chronograph {command} --help)\n")
    err = refusal(capsys, command, "--zzzzzz")
    assert err == f"chronograph {command}: unknown flag --zzzzzz (see chronograph {command} --help)\n"


def test_an_unknown_flag_without_a_command_is_the_server_s(capsys: pytest.CaptureFixture[str]) -> None:
    assert "chronograph serve: unknown flag --stoer; did you mean --store?" in refusal(capsys, "--stoer", "x")


def test_a_misspelt_command_is_named_with_the_command_meant(capsys: pytest.CaptureFixture[str]) -> None:
    err = refusal(capsys, "replya", "--at", "2026-01-01")
    assert err == "chronograph: unknown command 'replya'; did you mean replay? (see chronograph --help)\n"


def test_a_stray_argument_points_at_the_command_s_help(capsys: pytest.CaptureFixture[str]) -> None:
    err = refusal(capsys, "replay", "--at", "2026-01-01", "extra")
    assert err == "chronograph replay: unrecognized arguments: extra (see chronograph replay --help)\n"


def test_a_value_after_the_double_dash_is_not_taken_for_a_flag(capsys: pytest.CaptureFixture[str]) -> None:
    err = refusal(capsys, "forget", "--reason", "r", "--", "--not-a-flag", "two")
    assert "unknown flag" not in err and "unrecognized arguments: two" in err
