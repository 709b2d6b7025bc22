"""Scrubbing the LMDB data file: free pages, the gaps inside pages in use, and stale branch keys
are zeroed, nothing a reader can see is touched, and a file that does not add up is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest
from chronograph.eventstore import LmdbEnv, StoreCorruptError
from chronograph.eventstore.lmdb import scrub as lmdbscrub
from chronograph.eventstore.lmdb.env import DATA_FILE
from chronograph.eventstore.lmdb.scrub import read_free_list

SECRET = b"SECRET-7f3a-"
NAME = "things"


def file_bytes(env: LmdbEnv) -> bytes:
    return (env.path / DATA_FILE).read_bytes()


def churn(env: LmdbEnv, db: lmdb._Database, rounds: int = 20) -> None:
    """Values holding the secret written, rewritten with other sizes, then mostly deleted."""
    for round_ in range(rounds):
        def write(txn: lmdb.Transaction, round_: int = round_) -> None:
            for i in range(300):
                txn.put(b"key-%05d" % i, SECRET + os.urandom(8) * (1 + (i + round_) % 5), db=db)
        env.write(write)

    def delete(txn: lmdb.Transaction) -> None:
        for i in range(300):
            if i % 10:
                txn.delete(b"key-%05d" % i, db=db)
            else:
                txn.put(b"key-%05d" % i, b"kept %d" % i, db=db)
    env.write(delete)


def contents(env: LmdbEnv, name: str) -> dict[bytes, bytes]:
    db = env.open_db(name)  # by name: a scrub reopens the environment, and handles with it
    with env.read() as txn:
        return {bytes(k): bytes(v) for k, v in txn.cursor(db=db)}


@pytest.fixture
def env(tmp_path: Path) -> LmdbEnv:
    opened = LmdbEnv(tmp_path / "env")
    yield opened
    opened.close()


def test_a_scrub_leaves_none_of_the_deleted_bytes_and_every_live_one(env: LmdbEnv) -> None:
    db = env.open_db("things")
    churn(env, db)
    assert SECRET in file_bytes(env)
    before = contents(env, NAME)
    done = env.scrub(b"marker")
    assert done.zeroed > 0 and done.held == 0
    assert SECRET not in file_bytes(env)
    assert contents(env, NAME) == before


def test_a_scrub_keeps_every_sorted_duplicate_of_fixed_size_and_leaves_none_deleted(env: LmdbEnv) -> None:
    db = env.open_db("pairs", dupsort=True, dupfixed=True)  # a key of 3,000 duplicates: a tree of its own
    env.write(lambda txn: [txn.put(b"hub", i.to_bytes(8, "big"), db=db) for i in range(3000)])
    env.write(lambda txn: [txn.delete(b"hub", i.to_bytes(8, "big"), db=db) for i in range(0, 3000, 3)])
    env.write(lambda txn: [txn.put(b"few", i.to_bytes(8, "big"), db=db) for i in range(5)])
    churn(env, env.open_db("things"))
    before = contents(env, NAME)
    env.scrub(b"marker")
    db = env.open_db("pairs", dupsort=True, dupfixed=True)
    with env.read() as txn, txn.cursor(db=db) as cursor:
        pairs = [(bytes(k), int.from_bytes(v, "big")) for k, v in cursor]
    assert pairs == [(b"few", i) for i in range(5)] + [(b"hub", i) for i in range(3000) if i % 3]
    assert contents(env, NAME) == before and SECRET not in file_bytes(env)


def test_a_scrubbed_store_takes_writes_and_reads_as_before(env: LmdbEnv) -> None:
    churn(env, env.open_db("things"))
    env.scrub(b"marker")
    db = env.open_db("things")
    env.write(lambda txn: [txn.put(b"new-%03d" % i, b"v" * (i * 7), db=db) for i in range(500)])
    found = contents(env, NAME)
    assert all(found[b"new-%03d" % i] == b"v" * (i * 7) for i in range(500))
    assert found[b"key-00010"] == b"kept 10"


READER = """
import sys, lmdb
env = lmdb.open(sys.argv[1], max_dbs=64, readonly=True)
db = env.open_db(b"things", create=False)
with env.begin() as txn:
    print(len(txn.get(b"a", db=db)), flush=True)
    sys.stdin.readline()
    print(bytes(txn.get(b"a", db=db)).startswith(sys.argv[2].encode()), flush=True)
"""


def test_pages_a_reader_in_another_process_still_sees_are_held_until_it_is_done(env: LmdbEnv) -> None:
    db = env.open_db("things")
    env.write(lambda txn: txn.put(b"a", SECRET * 50, db=db))
    reader = subprocess.Popen([sys.executable, "-c", READER, str(env.path), SECRET.decode()],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdin is not None
        assert reader.stdout.readline().strip() == str(50 * len(SECRET))  # its snapshot is open
        env.write(lambda txn: txn.delete(b"a", db=db))
        done = env.scrub(b"marker", timeout=0)
        assert done.held > 0 and SECRET in file_bytes(env)
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "True"  # what it saw was never touched
    finally:
        reader.communicate(timeout=30)
    assert env.scrub(b"marker").held == 0
    assert SECRET not in file_bytes(env)


def test_a_database_whose_branch_keys_hold_a_needle_is_repacked(env: LmdbEnv) -> None:
    db = env.open_db("keys")
    env.write(lambda txn: [txn.put(b"name-%05d-Zorgwald" % i, b"x" * 200, db=db) for i in range(3000)])
    layout = read_free_list(file_bytes(env))
    separators = [key for key in lmdbscrub.branch_keys(file_bytes(env), layout, b"keys") if key]
    victim = separators[len(separators) // 2]
    env.write(lambda txn: txn.delete(victim, db=db))
    env.scrub(b"marker")  # without the needle, the separator stays: it is a key of a page in use
    assert victim in file_bytes(env)
    env.scrub(b"marker", needles=[victim])
    assert victim not in file_bytes(env)
    assert len(contents(env, "keys")) == 2999


def test_a_file_that_does_not_add_up_is_left_untouched(env: LmdbEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    db = env.open_db("things")
    churn(env, db, rounds=3)
    real = lmdbscrub.read_free_list

    def miscounted(data: bytes) -> lmdbscrub.FreeList:
        return real(data)._replace(used=real(data).used + 1)

    monkeypatch.setattr(lmdbscrub, "read_free_list", miscounted)
    env.write(lambda txn: txn.put(b"settle", b"1", db=db))
    before = file_bytes(env)
    with pytest.raises(StoreCorruptError, match="do not add up"):
        env.scrub(b"marker")
    after = file_bytes(env)
    assert SECRET in after and len(after) >= len(before)
