"""`chronograph serve`: what its options make of the server's settings."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from chronograph.tools.serve import add_arguments, settings_of


def options(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_file_exports_are_off_over_http_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exports = str(tmp_path / "exports")
    assert settings_of(options("--store", str(tmp_path), "--export-dir", exports)).export_dir == Path(exports)
    assert settings_of(options("--store", str(tmp_path), "--http", "--export-dir", exports)).export_dir is None
    assert "--allow-http-export" in capsys.readouterr().err
    allowed = settings_of(options("--store", str(tmp_path), "--http", "--export-dir", exports, "--allow-http-export"))
    assert allowed.export_dir == Path(exports)


def test_an_export_directory_inside_a_store_is_refused_at_start(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from chronograph.application import Memory
    from chronograph.tools.serve import run

    Memory(tmp_path / "store").close()
    assert run(options("--store", str(tmp_path / "other"), "--export-dir", str(tmp_path / "store"))) == 2
    assert "lies inside the store" in capsys.readouterr().err and not (tmp_path / "other").exists()


def test_export_limits_take_sizes(tmp_path: Path) -> None:
    settings = settings_of(options("--store", str(tmp_path), "--export-max", "2M", "--export-budget", "1G"))
    assert (settings.export_max, settings.export_budget) == (2 << 20, 1 << 30)


def test_project_files_are_asked_for_by_flag_and_never_written_over_http_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert settings_of(options("--store", str(tmp_path))).mirror_projects is False
    local = settings_of(options("--store", str(tmp_path), "--profile", "n2n", "--project-files"))
    assert (local.mirror_projects, local.project_files) == (True, True)
    remote = settings_of(options("--store", str(tmp_path), "--profile", "n2n", "--project-files", "--http"))
    assert remote.project_files is False  # no file of a client's project is written for HTTP clients
    assert "project files are off over HTTP" in capsys.readouterr().err


def test_the_tools_option_still_chooses_the_official_profile(tmp_path: Path) -> None:
    assert settings_of(options("--store", str(tmp_path), "--tools", "official")).profile == "official"
    assert settings_of(options("--store", str(tmp_path))).profile == "chronograph"


def test_an_official_memory_file_named_by_the_old_variable_is_imported_once_into_an_empty_store(
    tmp_path: Path,
) -> None:
    import os
    import subprocess
    import sys

    memory_file = tmp_path / "memory.jsonl"
    memory_file.write_text(
        '{"type":"entity","name":"Ada","entityType":"person","observations":["math"]}\n'
        '{"type":"relation","from":"Ada","to":"Ada","relationType":"admires"}\n'
    )
    env = {**os.environ, "MEMORY_FILE_PATH": str(memory_file)}
    command = [sys.executable, "-m", "chronograph", "--store", str(tmp_path / "store")]
    first = subprocess.run(command, input=b"", env=env, capture_output=True, text=False)
    assert b"imported" in first.stderr and b"1 entities, 1 relations" in first.stderr
    second = subprocess.run(command, input=b"", env=env, capture_output=True)
    assert b"is ignored" in second.stderr
    assert f"`chronograph import {memory_file} --store {tmp_path / 'store'}`".encode() in second.stderr  # this store

    from chronograph.application import Memory

    with Memory(tmp_path / "store") as memory:
        assert [e.name for e in memory.read("read_graph", {}).entities] == ["Ada"]  # type: ignore[attr-defined]
        actors = {e.actor for e in memory.read("get_audit_log", {}).events}  # type: ignore[attr-defined]
    assert actors == {"memory-file"}


def adopted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            name: str, text: str) -> tuple[int, str]:
    """Name a file of `text` in $MEMORY_FILE_PATH and open an empty store as a server does: the
    store's head after, and what was said on stderr."""
    from chronograph.application import Memory
    from chronograph.tools.serve import MEMORY_FILE_ENV, adopt_memory_file

    (tmp_path / name).write_text(text)
    monkeypatch.setenv(MEMORY_FILE_ENV, str(tmp_path / name))
    with Memory(tmp_path / "store") as memory:
        adopt_memory_file(memory)
        head = memory.log.head()
    return head, capsys.readouterr().err


def test_a_file_named_by_the_old_variable_that_is_no_memory_file_is_not_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    head, err = adopted(tmp_path, monkeypatch, capsys, "notes.md", "# Notes\n\n- one\n- two\n"
                        '{"type":"entity","name":"Ada","entityType":"p","observations":[]}\n')
    assert head == 0 and "is not a memory file" in err


