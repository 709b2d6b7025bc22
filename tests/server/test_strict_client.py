"""A strict client finds nothing to trip on: the official MCP TypeScript SDK client (pinned in
tests/strict/package-lock.json) drives every profile over stdio.

It lists tools, prompts, resources and templates; calls every tool with arguments built from
the schema it was shown (the required fields; every field; each `action`) and with bad ones
(an unknown field, a wrong type, a required field left out); reads every resource and
template, and some that do not exist. It fails on any SDK validation error (the client
checks results against output schemas), any protocol deviation, any error that is not the
one the protocol asks for, and any mismatch between a schema and its handler: a call the
schema allows refused for its shape, one the schema refuses accepted, a field the handler
takes that the schema leaves out; and on a tool that says it is read-only writing a file.

Needs Node and the pinned SDK in .ci/node/strict (`.ci/run` installs both); skipped, saying
why, where they are absent, except on CI (CI=true, or .ci/run's
CHRONOGRAPH_TEST_STRICT_CLIENT_REQUIRED), where it fails instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import PROFILES
from chronograph.server.resources import RESOURCE_NOT_FOUND
from mcp_types import INVALID_PARAMS
from support.examples import example, missing_fields, plausible, tree

pytestmark = pytest.mark.wire  # servers in subprocesses: skip locally with -m 'not slow and not wire'

ROOT = Path(__file__).resolve().parents[2]
PINNED = ROOT / "tests" / "strict"
MODULES = ROOT / ".ci" / "node" / "strict"
INSTALL = ("mkdir -p .ci/node/strict && cp tests/strict/package.json tests/strict/package-lock.json .ci/node/strict/ "
           "&& npm ci --prefix .ci/node/strict")
SHAPE = re.compile(r"unknown field|expected `|missing required field|invalid enum value", re.IGNORECASE)
"""How the argument parser words a field the schema should have described otherwise."""
UNKNOWN = "notAField"


def sdk() -> Path:
    """Where the pinned SDK is installed; skip (fail on CI) saying why it cannot run."""
    if shutil.which("node") is None:
        reason = "Node.js is not installed: the strict client is the official MCP TypeScript SDK"
    elif not (MODULES / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").exists():
        reason = f"the pinned MCP TypeScript SDK is not installed: run .ci/run, or {INSTALL}"
    elif (MODULES / "package-lock.json").read_bytes() != (PINNED / "package-lock.json").read_bytes():
        reason = f"the installed MCP TypeScript SDK is not the pinned one: {INSTALL}"
    else:
        return MODULES
    if os.environ.get("CI", "").lower() == "true" or os.environ.get("CHRONOGRAPH_TEST_STRICT_CLIENT_REQUIRED"):
        pytest.fail(f"{reason} (on CI the strict client must run)")
    pytest.skip(reason)


class Strict:
    """The TypeScript client in a Node process, serving one step per line (see tests/strict/drive.mjs)."""

    def __init__(self, modules: Path, profile: str, server: list[str], cwd: Path) -> None:
        self.profile = profile
        self.process = subprocess.Popen(
            ["node", str(PINNED / "drive.mjs"), str(modules), "--", *server], cwd=cwd, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.steps = 0

    def __call__(self, op: str, **step: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **step}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the strict client stopped (exit {self.process.poll()}) at {op} {step}"
        outcome: dict[str, Any] = json.loads(line)
        assert outcome["deviations"] == [], f"{op} {step}: {outcome['deviations']}"
        if "error" in outcome:  # the server's own error, never the SDK rejecting what the server sent
            assert outcome["answered"] and "error" in outcome["answered"], f"{op} {step}: the SDK refused {outcome}"
        self.steps += 1
        return outcome

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            assert self.process.wait(timeout=60) == 0
        finally:
            self.process.stdout.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def strict(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Strict]:
    modules = sdk()
    (tmp_path / "exports").mkdir()
    server = [sys.executable, "-m", "chronograph", "--store", str(tmp_path / "store"), "--profile", request.param,
              "--export-dir", str(tmp_path / "exports")]
    client = Strict(modules, request.param, server, tmp_path)
    yield client
    client.close()


def text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


def wrong(schema: dict[str, Any]) -> Any:
    """A value of a type `schema` does not allow."""
    kinds = schema.get("type", [])
    return "x" if "object" in kinds or "anyOf" in schema else {"wrong": True}


def calls(tool: dict[str, Any], fill: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(what, arguments) a client following the schema sends: the required fields, every field, each action."""
    schema = tool["inputSchema"]
    required = example(schema, every=False, fill=fill)
    yield "required", required
    yield "every", example(schema, fill=fill)
    for action in schema.get("properties", {}).get("action", {}).get("enum", [])[1:]:
        yield f"action {action}", {**required, "action": action}


