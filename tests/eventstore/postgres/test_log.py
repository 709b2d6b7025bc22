"""The PostgreSQL log beyond the contract: a follower never skips an event that commits late,
appends wake a waiting reader, addresses are checked, and a database that cannot be reached
is said to be so, quickly."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from chronograph.eventstore import (
    EntityCreated,
    EventStoreError,
    ObservationsAdded,
    StoreCorruptError,
    StoreOpenError,
    StoreUnavailableError,
    StreamWrite,
)
from chronograph.eventstore.postgres.address import refuse_mistyped_url, shown, split_url, without_secrets
from support.postgres import database

pglog = pytest.importorskip("chronograph.eventstore.postgres.log")


@pytest.fixture
def log() -> Iterator[pglog.PgLog]:
    opened = pglog.PgLog(database().log_url())
    try:
        yield opened
    finally:
        opened.close()


def test_a_follower_reading_by_position_sees_every_event_of_racing_writers_in_order(log: pglog.PgLog) -> None:
    writers, each = 6, 60
    seen: list[int] = []
    done = threading.Event()
    problems: list[str] = []

    def write(n: int) -> None:
        try:
            for i in range(each):
                log.append([StreamWrite(f"s{n}", [ObservationsAdded(observations=(f"{n}/{i}",))])], actor=f"w{n}")
        except Exception as error:  # noqa: BLE001
            problems.append(repr(error))

    def follow() -> None:
        while True:
            finished = done.is_set()
            with log.read() as reader:
                for envelope in reader.all(len(seen) + 1):
                    if envelope.position != len(seen) + 1:
                        problems.append(f"after {len(seen)} came {envelope.position}")
                    seen.append(envelope.position)
            if finished:
                return

    follower = threading.Thread(target=follow)
    follower.start()
    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    follower.join(timeout=60)
    assert problems == []
    assert seen == list(range(1, writers * each + 1))


def test_an_append_wakes_a_reader_waiting_for_it(log: pglog.PgLog) -> None:
    woke: list[int] = []
    waiter = threading.Thread(target=lambda: woke.append(log.wait_for_append(0, timeout=20)))
    waiter.start()
    time.sleep(0.3)
    log.append([StreamWrite("a", [EntityCreated(workspace="w", name="A", entity_type="t")])], actor="t")
    waiter.join(timeout=20)
    assert woke == [1]


def test_waiting_without_an_append_returns_the_head_when_the_time_is_up(log: pglog.PgLog) -> None:
    assert log.wait_for_append(0, timeout=0.2) == 0


def test_a_follower_takes_the_furthest_of_announcements_that_arrive_together(monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg
    from chronograph.eventstore.postgres import listening

    monkeypatch.setattr(listening, "POLL_INTERVAL", 600.0)  # only an announcement can bring news before the timeout
    url = database().log_url()
    log = pglog.PgLog(url)
    try:
        for n in range(5):
            log.append([StreamWrite(f"s{n}", [ObservationsAdded(observations=(str(n),))])], actor="t")
        assert log.watch(5, timeout=0) == (5, 0)  # listening from here on
        # Two writers' barriers committed out of order: the newer announcement is delivered first,
        # in the same packet as the older one.
        with psycopg.connect(split_url(url)[0], autocommit=True) as other, other.transaction():
            other.execute(f"NOTIFY {log.schema.channel}, '6 2'")
            other.execute(f"NOTIFY {log.schema.channel}, '5 1'")
        # Had the last been taken, the wait would end at the timeout with the head read then (5, 0).
        assert log.watch(5, timeout=10) == (6, 2)
    finally:
        log.close()


def test_the_address_names_a_schema_and_hides_the_password() -> None:
    connect, schema, shown = split_url("postgresql://ada:secret@db.example:5433/team?schema=memory_1&sslmode=require")
    assert (schema, shown) == ("memory_1", "postgresql://ada@db.example:5433/team?schema=memory_1")
    assert "schema" not in connect and "sslmode=require" in connect and "secret" in connect
    with pytest.raises(ValueError, match="plain name"):
        split_url("postgresql://h/db?schema=a;drop")


def test_an_address_with_no_host_keeps_libpq_s_form_and_is_found() -> None:
    """postgresql:///db names the local socket, or the host in ?host=: the empty authority was dropped."""
    connect, _, showing = split_url("postgresql:///team?host=127.0.0.1&user=ada&schema=memory_1")
    assert connect == "postgresql:///team?host=127.0.0.1&user=ada" and showing.startswith("postgresql://127.0.0.1/team")
    assert split_url("postgresql:///team")[0] == "postgresql:///team"
    base, _, named = database().log_url().partition("?")
    parts = base.split("://", 1)[1]
    user, _, rest = parts.partition("@")
    host, _, db = rest.partition("/")
    url = f"postgresql:///{db}?host={host.split(':')[0]}&user={user}&{named}"
    with pglog.PgLog(url) as log:
        assert log.head() == 0