def test_lines_the_old_variable_s_file_could_not_give_are_each_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = adopted(tmp_path, monkeypatch, capsys, "memory.jsonl",
                     '{"type":"entity","name":"A","entityType":"t","observations":[]}\nnot json\n'
                     '{"type":"relation","from":"A","to":"Ghost","relationType":"r"}\n')
    assert "1 entities, 0 relations" in err and "2 line(s) not imported (below)" in err
    assert "  line 2: not JSON" in err and "  line 3: a relation whose end is in neither the file nor the store" in err


def test_the_old_variable_s_file_is_adopted_whole_whatever_its_observations_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The official server takes an observation of any length; its file, adopted, loses nothing."""
    from chronograph.application import Memory

    note = "long note: " + "x" * 17_000
    _, err = adopted(tmp_path, monkeypatch, capsys, "memory.jsonl",
                     json.dumps({"type": "entity", "name": "Ada", "entityType": "person", "observations": [note]})
                     + '\n{"type":"entity","name":"Bob","entityType":"person","observations":["fine"]}\n'
                     '{"type":"relation","from":"Bob","to":"Ada","relationType":"knows"}\n')
    assert "2 entities, 1 relations, 2 observations (recorded" in err
    with Memory(tmp_path / "store") as memory:
        graph = memory.read("read_graph", {})
        assert [(e.name, e.observations) for e in graph.entities] == [  # type: ignore[attr-defined]
            ("Ada", [note]), ("Bob", ["fine"])]
        assert len(graph.relations) == 1  # type: ignore[attr-defined]


def test_lines_an_adoption_left_out_are_said_with_the_command_that_adds_them_then_and_at_each_later_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = ('{"type":"entity","name":"A","entityType":"t","observations":[]}\n'
            f'{{"type":"entity","name":"{"N" * 600}","entityType":"t","observations":[]}}\n')
    _, err = adopted(tmp_path, monkeypatch, capsys, "memory.jsonl", text)
    command = f"`chronograph import {tmp_path / 'memory.jsonl'} --store {tmp_path / 'store'}`"
    assert f"1 line(s) not imported (below): correct them in the file, then add them with {command}" in err
    assert "  line 2: entity name: expected `str` of length <= 512" in err
    _, err = adopted(tmp_path, monkeypatch, capsys, "memory.jsonl", text)
    assert f"is ignored: the store at {tmp_path / 'store'} already holds a memory; to add the file to it: {command} " \
           "(its import when this store was new left out lines" in err


def test_an_adoption_a_stopped_server_cut_off_is_finished_by_the_next_and_no_other_store_is_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server killed while it imported $MEMORY_FILE_PATH left the store with its first batches
    only, and the next said the file was ignored (the store 'already holds a memory')."""
    from chronograph.application import Memory
    from chronograph.tools.serve import ADOPTER

    lines = [f'{{"type":"entity","name":"E{i}","entityType":"t","observations":["o{i}"]}}' for i in range(30)]
    lines += ['{"type":"relation","from":"E0","to":"E29","relationType":"r"}']
    with Memory(tmp_path / "store") as memory:  # what the killed server had written: a first batch
        memory.write("create_entities", {"entities": [
            {"name": f"E{i}", "entityType": "t", "observations": [f"o{i}"]} for i in range(10)]}, actor=ADOPTER)
    head, err = adopted(tmp_path, monkeypatch, capsys, "memory.jsonl", "\n".join(lines) + "\n")
    assert "finishing the import a stopped server began" in err
    with Memory(tmp_path / "store") as memory:
        graph = memory.read("read_graph", {})
        assert len(graph.entities) == 30 and len(graph.relations) == 1  # type: ignore[attr-defined]
    _, err = adopted(tmp_path, monkeypatch, capsys, "memory.jsonl", "\n".join(lines) + "\n")
    assert "is ignored" in err  # finished: once
    (tmp_path / "store").rename(tmp_path / "done")
    with Memory(tmp_path / "store") as memory:  # a memory of the user's own is never added to
        memory.write("create_entities", {"entities": [{"name": "Mine", "entityType": "t", "observations": []}]},
                     actor="me")
    _, err = adopted(tmp_path, monkeypatch, capsys, "memory.jsonl", "\n".join(lines) + "\n")
    assert "is ignored" in err
    (tmp_path / "store").rename(tmp_path / "mine")
    with Memory(tmp_path / "store") as memory:  # cut off, then written to by a server without the variable
        memory.write("create_entities", {"entities": [{"name": "E0", "entityType": "t", "observations": []}]},
                     actor=ADOPTER)
        memory.write("create_entities", {"entities": [{"name": "Mine", "entityType": "t", "observations": []}]},
                     actor="me")
    head, err = adopted(tmp_path, monkeypatch, capsys, "memory.jsonl", "\n".join(lines) + "\n")
    assert "is ignored" in err and head == 2


