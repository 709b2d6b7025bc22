"""Retrieval quality per search mode: recall@3 and MRR on a labeled set.

    python bench/bench_retrieval.py [--distractors 2000] [--json FILE]

Thirty entities of a small company's memory, each asked for three ways: a paraphrase
that shares no content word with anything the entity says (checked below: a query that
does is refused), a misspelt query and an exact one. Among them sit `--distractors`
synthetic entities (made-up words, as the other benchmarks use) so that ranking has
something to rank against. Every mode of search_nodes answers every query through the
application core (Memory.read, the bundled model); a hit is the target entity among the
first three answers; MRR is the mean of 1/rank (0 when not in the first 20).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from statistics import mean
from typing import Any

from chronograph.application import Memory
from chronograph.projections.search.terms import terms
from report import print_table, write_json
from workload import Workload

MODES = ("substring", "ranked", "fuzzy", "semantic", "hybrid")
DEPTH = 20

# name, type, observations, paraphrase, misspelt, exact
LABELED: list[tuple[str, str, list[str], str, str, str]] = [
    ("Maria Chen", "person", ["Software engineer on the payments team", "Writes backend services in Go"],
     "programmer who builds server code", "paymnets engineer", "payments team"),
    ("Tom Okafor", "person", ["Product designer", "Sketches app screens in Figma"],
     "who draws user interface mockups", "Figam", "Figma"),
    ("Lena Duarte", "person", ["Chief financial officer", "Approves every budget above ten thousand euros"],
     "executive in charge of money", "budjet approval", "chief financial officer"),
    ("Ravi Patel", "person", ["Sales lead for northern Europe", "Closed the Nordea deal in March"],
     "seller responsible for Scandinavian customers", "Nordae deal", "Nordea"),
    ("Ingrid Berg", "person", ["Recruiter", "Hires engineers and designers"],
     "someone who finds new staff for the company", "recruter", "Recruiter"),
    ("Kenji Mori", "person", ["Site reliability engineer", "Carries the pager for production outages"],
     "on-call operations specialist", "reliabilty", "pager"),
    ("Aisha Bello", "person", ["Lawyer", "Reviews contracts and privacy terms"],
     "attorney handling legal agreements", "contrcts", "privacy terms"),
    ("Project Atlas", "project", ["Migrates the billing database to PostgreSQL", "Due at the end of the quarter"],
     "moving invoices data to a new relational store", "Postgress migration", "billing database"),
    ("Project Beacon", "project", ["Mobile app for iOS and Android", "Lets customers track deliveries"],
     "smartphone application to follow parcels", "delivries app", "track deliveries"),
    ("Project Cedar", "project", ["Rewrite of the search page", "Adds typo tolerance and filters"],
     "making lookups forgive spelling mistakes", "serch page", "search page"),
    ("Berlin office", "place", ["Headquarters on Torstrasse", "Houses sixty employees"],
     "main company building in Germany's capital", "Torstrase", "Torstrasse"),
    ("Lisbon office", "place", ["Opened in 2025", "Support team works from here"],
     "Portuguese branch where customer help sits", "Lisbn", "Lisbon"),
    ("Coffee machine", "thing", ["Broken since Monday", "A technician comes on Thursday"],
     "the espresso maker is out of order", "tecnician", "technician"),
    ("Kubernetes cluster", "system", ["Runs every production service", "Hosted in Frankfurt"],
     "container orchestration platform for live workloads", "Kuberentes", "Kubernetes"),
    ("Grafana", "tool", ["Dashboards for latency and errors", "Alerts go to the on-call channel"],
     "charts showing how slow and failing requests are", "Grafanna", "dashboards"),
    ("Quarterly planning", "meeting", ["Happens the first week of each quarter", "Sets objectives for every team"],
     "recurring session where goals are decided", "quartely", "objectives"),
    ("Annual offsite", "event", ["Team retreat in the mountains", "Hiking and workshops for three days"],
     "yearly trip away from the office together", "offiste", "offsite"),
    ("Customer Acme", "customer", ["Largest account by revenue", "Renews its contract in June"],
     "biggest client in terms of income", "Acmme", "Acme"),
    ("Customer Initech", "customer", ["Complained about slow invoices", "Asked for a discount"],
     "client unhappy with billing delays who wants a lower price", "Inittech", "Initech"),
    ("Incident 42", "incident", ["Database ran out of disk space", "Checkout was down for two hours"],
     "storage filled up and purchases failed", "incidnet", "out of disk space"),
    ("Security policy", "document", ["Passwords rotate every ninety days", "Laptops must use full disk encryption"],
     "rules for credentials and encrypted computers", "pasword rotation", "full disk encryption"),
    ("Onboarding guide", "document", ["First steps for new hires", "Explains how to get accounts and a laptop"],
     "handbook for people joining the company", "onbaording", "new hires"),
    ("Vegan lunch", "preference", ["Maria eats no meat or dairy", "Order from the Green Bowl"],
     "dietary choice without animal products", "vegn", "Green Bowl"),
    ("Dark mode", "feature", ["Requested by many users", "Black background for the dashboard"],
     "night theme customers keep asking for", "darc mode", "Dark mode"),
    ("Rate limiter", "component", ["Caps each client at a hundred requests per second", "Written in Rust"],
     "throttling that stops too many calls", "limitter", "Rate limiter"),
    ("Python", "language", ["Used for data pipelines", "Version 3.12 everywhere"],
     "coding tongue for analytics jobs", "Pyhton", "Python"),
    ("Postmortem template", "document", ["Timeline, root cause, action items", "Blameless by rule"],
     "format for writing up what went wrong after an outage", "postmortm", "root cause"),
    ("Holiday calendar", "document", ["Lists public holidays per country", "Updated every December"],
     "days off by nation", "holliday", "public holidays"),
    ("VPN", "system", ["Required for internal tools", "Uses WireGuard"],
     "encrypted tunnel to reach the intranet", "WireGaurd", "WireGuard"),
    ("Espresso beans", "supply", ["Ordered monthly from a roaster in Porto", "Dark roast"],
     "coffee supplies bought every month", "roastr", "roaster in Porto"),
]
STOPWORDS = set("a an the to of in for and or who is are at on by with from how what where that which "
                "its it be our this these those every each after before than too many".split())


def checked_labels() -> None:
    """Refuse a paraphrase that shares a content word with what its entity says."""
    for name, entity_type, observations, paraphrase, _, _ in LABELED:
        said = set(terms(" ".join([name, entity_type, *observations])))
        shared = (set(terms(paraphrase)) - STOPWORDS) & said
        if shared:
            raise SystemExit(f"paraphrase for {name!r} shares {sorted(shared)} with the entity")


def rank_of(memory: Memory, mode: str, query: str, target: str) -> int | None:
    reply: Any = memory.read("search_nodes", {"query": query, "mode": mode, "limit": DEPTH})
    names = [e.name for e in reply.entities]
    return names.index(target) + 1 if target in names else None


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, default=2000, help="synthetic entities around the labeled ones")
    parser.add_argument("--json", type=Path, default=Path("bench-retrieval.json"))
    args = parser.parse_args(argv)
    checked_labels()
    workload = Workload(seed=5)
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "store", sync=False, embeddings="local") as memory:
        for start in range(0, args.distractors, 1000):
            batch = []
            for i in range(start, min(start + 1000, args.distractors)):
                _, event = workload.entity(i, observations=2)
                batch.append({"name": event.name, "entityType": event.entity_type,
                              "observations": list(event.observations)})
            memory.write("create_entities", {"entities": batch}, actor="bench")
        memory.write("create_entities", {"entities": [
            {"name": name, "entityType": entity_type, "observations": observations}
            for name, entity_type, observations, *_ in LABELED]}, actor="bench")
        assert memory.semantic is not None, "the semantic extra is needed: uv sync"
        print(f"embedding {args.distractors + len(LABELED):,} entities ...", file=sys.stderr)
        memory.semantic.catch_up()
        for kind, column in (("paraphrase", 3), ("misspelt", 4), ("exact", 5)):
            for mode in MODES:
                ranks = [rank_of(memory, mode, row[column], row[0]) for row in LABELED]  # type: ignore[misc]
                results.setdefault(kind, {})[mode] = {
                    "recall_at_3": mean(1.0 if r is not None and r <= 3 else 0.0 for r in ranks),
                    "mrr": mean(1 / r if r is not None else 0.0 for r in ranks),
                }
    rows = []
    for kind, by_mode in results.items():
        for mode, figures in by_mode.items():
            rows.append((f"{kind:10} {mode}", f"{figures['recall_at_3']:.2f} / {figures['mrr']:.2f}", ""))
    print_table(f"recall@3 / MRR over {len(LABELED)} queries per kind, among {args.distractors:,} distractors", rows)
    write_json(args.json, {"queries_per_kind": len(LABELED), "distractors": args.distractors, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