@pytest.mark.parametrize("typed", ["postgresql//ada:secret@h/db", " postgresql//ada:secret@h/db",
                                   "postgresql:/ada:secret@h/db\n", "Postgres:/ada:secret@h/db"])
def test_a_mistyped_address_is_refused_without_its_password_and_never_made_a_folder(typed: str) -> None:
    with pytest.raises(StoreOpenError) as refused:
        refuse_mistyped_url(typed)
    assert "secret" not in str(refused.value) and "nothing was created" in str(refused.value)


def test_a_store_is_shown_without_its_password_whatever_its_address() -> None:
    assert shown("postgresql://ada:secret@h:5433/db?schema=m&sslmode=require") == "postgresql://ada@h:5433/db?schema=m"
    assert shown("postgresql://ada:secret@h/db?schema=bad-name") == "postgresql://ada@h/db"  # refused: still shown
    assert shown("postgresql:/ada:secret@h/db") == "postgresql:/ada@h/db"  # mistyped
    assert shown("mysql://ada:secret@h/db") == "mysql://ada@h/db"
    assert shown("/home/ada/notes:x@y") == "/home/ada/notes:x@y"  # a folder is as it is


def test_an_address_is_shown_as_it_can_be_pasted_back_and_never_with_its_password() -> None:
    assert split_url("postgresql://r7@[::1]:5433/db")[2] == "postgresql://r7@[::1]:5433/db?schema=chronograph"
    assert split_url("postgresql:///db?host=/tmp")[2].startswith("postgresql:///db?host=")  # a socket's folder
    for mistyped in ("postgresql:/r7:Sek/r3t@h/db", "postgresql//r7:Sek/r3t@h/db", "postgresql:/r7:a@b@h/db"):
        assert "Sek" not in shown(mistyped) and "a@b" not in shown(mistyped) and shown(mistyped).endswith("h/db")


def test_opening_a_log_at_a_refused_address_does_not_say_its_password() -> None:
    with pytest.raises(StoreOpenError, match="plain name") as refused:
        pglog.PgLog("postgresql://ada:secret@127.0.0.1/db?schema=bad-name")
    assert "secret" not in str(refused.value)


def test_a_log_in_a_schema_named_in_capitals_is_found_again() -> None:
    """Its tables are made under the quoted name: looking for them unquoted found none, so a log
    written there could not be read, backed up or copied."""
    url = database().log_url().replace("schema=log_", "schema=Log_Caps_")
    with pglog.PgLog(url) as log:
        log.append([StreamWrite("s", [EntityCreated(workspace="w", name="Ada", entity_type="p")])], actor="a")
    with pglog.PgLog(url, create=False, readonly=True) as log:
        assert log.head() == 1


def test_a_misspelt_parameter_of_the_address_is_refused_as_such() -> None:
    with pytest.raises(StoreOpenError, match='invalid URI query parameter: "shema"'):
        pglog.PgLog(database().log_url().replace("schema=", "shema="))


