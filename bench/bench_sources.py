"""Benchmark `chronograph import` of the other servers' memories against the official file of the
same graph, side by side.

    python bench/bench_sources.py --entities 20000 [--team-entries 2000] [--runs 3]

Writes one graph (each entity two observations, one relation per entity) as the official JSONL,
an n2n project folder, mem0's export (JSONL, an owner per entity, no relations: mem0 has none
without its graph store), a basic-memory folder (a note per entity) and a Kuzu memory graph
database (when `kuzu` is installed), and Agent Memory's database of `--team-entries` knowledge
entries of two versions each; then imports each into a fresh store in a process of its own:
median wall and CPU seconds, the peak RSS of the import process, the events written, and the
CPU against the official file's (what reading another format and staging it costs).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from report import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
COMMAND = f"{sys.executable} -m chronograph"
TIME = "/usr/bin/time"
"""GNU time (Debian's `time` package), for each import's own peak RSS"""


def graph(entities: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [{"name": f"Entity {i:06d}", "entityType": "thing",
              "observations": [f"observation one of entity {i}", f"observation two of entity {i}"]}
             for i in range(entities)]
    edges = [{"from": f"Entity {i:06d}", "to": f"Entity {(i * 7 + 1) % entities:06d}", "relationType": "knows"}
             for i in range(entities)]
    return nodes, edges


def official(folder: Path, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> Path:
    path = folder / "memory.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for node in nodes:
            out.write(json.dumps({"type": "entity", **node}) + "\n")
        for edge in edges:
            out.write(json.dumps({"type": "relation", **edge}) + "\n")
    return path


def n2n(folder: Path, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> Path:
    root = folder / "project"
    (root / ".mcp").mkdir(parents=True)
    (root / ".mcp" / "memory.json").write_text(json.dumps({"entities": nodes, "relations": edges}), encoding="utf-8")
    return root


def mem0(folder: Path, nodes: list[dict[str, Any]], _: list[dict[str, Any]]) -> Path:
    path = folder / "mem0.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for node in nodes:
            for number, text in enumerate(node["observations"]):
                out.write(json.dumps({"id": f"{node['name']}-{number}", "memory": text, "user_id": node["name"]})
                          + "\n")
    return path


def basic_memory(folder: Path, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> Path:
    root = folder / "notes"
    root.mkdir()
    for node, edge in zip(nodes, edges, strict=True):
        slug = node["name"].lower().replace(" ", "-")
        lines = ["---", f"title: {node['name']}", "type: thing", f"permalink: {slug}", "---", "", f"# {node['name']}",
                 "", *(f"- [fact] {text}" for text in node["observations"]), f"- knows [[{edge['to']}]]", ""]
        (root / f"{slug}.md").write_text("\n".join(lines), encoding="utf-8")
    return root


def kuzu_database(folder: Path, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> Path | None:
    try:
        import kuzu
    except ImportError:
        return None
    path = folder / "memory.kuzu"
    database = kuzu.Database(str(path))
    connection = kuzu.Connection(database)
    connection.execute("CREATE NODE TABLE Entity (name STRING PRIMARY KEY, type STRING, observations STRING[], "
                       "embedding FLOAT[384], created_date DATE DEFAULT current_date(), updated_date DATE "
                       "DEFAULT current_date())")
    connection.execute("CREATE REL TABLE RELATED_TO (FROM Entity TO Entity, relationship_type STRING, confidence "
                       "FLOAT DEFAULT 1.0, created_date DATE DEFAULT current_date())")
    for start in range(0, len(nodes), 5000):
        rows = [{"name": n["name"], "type": n["entityType"], "obs": n["observations"]}
                for n in nodes[start:start + 5000]]
        connection.execute("UNWIND $rows AS r CREATE (:Entity {name: r.name, type: r.type, observations: r.obs})",
                           {"rows": rows})
    for start in range(0, len(edges), 5000):
        rows = [{"a": e["from"], "b": e["to"]} for e in edges[start:start + 5000]]
        connection.execute("UNWIND $rows AS r MATCH (a:Entity {name: r.a}), (b:Entity {name: r.b}) "
                           "CREATE (a)-[:RELATED_TO {relationship_type: 'knows', confidence: 1.0}]->(b)",
                           {"rows": rows})
    connection.close()
    database.close()
    return path


def agent_memory(folder: Path, entries: int) -> Path:
    path = folder / "agent-memory.db"
    db = sqlite3.connect(path)
    db.executescript((ROOT / "tests/application/lifecycle/fixtures/agent-memory.sql").read_text(encoding="utf-8")
                     .split("\nINSERT", 1)[0])
    for i in range(entries):
        db.execute("INSERT INTO knowledge (id, scope_type, title, category, current_version_id) VALUES "
                   "(?, 'global', ?, 'fact', ?)", (f"k{i}", f"Fact {i}", f"k{i}v2"))
        for n in (1, 2):
            db.execute("INSERT INTO knowledge_versions (id, knowledge_id, version_num, content, change_reason) "
                       "VALUES (?, ?, ?, ?, ?)", (f"k{i}v{n}", f"k{i}", n, f"fact {i}, version {n}",
                                                  None if n == 1 else "corrected"))
    db.commit()
    db.close()
    return path


def measured(source: Path, folder: Path, runs: int) -> dict[str, Any]:
    """`runs` imports of `source`, each into a fresh store in a process of its own: median wall and
    CPU seconds, the largest peak RSS (MiB), the events written.

    The peak RSS is GNU time's (`%M`): a child's own `ru_maxrss` from wait4 starts at its parent's
    high-water mark, and this parent holds the graph (and Kuzu) it wrote the sources with.
    """
    walls, cpus, rss = [], [], []
    for run in range(runs):
        store = folder / f"store-{source.name}-{run}"
        began = time.perf_counter()
        child = subprocess.Popen([TIME, "-f", "%M", *shlex.split(COMMAND), "import", str(source), "--store",
                                  str(store)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        walls.append(time.perf_counter() - began)
        err = child.stderr.read().decode()  # type: ignore[union-attr]
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"import of {source} failed: {err}")
        cpus.append(usage.ru_utime + usage.ru_stime)
        rss.append(int(err.strip().splitlines()[-1]) / 1024)
    probe = subprocess.run([sys.executable, "-c", "import sys\nfrom chronograph.application import Memory\n"
                            "with Memory(sys.argv[1]) as m: print(m.log.head())", str(store)],
                           capture_output=True, text=True, check=True, cwd=ROOT)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "rss_mib": max(rss),
            "events": int(probe.stdout)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=20_000)
    parser.add_argument("--team-entries", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, default=Path("bench-sources.json"))
    args = parser.parse_args(argv)
    nodes, edges = graph(args.entities)
    figures: dict[str, Any] = {"entities": args.entities, "team_entries": args.team_entries, "runs": args.runs}
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as scratch:
        folder = Path(scratch)
        sources: dict[str, Path | None] = {}
        for name, make in (("official", official), ("n2n", n2n), ("mem0", mem0), ("basic-memory", basic_memory),
                           ("kuzu", kuzu_database)):
            (folder / name).mkdir()
            sources[name] = make(folder / name, nodes, edges)
        (folder / "agent-memory").mkdir()
        sources["agent-memory"] = agent_memory(folder / "agent-memory", args.team_entries)
        results = {name: measured(path, folder, args.runs) for name, path in sources.items() if path is not None}
    base = results["official"]["cpu_s"]
    rows = []
    for name, result in results.items():
        ratio = f"{result['cpu_s'] / base:.2f}x official CPU" if name != "agent-memory" else "(team entries)"
        rows.append((f"{name}: median wall s / CPU s", f"{result['wall_s']:.2f} / {result['cpu_s']:.2f}", ratio))
        rows.append((f"{name}: events, peak RSS MiB", f"{result['events']:,} / {result['rss_mib']:.0f}", ""))
    print_table(f"import of {args.entities:,} entities ({args.team_entries:,} team entries), median of {args.runs}",
                rows)
    figures["results"] = results
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