@pytest.mark.wire
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin"])
def test_a_stdio_server_asked_to_stop_closes_its_store_as_when_stdin_closes(tmp_path: Path, how: str) -> None:
    """A signal stops it cleanly, as the end of stdin does: what the close keeps (here the search
    index's image, current with the last write) is kept, and it exits with 0."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from chronograph.application import Memory
    from chronograph.eventstore.keys import digest
    from chronograph.projections.search.indexes import SearchIndex
    from chronograph.projections.search.wordindex import WorkspaceIndex

    root = Path(__file__).resolve().parents[2]
    store = tmp_path / "store"
    server = subprocess.Popen([sys.executable, "-m", "chronograph", "--store", str(store), "--embeddings", "off"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(root)}, cwd=root)
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None

    def ask(ident: int, method: str, params: dict[str, object]) -> None:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}).encode()
                           + b"\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == ident

    def call(ident: int, tool: str, arguments: dict[str, object]) -> None:
        ask(ident, "tools/call", {"name": tool, "arguments": arguments})

    ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "d", "version": "1"}})
    server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    call(2, "search_nodes", {"query": "nothing yet"})  # indexes the empty store; its image is kept at once
    call(3, "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["math"]}]})
    call(4, "search_nodes", {"query": "math"})  # the index catches up; its image is one write behind
    if how != "stdin":
        server.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)
    _, said = server.communicate(timeout=60)
    assert server.returncode == 0, said.decode()[-2000:]
    assert "Traceback" not in said.decode()
    with Memory(store, readonly=True) as memory, memory.views.env.read() as txn:
        image = txn.get(digest(b"default"), db=memory.views.env.open_db(SearchIndex.NAME, create=False))
        index = WorkspaceIndex.from_image(bytes(image))
        assert index is not None and index.position == memory.log.head()


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--port", "-1", "a port is 0 to 65535"), ("--port", "99999", "a port is 0 to 65535"),
    ("--max-body", "0", "at least 1"), ("--max-connections", "-1", "at least 1"),
    ("--max-sessions", "0", "at least 1"), ("--sessions-per-address", "-3", "at least 1"),
    ("--request-timeout", "nan", "above 0"), ("--request-timeout", "0", "above 0"),
    ("--session-idle", "-1", "above 0"), ("--max-body", "many", "not a whole number"),
])
def test_a_count_a_port_or_a_duration_out_of_range_is_refused_at_the_command_line(
        capsys: pytest.CaptureFixture[str], flag: str, value: str, says: str) -> None:
    """They were taken, and the server then refused every connection or session, or crashed."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(SystemExit) as refused:
        parser.parse_args(["--http", f"{flag}={value}"])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and f"argument {flag}" in err and says in err


def test_term_weights_are_on_unless_the_option_or_the_environment_says_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CHRONOGRAPH_TERM_WEIGHTS", raising=False)
    assert settings_of(options("--store", str(tmp_path))).term_weights is True
    assert settings_of(options("--store", str(tmp_path), "--term-weights", "off")).term_weights is False
    monkeypatch.setenv("CHRONOGRAPH_TERM_WEIGHTS", "off")
    assert settings_of(options("--store", str(tmp_path))).term_weights is False
    assert settings_of(options("--store", str(tmp_path), "--term-weights", "on")).term_weights is True
    with pytest.raises(SystemExit):
        options("--store", str(tmp_path), "--term-weights", "no")
    assert "use on or off" in capsys.readouterr().err


def test_a_memory_file_the_temporary_folder_cannot_take_is_said_and_the_server_serves(tmp_path: Path) -> None:
    """$TMPDIR full: the adoption's index of names could not be written, and the server did not start."""
    import os
    import subprocess
    import sys

    from support.disks import full_filesystem

    memory_file = tmp_path / "memory.jsonl"
    memory_file.write_text("".join(json.dumps({"type": "entity", "name": f"e{i}", "entityType": "t",
                                               "observations": ["z" * 300]}) + "\n" for i in range(3000)))
    with full_filesystem(tmp_path / "tmp", leave=64 << 10) as full:
        env = {**os.environ, "MEMORY_FILE_PATH": str(memory_file), "TMPDIR": str(full)}
        ask = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        done = subprocess.run([sys.executable, "-m", "chronograph", "--store", str(tmp_path / "store")],
                              input=ask + "\n", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"$MEMORY_FILE_PATH ({memory_file}) was not imported: the temporary folder {full}" in done.stderr
    assert "serving the store as it is" in done.stderr and "Traceback" not in done.stderr
    assert '"id":1' in done.stdout.replace(" ", "") and '"result"' in done.stdout