def test_a_schema_that_holds_tables_of_its_own_is_not_made_a_log() -> None:
    """A user's own `events` table met ours in a traceback, and other tables were joined by a
    memory's without a word."""
    import psycopg

    url = database().log_url()
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(url.rsplit("?", 1)[0], autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
        connection.execute(f'CREATE TABLE "{schema}".events (id int)')
    with pytest.raises(StoreOpenError, match="already holds tables that are no Chronograph log's .events."):
        pglog.PgLog(url)
    with psycopg.connect(url.rsplit("?", 1)[0], autocommit=True) as connection:
        tables = connection.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                                    (schema,)).fetchall()
    assert tables == [("events",)]


def test_a_log_that_does_not_exist_is_not_created_when_told_not_to() -> None:
    with pytest.raises(StoreOpenError, match="no Chronograph log"):
        pglog.PgLog(database().log_url(), create=False)


def test_a_server_that_does_not_answer_is_reported_with_its_reason() -> None:
    with pytest.raises(StoreUnavailableError, match="cannot reach the database of .*refused"):
        pglog.PgLog("postgresql://postgres@127.0.0.1:1/nothing")


def test_a_scan_longer_than_one_fetch_reads_ahead_and_can_stop_anywhere(
        log: pglog.PgLog, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronograph.eventstore.postgres import reader as pgreader

    monkeypatch.setattr(pgreader, "FETCH_ROWS", 64)  # chunks fetched while the one before is used
    for n in range(10):
        log.append([StreamWrite(f"s{n}-{i}", [ObservationsAdded(observations=(f"{n}/{i}",))]) for i in range(50)],
                   actor="t")
    with log.read() as reader:
        assert [e.position for e in reader.all(3, batch_size=10)] == list(range(3, 501))
        for batch in reader.batches(1, 500, batch_size=10):
            if batch[0].position > 200:
                break  # the read-ahead stops with it, and the snapshot goes on
        assert [t.name for t in threading.enumerate() if t.name == "chronograph-read-ahead"] == []
        assert [len(batch) for batch in reader.batches(491, batch_size=4)] == [4, 4, 2]
        assert reader.head() == 500
    with log.read() as reader:
        assert sum(1 for _ in reader.verify()) == 0


def test_a_log_replaced_under_an_open_one_is_neither_read_nor_written_through_it() -> None:
    """Its schema dropped and another log made there (a copy), a running server folded the new
    log's events onto its views of the old and decided writes against the mixture."""
    import psycopg  # noqa: PLC0415

    url = database().log_url()
    first = StreamWrite("s", [EntityCreated(workspace="w", name="Ada", entity_type="p")])
    with pglog.PgLog(url) as log:
        log.append([first], actor="a")
        with psycopg.connect(url.split("?", 1)[0], autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {url.rsplit('schema=', 1)[1]} CASCADE")
        with pglog.PgLog(url) as other:
            other.append([first], actor="b")
        with pytest.raises(StoreCorruptError, match="replaced by another log"):
            log.head()
        with pytest.raises(StoreCorruptError, match="replaced by another log"):
            log.append([StreamWrite("t", [EntityCreated(workspace="w", name="Bo", entity_type="p")])], actor="a")


def test_a_parameter_holding_a_space_reaches_libpq_as_it_was_written() -> None:
    """urlencode wrote the space as '+', which libpq takes literally: the URL psql connects with failed."""
    url = database().log_url() + "&options=-c%20statement_timeout%3D1234"
    assert "options=-c%20statement_timeout%3D1234" in split_url(url)[0]
    with pglog.PgLog(url) as log, log.read() as reader:
        assert reader.connection.execute("SHOW statement_timeout").fetchone()[0] == "1234ms"


def test_two_processes_making_one_new_log_at_once_both_open_it() -> None:
    """The second creator, having waited for the first's lock, looked the tables up in catalog
    caches that did not see them yet, and refused them as a user's."""
    script = "import sys; from chronograph.eventstore.postgres.log import PgLog; PgLog(sys.argv[1]).close()"
    for _ in range(5):
        url = database().log_url()
        processes = [subprocess.Popen([sys.executable, "-c", script, url], stderr=subprocess.PIPE, text=True)
                     for _ in range(2)]
        errors = [p.communicate(timeout=60)[1] for p in processes]
        assert [p.returncode for p in processes] == [0, 0], errors


@pytest.mark.parametrize("typed", [
    "postgresql:postgres:S3cretpw@h/db", "postgresql:/h/db?user=u&password=S3cretpw",
    "postgresql:///postgres:S3cretpw@h/db", "postgresql://postgres:S3c/retpw@h/db",
    "postgresql://postgres:S3c?retpw@h/db", "postgresql://postgres:S3c@retpw@h/db",
    "postgresql://postgres:S3c@r?retpw@h/db", "postgresql://postgres:S3c@r#retpw@h/db",
    "postgresql://postgres:2024/S3cretpw@h/db", "postgresql://postgres:99#S3cretpw@h/db",
    "postgresql://postgres:S3c@r/retpw@h/db", "postgresql://a[b:S3cretpw@h/db", "postgresql://a,b:S3cretpw@h/db"])
def test_no_piece_of_a_password_is_shown_however_the_url_spells_it(typed: str) -> None:
    assert "S3c" not in shown(typed) and "retpw" not in shown(typed)
    try:
        pglog.PgLog(typed).close()
    except EventStoreError as refused:  # the driver's words quoting pieces of the URL included
        assert "S3c" not in str(refused) and "retpw" not in str(refused)


def test_a_log_whose_schema_is_dropped_under_an_open_one_says_so() -> None:
    import psycopg  # noqa: PLC0415

    url = database().log_url()
    with pglog.PgLog(url) as log:
        log.append([StreamWrite("s", [EntityCreated(workspace="w", name="Ada", entity_type="p")])], actor="a")
        with psycopg.connect(url.split("?", 1)[0], autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {url.rsplit('schema=', 1)[1]} CASCADE")
        with pytest.raises(StoreCorruptError, match="is gone: its tables"):
            log.head()


def test_the_driver_s_words_are_kept_unless_a_password_was_cut_and_then_say_what_to_do() -> None:
    """Its words were blanked wherever the password's text appeared: a role spelt like the password
    read '***' (and told it), and a piece under three characters stayed."""
    said = 'FATAL: role "chrono" does not exist'
    assert without_secrets(said, "postgresql://chrono:chrono@h/db") == said
    cut = without_secrets('invalid URI query parameter: "a1@h/db"', "postgresql://u:Sup3r?a1@h/db")
    assert "a1" not in cut and "percent-encoded" in cut


def test_a_folder_whose_name_begins_like_a_scheme_is_shown_as_it_is() -> None:
    assert shown("mem:/al:ice@x") == "mem:/al:ice@x" and shown("notes:x@y") == "notes:x@y"


def test_a_query_holding_an_at_sign_is_no_password() -> None:
    url = "postgresql://ada:pw@127.0.0.1:5432/db?application_name=me@laptop"
    assert shown(url) == "postgresql://ada@127.0.0.1:5432/db?schema=chronograph"
    assert without_secrets('FATAL: database "db" does not exist', url) == 'FATAL: database "db" does not exist'
    assert "Sup3r" not in shown("postgresql://ada:Sup3r?a1@h/db") and "a1" not in shown("postgresql://ada:Sup3r?a1@h/db")


@pytest.mark.parametrize("url", ["postgresql://127.0.0.1:5432/db?application_name=me@laptop",
                                 "postgresql://[::1]:5432/db?application_name=me@laptop",
                                 "postgresql://h:/db?application_name=me@laptop"])
def test_a_host_and_port_are_no_user_and_password(url: str) -> None:
    host = url.split("//", 1)[1].split("/", 1)[0].rstrip(":")  # an empty port is none
    assert shown(url).startswith(f"postgresql://{host}/db") and without_secrets("libpq's words", url) == "libpq's words"
