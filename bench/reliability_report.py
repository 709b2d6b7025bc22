"""Run the long reliability harnesses and print one table.

    python bench/reliability_report.py [--kills 100] [--servers 8] [--writes 1000] [--races 50]
                                       [--fuzz 10000] [--wire 5000] [--flood 1050] [--damage 100]
                                       [--json FILE]

1. crash: --kills SIGKILLs of a stdio server under write load (bench/crash_harness.py);
2. concurrency: --servers processes x --writes writes with --races races on shared
   entities (bench/concurrency_harness.py);
3. fuzz: --fuzz hostile tool calls (the slow test in tests/server/test_fuzz.py);
4. wire fuzz: --wire hostile messages over stdio and over HTTP (tests/server/test_wire_fuzz.py);
5. a slowloris flood (--flood half-open sockets, bench/http_flood.py) while a real client
   asks /ready, and bytes flipped anywhere in a store file (--damage seeds, the slow test in
   tests/tools/test_damaged_stores.py);
6. the adversary's repros of issues 19 and 27, each replayed by the tests named in REPROS;
7. file commands aimed at a live server's store (bench/files_harness.py), every path argument
   of every command and profile fuzzed (tests/test_path_fuzz.py), and every page of a backup
   damaged and sealed again (the slow test in tests/tools/test_backup.py).
Exit code 0 only if every harness held.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import concurrency_harness
import crash_harness
import files_harness
import http_flood
from chronograph.tools.common.parsing import Parser
from report import print_table, write_json

ROOT = Path(__file__).resolve().parent.parent


def fuzz(test: str, label: str, env: dict[str, str]) -> dict[str, int]:
    """Run a slow fuzz test; return its outcome counts (and failures), read from what it prints."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-m", "slow", "-p", "no:cacheprovider", test],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env},
    )
    found = re.search(label + r": \{(.*?)\}", done.stdout)
    counts = {k.strip(" '"): int(v) for k, v in (item.split(":") for item in found.group(1).split(","))} \
        if found and found.group(1) else {}
    counts["failures"] = 0 if done.returncode == 0 else 1
    if done.returncode != 0:
        print(done.stdout[-3000:], file=sys.stderr)
    return counts


