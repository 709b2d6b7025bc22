"""What answers cost an agent: bytes and tokens per common call, ours against the official server's.

    uv run --locked --group bench python bench/bench_tokens.py [--sizes 1000,50000] [--json FILE]

At each size N, one graph (N entities with 3 observations each and 2 relations per entity,
from bench/workload.py) is written as the official server's memory.jsonl; the official
memory server (npm, needs node) reads it, and `chronograph import` loads it into a store
for the default profile and another for `--profile official`. Each server then answers the
same calls over stdio, through a raw JSON-RPC client (the bytes as sent): read_graph,
open_nodes of 2 names, search_nodes of two adjacent words (a phrase that matches a few
dozen entities), create_entities of 1 entity. With --baseline, another Chronograph (an older
checkout) answers too, in its default profile. For each answer: the text block's bytes and
tokens (what a model reads), and the whole JSON-RPC line's bytes (text block, structured
content and envelope). Tokens are counted with OpenAI's o200k_base and cl100k_base BPE,
whose vocabularies the `bpe-openai` package ships (tiktoken's own loader fetches them).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_server import OFFICIAL_PACKAGE
from report import print_table, write_json
from workload import Workload

CALLS = ("read_graph", "open_nodes 2", "search two words", "create 1 entity")
TARGETS = ("baseline default", "default", "official profile", "official server")


class Raw:
    """A stdio MCP session spoken by hand: each reply's line exactly as the server wrote it."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        self.id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench-tokens", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
        self.id += 1
        self._send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed its output during {method}")
            message = json.loads(line)
            if message.get("id") == self.id:
                return line.rstrip(b"\n"), message

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bytes, str]:
        """The reply's line and its text block."""
        line, message = self.request("tools/call", {"name": tool, "arguments": arguments})
        result = message["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result['content'][0]['text'][:300]}")
        return line, result["content"][0]["text"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def graph_file(size: int, path: Path) -> tuple[list[dict[str, Any]], str]:
    """Write the graph of `size` entities as memory.jsonl; its entities, and a two-word query."""
    workload = Workload(seed=11)
    entities = []
    for i in range(size):
        _, event = workload.entity(i, observations=3)
        entities.append({"type": "entity", "name": event.name, "entityType": event.entity_type,
                         "observations": list(event.observations)})
    rng = random.Random(5)
    relations, seen = [], set()
    for i in range(size):
        for _ in range(2):
            key = (workload.name(i), rng.choice(["knows", "uses", "owns"]), workload.name(rng.randrange(size)))
            if key not in seen:
                seen.add(key)
                relations.append({"type": "relation", "from": key[0], "to": key[2], "relationType": key[1]})
    lines = [json.dumps(item, ensure_ascii=False) for item in (*entities, *relations)]
    path.write_text("\n".join(lines), encoding="utf-8")
    return entities, two_words(entities)


def two_words(entities: list[dict[str, Any]], wanted: int = 24) -> str:
    """Two adjacent words of an observation whose phrase matches about `wanted` entities."""
    texts = [" ".join([e["name"], e["entityType"], *e["observations"]]).lower() for e in entities]
    best, distance = "", float("inf")
    for entity in entities[:200]:
        words = entity["observations"][0].split()
        for first, second in zip(words, words[1:], strict=False):
            phrase = f"{first} {second}"
            count = sum(phrase in text for text in texts)
            if abs(count - wanted) < distance:
                best, distance = phrase, abs(count - wanted)
    return best


def tokens(encoder: Any, text: str, piece: int = 200_000) -> int:
    """The tokens of `text`, counted in pieces that end just after a newline: the encoder refuses
    inputs of over 200,000 tokens, and no token of either vocabulary spans the start of a line
    (their pre-tokenisers end a piece at a line break)."""
    total, start = 0, 0
    while start < len(text):
        end = text.find("\n", start + piece)
        end = len(text) if end < 0 else end + 1
        total += len(encoder.encode(text[start:end], disallowed_special=()))
        start = end
    return total


def answers(server: Raw, query: str) -> dict[str, tuple[bytes, str]]:
    new = {"name": "Bench new entity", "entityType": "bench",
           "observations": ["created by the token benchmark", "one of three", "the last one"]}
    return {
        "read_graph": server.call("read_graph", {}),
        "open_nodes 2": server.call("open_nodes", {"names": ["Entity 0000031", "Entity 0000037"]}),
        "search two words": server.call("search_nodes", {"query": query}),
        "create 1 entity": server.call("create_entities", {"entities": [new]}),
    }


def official_script(root: Path) -> Path | None:
    if shutil.which("npm") is None or shutil.which("node") is None:
        return None
    prefix = root / "official"
    prefix.mkdir(exist_ok=True)
    subprocess.run(["npm", "install", "--silent", "--prefix", str(prefix), OFFICIAL_PACKAGE], check=True,
                   stdout=subprocess.DEVNULL)
    return prefix / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"


def measure(size: int, root: Path, script: Path, encoders: dict[str, Any], baseline: list[str] | None,
            ) -> dict[str, dict[str, dict[str, int]]]:
    folder = root / f"n{size}"
    folder.mkdir()
    memory_file = folder / "memory.jsonl"
    _, query = graph_file(size, memory_file)
    print(f"[N={size:,}] search query {query!r}", file=sys.stderr)
    ours = [sys.executable, "-m", "chronograph"]
    replies: dict[str, dict[str, tuple[bytes, str]]] = {}
    runs = [("default", ours, "chronograph"), ("official profile", ours, "official")]
    if baseline is not None:
        runs.append(("baseline default", baseline, "chronograph"))
    for target, chronograph, profile in runs:
        store = folder / f"store-{target.replace(' ', '-')}"
        subprocess.run([*chronograph, "import", "--store", str(store), str(memory_file)], check=True,
                       stdout=subprocess.DEVNULL)
        server = Raw([*chronograph, "serve", "--store", str(store), "--profile", profile, "--max-reply", "0",
                      "--embeddings", "off"])
        replies[target] = answers(server, query)
        server.close()
    official_file = folder / "official.jsonl"
    shutil.copy(memory_file, official_file)
    server = Raw(["node", str(script)], env={"MEMORY_FILE_PATH": str(official_file)})
    replies["official server"] = answers(server, query)
    server.close()
    figures: dict[str, dict[str, dict[str, int]]] = {}
    for target, by_call in replies.items():
        figures[target] = {}
        for call, (line, text) in by_call.items():
            counted = {"text_bytes": len(text.encode()), "wire_bytes": len(line)}
            for name, encoder in encoders.items():
                counted[f"text_tokens_{name}"] = tokens(encoder, text)
            figures[target][call] = counted
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; return 0 (2 without node or the tokenizer)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,50000", help="graph sizes (entities)")
    parser.add_argument("--baseline", metavar="CMD", help='also another Chronograph\'s default profile, say '
                        '"/old/.venv/bin/python -m chronograph"')
    parser.add_argument("--json", type=Path, default=Path("bench-tokens.json"))
    args = parser.parse_args(argv)
    try:
        import bpe_openai  # noqa: PLC0415 (the bench group's only package)
    except ImportError:
        print("bpe-openai is not installed: run with `uv run --locked --group bench`", file=sys.stderr)
        return 2
    encoders = {name: bpe_openai.get_encoding(f"{name}_base") for name in ("o200k", "cl100k")}
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = official_script(root)
        if script is None:
            print("node/npm not found: the official server is the measure's yardstick", file=sys.stderr)
            return 2
        for size in sizes:
            results[size] = measure(size, root, script, encoders,
                                    None if args.baseline is None else shlex.split(args.baseline))

    rows = []
    for size in sizes:
        theirs = results[size]["official server"]
        for call in CALLS:
            for target in (t for t in TARGETS if t in results[size]):
                got = results[size][target][call]
                ratio = "" if target == "official server" else (
                    "vs official: text bytes {:.2f}x, o200k {:.2f}x, cl100k {:.2f}x, wire {:.2f}x".format(
                        got["text_bytes"] / theirs[call]["text_bytes"],
                        got["text_tokens_o200k"] / theirs[call]["text_tokens_o200k"],
                        got["text_tokens_cl100k"] / theirs[call]["text_tokens_cl100k"],
                        got["wire_bytes"] / theirs[call]["wire_bytes"]))
                figure = (f"{got['text_bytes']:,} B, {got['text_tokens_o200k']:,} / {got['text_tokens_cl100k']:,} tok, "
                          f"wire {got['wire_bytes']:,} B")
                rows.append((f"N={size:,} {call}: {target}", figure, ratio))
    print_table("answer sizes: text bytes, text tokens (o200k / cl100k), JSON-RPC line bytes", rows)
    write_json(args.json, {"sizes": sizes, "official_package": OFFICIAL_PACKAGE, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