def bad_calls(tool: dict[str, Any], fill: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(the field named in the refusal, arguments) the schema refuses."""
    schema = tool["inputSchema"]
    required = example(schema, every=False, fill=fill)
    yield UNKNOWN, {**required, UNKNOWN: 1}
    field = next(iter(schema.get("required", []) or schema.get("properties", {})), None)
    if field is not None:
        yield field, {**required, field: wrong(schema["properties"][field])}
    if schema.get("required"):
        yield field, {k: v for k, v in required.items() if k != field}


@pytest.mark.parametrize("strict", list(PROFILES), indirect=True)
def test_the_typescript_sdk_client_finds_nothing_to_trip_on(strict: Strict, project: Path, tmp_path: Path) -> None:
    profile = strict.profile
    listed = strict("list")["result"]
    assert listed["protocolVersion"] == "2025-11-25"
    assert [t["name"] for t in listed["tools"]] == PROFILES[profile].tools.names()
    fill, seen = plausible(project), Counter[str]()
    destructive = [t for t in listed["tools"] if not t["annotations"]["readOnlyHint"]
                   and t["annotations"].get("destructiveHint", True)]
    for tool in sorted(listed["tools"], key=lambda t: t in destructive):  # deletions last: they empty the graph
        name, read_only = tool["name"], tool["annotations"]["readOnlyHint"]
        assert missing_fields(PROFILES[profile].tools[name].arguments, tool["inputSchema"]) == [], name
        for what, arguments in calls(tool, fill):
            assert strict("check", name=name, arguments=arguments)["result"]["valid"], (name, what, arguments)
            before = tree(tmp_path, skip=tmp_path / "store")
            result = strict("call", name=name, arguments=arguments)["result"]
            assert not read_only or tree(tmp_path, skip=tmp_path / "store") == before, f"{name} ({what}) wrote"
            seen["valid"] += 1
            seen["succeeded" if not result["isError"] else "refused"] += 1
            assert not (result["isError"] and SHAPE.search(text(result))), (
                f"{name} ({what}): the schema allows {arguments}, the handler refuses its shape: {text(result)}")
        for field, arguments in bad_calls(tool, fill):
            verdict = strict("check", name=name, arguments=arguments)["result"]
            assert not verdict["valid"], (name, arguments)
            result = strict("call", name=name, arguments=arguments)["result"]
            seen["bad"] += 1
            assert result["isError"] and field in text(result), (
                f"{name}: the schema refuses {arguments} ({verdict['message']}), the handler answered {result}")
    for prompt in listed["prompts"] or []:
        arguments = {a["name"]: "x" for a in prompt.get("arguments", [])}
        assert strict("prompt", name=prompt["name"], arguments=arguments)["result"]["messages"]
    for resource in listed["resources"] or []:
        contents = strict("read", uri=resource["uri"])["result"]["contents"]
        body = json.loads(contents[0]["text"])
        assert not (isinstance(body, dict) and body.get("status") == "error"), (resource["uri"], body)
        seen["read"] += 1
    for template in listed["resourceTemplates"] or []:
        assert template["uriTemplate"] == "mcp://memory/graph?path={+path}"  # the one template: n2n's
        graph = strict("read", uri=f"mcp://memory/graph?path={project}")["result"]["contents"]
        assert "graph" in json.loads(graph[0]["text"])
        for path, code in ((tmp_path / "nowhere", RESOURCE_NOT_FOUND), ("relative/root", INVALID_PARAMS)):
            assert strict("read", uri=f"mcp://memory/graph?path={path}")["error"]["code"] == code
        seen["read"] += 1
    missing = strict("read", uri="memory://nope")["error"]
    assert (missing["code"], missing["data"]) == (RESOURCE_NOT_FOUND, {"uri": "memory://nope", "code": "not_found"})
    print(f"strict client, {profile}: {dict(seen)} in {strict.steps} steps")