REPROS = {
    "rebuilds beside a running server (12 in a row)":
        "tests/tools/test_replay.py::test_a_server_keeps_working_through_many_rebuilds_run_beside_it",
    "exports aimed at a store, a dotfile, outside": "tests/application/engine/test_exportdir.py",
    "history and revert of a long entity":
        "tests/application/core/test_history_pages.py tests/server/test_time_travel.py",
    "slow headers, connection floods, session floods": "tests/server/test_http_edge.py",
    "malformed, oversized and non-UTF-8 stdio lines": "tests/server/test_stdio_wire.py",
    "integers past 64 bits": "tests/application/engine/test_arguments.py",
    "a full or failing disk": "tests/application/engine/test_storage.py tests/eventstore/test_damage.py",
    "a truncated data.mdb, flipped bytes": "tests/eventstore/test_damage.py tests/tools/test_replay.py",
    "two view formats on one store": "tests/projections/live/test_views.py",
    "an unknown event in the middle of the log": "tests/application/engine/test_unknown_events.py",
    # issue 27, data loss (and 33.3): one guarded writer, stores held while they are replaced
    "27.1 a cloned repository's link planted in .mcp (n2n)":
        "tests/server/surfaces/test_n2n_profile.py::test_a_cloned_repository_cannot_overwrite_the_store_of_a_stdio_server"
        " tests/server/surfaces/test_n2n_profile.py::"
        "test_a_planted_temporary_file_link_in_a_cloned_repository_is_never_written_through",
    "27.2 export -o STORE/data.mdb":
        "tests/tools/test_import_export.py::test_export_never_writes_into_a_store_even_when_forced",
    "27.3 backup -o STORE/data.mdb, STORE/lock.mdb":
        "tests/tools/test_backup.py::test_backup_never_writes_into_a_store_even_when_forced",
    "27.3/27.4 backup and restore --replace under a live server":
        "tests/tools/test_backup.py::"
        "test_backup_and_restore_aimed_at_a_live_server_s_store_are_refused_and_no_acknowledged_write_is_lost"
        " tests/eventstore/lmdb/test_holders.py",
    "27.5 n2n_export_markdown over a project's NOTES.md":
        "tests/server/surfaces/test_n2n_profile.py::test_the_markdown_export_replaces_an_existing_file_only_when_asked"
        " tests/server/surfaces/test_n2n_profile.py::test_the_markdown_export_never_writes_through_a_link",
    "27 the class: every writer, the same attacks": "tests/test_file_writers.py tests/eventstore/test_files.py",
    "27.16 damaged, crafted and forged backups":
        "tests/tools/test_backup.py::test_a_backup_with_damaged_views_restores_with_views_rebuilt_from_its_log"
        " tests/tools/test_backup.py::"
        "test_a_backup_crafted_to_crash_its_reader_is_refused_in_one_line_and_the_old_store_stays"
        " tests/tools/test_backup.py::test_a_keyed_backup_restores_only_with_its_key"
        " tests/tools/test_backup.py::test_a_keyed_backup_altered_and_sealed_again_without_the_key_is_refused",
    "33.3 export and backup over an existing file":
        "tests/tools/test_backup.py::test_backup_refuses_an_existing_file_unless_forced_and_names_the_flag"
        " tests/tools/test_import_export.py::test_export_refuses_an_existing_file_unless_forced_and_names_the_flag",
    # issue 27, erasure that leaked
    "27.6 a conflict's reply kept and served after forget": "tests/server/test_replies.py",
    "27.7 forgotten text in PostgreSQL's statistics, old snapshots":
        "tests/eventstore/postgres/test_statistics.py tests/eventstore/postgres/test_vacuum.py",
    "27.8 a cache that was offline during a forget":
        "tests/application/engine/test_stores.py::"
        "test_a_cache_that_was_offline_during_a_forget_keeps_nothing_of_it_when_it_comes_back",
    "27.9 a team entry that could not be forgotten": "tests/application/team/test_forgetting.py",
    "27 erasure through every profile, both backends, every byte": "tests/server/test_erasure_everywhere.py",
    # issue 27, points 10-15
    "27.10 listening beyond loopback without a token; Host: localhost from elsewhere":
        "tests/server/test_addresses.py",
    "27.11 one client's sessions locking its address out; openings racing the count":
        "tests/server/test_sessions.py tests/server/test_http_edge.py::test_one_client_opening_session_after_session_"
        "does_not_lock_out_the_others tests/server/test_http_edge.py::test_sessions_opened_all_at_once_are_admitted_"
        "at_most_to_the_share tests/server/test_http_edge.py::test_a_busy_session_is_never_the_one_closed",
    "27.12 a slowloris flood keeping real clients out":
        "tests/server/test_http_edge.py::test_a_slowloris_flood_does_not_keep_a_real_client_out "
        "tests/server/test_http_edge.py::test_a_connection_over_the_cap_takes_the_place_of_the_one_that_owed_a_"
        "request_longest",
    "27.13 stdio ids: too deep, 2.5, null": "tests/server/test_stdio_wire.py",
    "27.14 every integer argument of every tool at its edges": "tests/application/engine/test_integer_edges.py",
    "27.15 flipped bytes in view records and the log": "tests/tools/test_damaged_stores.py",
}
"""The adversary's repros (issues 19 and 27), as the tests that replay them."""


def repros() -> dict[str, tuple[int, int]]:
    """(passed, failed) of the tests behind each repro."""
    held = {}
    for case, tests in REPROS.items():
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests.split()],
                              cwd=ROOT, capture_output=True, text=True)
        passed = re.search(r"(\d+) passed", done.stdout)
        failed = re.search(r"(\d+) failed", done.stdout)
        held[case] = (int(passed.group(1)) if passed else 0, int(failed.group(1)) if failed else 0)
        if done.returncode != 0:
            print(done.stdout[-3000:], file=sys.stderr)
    return held


def main(argv: list[str] | None = None) -> int:
    """Run every long harness; print the table; 0 only if all held."""
    parser = Parser(prog="reliability_report", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--races", type=int, default=50)
    parser.add_argument("--fuzz", type=int, default=10_000)
    parser.add_argument("--wire", type=int, default=5_000, help="hostile messages per transport (stdio, HTTP)")
    parser.add_argument("--flood", type=int, default=1050, help="half-open sockets of the slowloris flood")
    parser.add_argument("--damage", type=int, default=100, help="stores with bytes flipped anywhere in the file")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", type=Path, default=Path("reliability.json"))
    args = parser.parse_args(argv)

    print(f"crash test: {args.kills} kills ...", file=sys.stderr)
    started = time.monotonic()
    crash = crash_harness.run(argparse.Namespace(kills=args.kills, seed=args.seed, store=None, verbose=False))
    crash_seconds = time.monotonic() - started

    print(f"concurrency: {args.servers} servers x {args.writes} writes ...", file=sys.stderr)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        races = concurrency_harness.run(args.servers, args.writes, args.races, Path(tmp) / "store")
    race_seconds = time.monotonic() - started

    print(f"fuzz: {args.fuzz} calls ...", file=sys.stderr)
    fuzzed = fuzz("tests/server/test_fuzz.py::test_ten_thousand_hostile_calls_get_clear_errors", "fuzz outcomes",
                  {"CHRONOGRAPH_FUZZ_EXAMPLES": str(args.fuzz)})
    cases = sum(v for k, v in fuzzed.items() if k != "failures")
    wire = {}
    for transport in ("stdio", "http"):
        print(f"wire fuzz over {transport}: {args.wire} messages ...", file=sys.stderr)
        wire[transport] = fuzz(
            f"tests/server/test_wire_fuzz.py::test_thousands_of_hostile_messages_over_{transport}_are_all_answered",
            rf"wire fuzz outcomes \({transport}\)", {"CHRONOGRAPH_WIRE_EXAMPLES": str(args.wire)})
    wire_cases = {t: sum(v for k, v in counts.items() if k != "failures") for t, counts in wire.items()}
    print("file commands aimed at live servers' stores ...", file=sys.stderr)
    files = files_harness.run(20)
    print("every path argument, hostile paths ...", file=sys.stderr)
    paths = {scope: fuzz(f"tests/test_path_fuzz.py::test_every_path_argument_of_every_{test}_leaves_every_store_intact",
                         f"{scope} path fuzz outcomes", {})
             for scope, test in (("command", "command"), ("tool", "profile_s_tools"))}
    crafted = fuzz("tests/tools/test_backup.py::"
                   "test_every_page_of_a_backup_damaged_and_sealed_again_restores_whole_or_is_refused",
                   "crafted backups", {})
    print(f"slowloris: {args.flood} half-open sockets for 30 s ...", file=sys.stderr)
    flood = http_flood.run(args.flood, 30.0, "reliability-token")
    print(f"damage: {args.damage} stores with bytes flipped anywhere ...", file=sys.stderr)
    damaged = fuzz("tests/tools/test_damaged_stores.py::test_bytes_flipped_anywhere_in_the_file_never_end_in_a_"
                   "traceback", "raw damage outcomes", {"CHRONOGRAPH_RAW_DAMAGE_SEEDS": str(args.damage)})
    flood_failed = int(not flood["server_alive"] or float(flood["during_rate"]) < 0.99)  # type: ignore[arg-type]
    print("the adversary's repros ...", file=sys.stderr)
    held = repros()

    errors = (crash.lost + crash.partial + crash.mismatches + crash.gaps + crash.duplicates
              + races.lost + (races.races - races.races_with_one_winner) + races.bad_conflicts
              + races.mismatches + fuzzed["failures"] + sum(w["failures"] for w in wire.values())
              + sum(not files_harness.held(o) for o in files) + sum(p["failures"] for p in paths.values())
              + crafted["failures"] + sum(failed for _, failed in held.values()) + flood_failed
              + damaged["failures"])
    rows = [
        ("load held: concurrent writes acknowledged",
         f"{races.acknowledged:,} of {races.writes:,} ({races.acknowledged / race_seconds:,.0f}/s, "
         f"{args.servers} processes)", "all"),
        ("load held: writes acknowledged between kills",
         f"{crash.acknowledged_calls:,} calls, {crash.acknowledged_entities:,} entities", ""),
        ("kills survived (SIGKILL mid-write)", f"{crash.kills}", f">= {args.kills}"),
        ("acknowledged writes lost", f"{crash.lost + races.lost}", "0"),
        ("batches partly visible after a kill", f"{crash.partial}", "0"),
        ("in-flight writes retried by requestId", f"{crash.retries}", ""),
        ("races with exactly one winner", f"{races.races_with_one_winner} of {races.races}", "all"),
        ("losers told the current version", f"{races.conflicts - races.bad_conflicts} of {races.conflicts}", "all"),
        ("views differing from a replay of the log", f"{crash.mismatches + races.mismatches}", "0"),
        ("fuzz cases (hostile tool calls)",
         f"{cases:,} ({fuzzed.get('accepted', 0):,} accepted, {fuzzed.get('invalid', 0):,} invalid, "
         f"{fuzzed.get('refused', 0):,} refused)", f">= {args.fuzz:,}"),
        *((f"wire fuzz over {t} (answered, log unchanged when refused)",
           f"{wire_cases[t]:,} ({', '.join(f'{v:,} {k}' for k, v in wire[t].items() if k != 'failures')})",
           f">= {args.wire:,}") for t in wire),
        *((f"file command at a live server's store: {o.fault}",
           f"{'refused' if o.refused else 'RAN'}; {o.attempted} attempted, {o.acknowledged} acknowledged, "
           f"{o.found} found", "refused; all found") for o in files),
        *((f"path fuzz: every path argument of every {scope} (stores intact after)",
           ", ".join(f"{v:,} {k}" for k, v in counts.items() if k != "failures"), "no failure")
          for scope, counts in paths.items()),
        ("crafted backups (every page damaged, sealed again)",
         ", ".join(f"{v:,} {k}" for k, v in crafted.items() if k != "failures"), "restored whole or refused"),
        ("slowloris: /ready answered during the flood",
         f"{flood['during_ok']:,} of {flood['during_ok'] + flood['during_failed']:,} "  # type: ignore[operator]
         f"({flood['during_rate']:.1%}; p50 {flood['during_p50_ms']:.1f} ms, p99 {flood['during_p99_ms']:.1f} ms; "
         f"{args.flood:,} half-open sockets)", ">= 99%"),
        ("stores with bytes flipped anywhere: runs ending in a traceback",
         f"{damaged['failures']} ({sum(v for k, v in damaged.items() if k != 'failures'):,} runs of "
         f"{args.damage:,} stores)", "0"),
        *((f"repro: {case}", f"{passed} held" + (f", {failed} FAILED" if failed else ""), "all held")
          for case, (passed, failed) in held.items()),
        ("errors (any of the above going wrong)", f"{errors}", "0"),
    ]
    print_table("reliability", rows)
    print(f"\n(crash test {crash_seconds:.0f} s, concurrency {race_seconds:.0f} s)")
    write_json(args.json, {
        "kills": crash.kills, "crash_acknowledged_calls": crash.acknowledged_calls, "lost": crash.lost + races.lost,
        "partial": crash.partial, "retries": crash.retries, "races": races.races,
        "races_with_one_winner": races.races_with_one_winner, "conflicts": races.conflicts,
        "bad_conflicts": races.bad_conflicts, "mismatches": crash.mismatches + races.mismatches,
        "concurrent_writes": races.acknowledged, "fuzz": fuzzed, "wire_fuzz": wire, "flood": flood,
        "raw_damage": damaged,
        "repros": {case: {"passed": p, "failed": f} for case, (p, f) in held.items()}, "errors": errors,
        "file_commands": [o.__dict__ for o in files], "path_fuzz": paths, "crafted_backups": crafted,
    })
    enough = cases >= args.fuzz and all(count >= args.wire for count in wire_cases.values())
    return 0 if errors == 0 and enough else 1


if __name__ == "__main__":
    raise SystemExit(main())
