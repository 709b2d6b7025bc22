"""The guarded writer: never into a store, through a link or over a file unless asked; whole
files only; and no module of ours writes a file any other way."""

from __future__ import annotations

import ast
import hashlib
import os
import stat
from pathlib import Path

import pytest
from chronograph.eventstore import LmdbLog
from chronograph.eventstore.files import (
    ReadRefused,
    WriteRefused,
    check_target,
    guarded_file,
    read_regular,
    store_of,
    write_file,
)
from support.fifo import never_waited_on

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("eventstore", "projections", "application", "server", "tools")


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A closed store, and a file outside any store: what an attack aims at."""
    LmdbLog(tmp_path / "store").close()
    (tmp_path / "outside.txt").write_text("the user's own\n")
    return tmp_path


def fingerprints(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("name", ["store/data.mdb", "store/lock.mdb", "store/new.md", "store", "elsewhere/data.mdb",
                                  "elsewhere/lock.mdb"])
def test_a_store_its_files_and_names_like_them_are_refused_even_when_asked_to_replace(victim: Path, name: str) -> None:
    (victim / "elsewhere").mkdir()
    before = fingerprints(victim / "store")
    with pytest.raises(WriteRefused) as refused:
        write_file(victim / name, b"x", overwrite=True)
    assert refused.value.reason in ("store", "folder")
    assert fingerprints(victim / "store") == before and not (victim / "elsewhere" / "data.mdb").exists()


@pytest.mark.parametrize("aim", ["store/data.mdb", "store/lock.mdb", "outside.txt", "nowhere/file"])
def test_a_symbolic_link_is_never_written_through_dangling_or_not(victim: Path, aim: str) -> None:
    (victim / "link.md").symlink_to(victim / aim)
    before, outside = fingerprints(victim / "store"), (victim / "outside.txt").read_text()
    for overwrite in (False, True):
        with pytest.raises(WriteRefused, match="symbolic link") as refused:
            write_file(victim / "link.md", b"x", overwrite=overwrite)
        assert refused.value.reason == "link"
    assert fingerprints(victim / "store") == before and (victim / "outside.txt").read_text() == outside
    assert not (victim / "nowhere").exists() and (victim / "link.md").is_symlink()


def test_a_folder_linked_into_a_store_is_refused(victim: Path) -> None:
    (victim / "innocent").symlink_to(victim / "store", target_is_directory=True)
    with pytest.raises(WriteRefused, match="inside the store"):
        write_file(victim / "innocent" / "graph.md", b"x")
    assert sorted(p.name for p in (victim / "store").iterdir()) == ["data.mdb", "lock.mdb"]


def test_an_existing_file_is_replaced_only_when_asked_and_the_refusal_names_the_flag(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    target.write_text("mine")
    with pytest.raises(WriteRefused, match="exists; pass --force to replace it"):
        write_file(target, b"theirs")
    with pytest.raises(WriteRefused, match="pass overwrite: true"):
        write_file(target, b"theirs", flag="overwrite: true")
    assert target.read_text() == "mine"
    write_file(target, b"theirs", overwrite=True)
    assert target.read_text() == "theirs"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.md"]  # no temporary file left


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_folder_or_a_special_file_is_never_replaced(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "thing"
    target.mkdir() if kind == "folder" else os.mkfifo(target)
    with pytest.raises(WriteRefused):
        write_file(target, b"x", overwrite=True)
    assert target.is_dir() if kind == "folder" else target.is_fifo()


def test_a_temporary_name_planted_in_advance_is_never_followed(victim: Path) -> None:
    """The n2n repro (issue 27.1): `.mcp/chronograph.tmp` a link to a store's data.mdb."""
    mcp = victim / "repo" / ".mcp"
    mcp.mkdir(parents=True)
    for planted in ("chronograph.tmp", ".chronograph.json.tmp", "chronograph.json.tmp"):
        (mcp / planted).symlink_to(victim / "store" / "data.mdb")
    before = fingerprints(victim / "store")
    write_file(mcp / "chronograph.json", b"{}\n")
    assert (mcp / "chronograph.json").read_bytes() == b"{}\n"
    assert fingerprints(victim / "store") == before


def test_a_failed_write_leaves_neither_the_file_nor_a_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "backup.chronograph"
    with pytest.raises(RuntimeError), guarded_file(target) as file:
        file.write(b"half")
        raise RuntimeError("the disk is gone")
    assert list(tmp_path.iterdir()) == []
    target.write_text("old")
    with pytest.raises(RuntimeError), guarded_file(target, overwrite=True) as file:
        file.write(b"half")
        raise RuntimeError("the disk is gone")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["backup.chronograph"]


def test_a_name_taken_while_the_file_was_written_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "graph.md"
    with pytest.raises(WriteRefused, match="exists"), guarded_file(target) as file:
        file.write(b"ours")
        target.write_text("theirs")  # another process, meanwhile
    assert target.read_text() == "theirs" and [p.name for p in tmp_path.iterdir()] == ["graph.md"]


def test_a_target_outside_the_folder_it_must_stay_in_is_refused(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "escape").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(WriteRefused, match="outside"):
        write_file(tmp_path / "root" / "escape" / "x.md", b"x", within=tmp_path / "root")
    with pytest.raises(WriteRefused, match="outside"):
        check_target(tmp_path / "root" / "escape" / "new" / "x.md", within=tmp_path / "root", parents=True)
    assert not (tmp_path / "x.md").exists() and not (tmp_path / "new").exists()


def test_missing_folders_are_made_only_when_asked_and_only_outside_stores(victim: Path) -> None:
    with pytest.raises(WriteRefused, match="does not exist"):
        write_file(victim / "a" / "b.md", b"x")
    write_file(victim / "a" / "b.md", b"x", parents=True)
    with pytest.raises(WriteRefused, match="inside the store"):
        write_file(victim / "store" / "sub" / "b.md", b"x", parents=True)
    assert (victim / "a" / "b.md").read_bytes() == b"x" and not (victim / "store" / "sub").exists()


def test_a_backup_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    write_file(tmp_path / "b.chronograph", b"x", mode=0o600)
    assert (tmp_path / "b.chronograph").stat().st_mode & 0o077 == 0


def test_the_store_of_a_path_is_found_through_links(victim: Path) -> None:
    (victim / "alias").symlink_to(victim / "store", target_is_directory=True)
    store = (victim / "store").resolve()
    assert store_of(victim / "alias" / "data.mdb") == store == store_of(victim / "store")
    assert store_of(victim / "outside.txt") is None


# --- every file our code writes goes through the guarded writer ------------------------------

WRITES = {"write_text", "write_bytes", "rename", "link", "symlink", "symlink_to", "hardlink_to", "mkstemp",
          "mkdtemp", "NamedTemporaryFile", "TemporaryDirectory", "mkdir", "makedirs", "move", "copy", "copy2",
          "copyfile", "copytree", "copyfd", "truncate", "rmtree", "rmdir", "os.replace", "os.open", "replace", "open",
          "fdopen", "unlink", "remove"}
"""Calls that create, replace, move or remove a file or folder (`replace` with one argument is
`Path.replace`; `open` counts with a mode that writes)."""
ALLOWED = {
    "eventstore/files.py": {"makedirs", "os.open", "fdopen", "os.replace", "link", "rename", "unlink"},
    "eventstore/leftovers.py": {"unlink", "rmtree"},
    # ^ the temporary files and folders of killed writes and commands (never through a link)
    "eventstore/lmdb/staging.py": {"mkdir", "mkdtemp", "rmtree", "os.open", "fdopen", "rename", "rmdir"},
    # ^ a restore's own private folder (mkdtemp), and putting a checked store in place under the exclusive lock
    "eventstore/lmdb/holders.py": {"os.open"},  # opens a store's lock.mdb to lock it
    "eventstore/lmdb/making.py": {"mkdir", "truncate"},  # a new store's folder (refused inside another store),
    # and a data file whose making a full disk cut short, emptied when no process has it open
    "eventstore/lmdb/env.py": {"os.open"},  # its own data file, opened and closed before a reopening (no write)
    "eventstore/lmdb/scrub.py": {"os.open"},  # zeroes the free pages of a store's own data file
    "eventstore/lmdb/datafile.py": {"os.open"},  # lengthens a store's own data file by zeros (never shortens it)
    "eventstore/lmdb/resident.py": {"os.open"},  # reads /proc/self/statm (read-only) through a descriptor it keeps
    "eventstore/lmdb/backup.py": {"copyfd"},  # into the guarded writer's file
    "eventstore/postgres/writer.py": {"copy"},  # PostgreSQL's COPY, no file
    "eventstore/postgres/seeds.py": {"copy"},  # PostgreSQL's COPY, no file
    "projections/records.py": {"replace"},  # msgspec.structs.replace, no file
    "projections/search/indexes.py": {"remove"},  # a set's, no file
    "projections/search/vectors.py": {"remove"},  # a set's, no file
    "projections/search/minilm.py": {"TemporaryDirectory"},  # the graph ONNX Runtime writes, copied guarded, deleted
    "application/engine/exportdir.py": {"mkdir"},  # the export directory the operator configured
    "application/lifecycle/identity.py": {"rename"},  # renaming an entity, no file
    "application/lifecycle/revert.py": {"rename"},  # renaming an entity, no file
    "application/surfaces/projectbase.py": {"copy"},  # a keyed BLAKE2b's, no file
    "application/surfaces/projectroot.py": {"mkdir", "os.open"},  # a project's .mcp, once confirmed (never through
    # a link); os.open: the project's folders, opened (O_PATH on Linux) to reach its files through them, no file
    "server/stdio.py": {"fdopen"},  # stdout
    # token-use.json, beside the views: inside the store, which the guarded writer (for files
    # outside every store) refuses; written under a name of its own, never through a link
    "server/tokens.py": {"os.open", "fdopen", "os.replace", "unlink"},
    "application/lifecycle/importindex.py": {"TemporaryDirectory"},  # an import's index of names (SQLite), deleted
    "application/lifecycle/sources.py": {"TemporaryDirectory"},  # another server's memory as records, deleted
    "application/lifecycle/from_agentmemory.py": {"TemporaryDirectory"},  # the rehearsal's scratch store, deleted
    "tools/backup.py": {"TemporaryDirectory"},  # a scratch store beside a checked output (database backups)
    "tools/common/parsing.py": {"os.open"},  # /dev/null
    "tools/context.py": {"os.open"},  # a store's lock.mdb, read-only, to see whether a restore holds it
}
"""Where a module may do one of `WRITES` itself, and why."""


def writes_in(path: Path) -> set[str]:
    """The calls of `WRITES` in the module at `path`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        on_os = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "os"
        if name in ("open", "fdopen"):
            modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            modes += [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
            if on_os and name == "open":
                found.add("os.open")
            elif any(isinstance(m, str) and set(m) & set("wax+") for m in modes):
                found.add(name)
        elif name == "replace":
            if on_os:
                found.add("os.replace")
            elif len(node.args) == 1 and not node.keywords:
                found.add("replace")
        elif name in WRITES:
            found.add(name)
    return found


def test_every_file_our_code_writes_goes_through_the_guarded_writer() -> None:
    unguarded = [
        f"{path.relative_to(ROOT)} calls {call} (write files through chronograph.eventstore.files, or say here why not)"
        for layer in LAYERS for path in sorted((ROOT / layer).rglob("*.py"))
        for call in sorted(writes_in(path) - ALLOWED.get(str(path.relative_to(ROOT)), set()))
    ]
    assert unguarded == []


def test_the_scan_finds_a_writer_that_skips_the_guard(tmp_path: Path) -> None:
    module = tmp_path / "sneaky.py"
    module.write_text("from pathlib import Path\nimport os\n"
                      "def save(p, t):\n    Path(p).write_text(t)\n    open(p, 'ab').close()\n    os.replace(p, t)\n"
                      "    Path(p).replace(t)\n    'a'.replace('a', 'b')\n    open(p).read()\n")
    assert writes_in(module) == {"write_text", "open", "os.replace", "replace"}


def test_a_write_removes_what_a_killed_write_of_the_same_file_left(tmp_path: Path) -> None:
    """A backup or export killed before its end left its temporary file (nearly the backup's
    size) for good; one of a process still alive may be writing and stays."""
    import subprocess
    import sys

    from chronograph.eventstore.files import write_file

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    dead = tmp_path / f".out.json.{gone}-0a1b2c.partial"
    alive = tmp_path / f".out.json.{os.getppid()}-0a1b2c.partial"
    other = tmp_path / f".other.json.{gone}-0a1b2c.partial"
    for path in (dead, alive, other):
        path.write_bytes(b"half")
    write_file(tmp_path / "out.json", b"{}")
    assert not dead.exists() and alive.exists() and other.exists()
    assert (tmp_path / "out.json").read_bytes() == b"{}"


def test_read_regular_reads_a_file_and_answers_none_for_a_missing_one(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b"{}")
    assert read_regular(tmp_path / "a.json", limit=2) == b"{}"
    assert read_regular(tmp_path / "b.json", limit=2) is None
    assert read_regular(tmp_path / "missing" / "b.json", limit=2) is None


def test_read_regular_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    with never_waited_on(tmp_path / "memory.json"), pytest.raises(ReadRefused, match="not a regular file") as error:
        read_regular(tmp_path / "memory.json", limit=1 << 20)
    assert error.value.reason == "special"


def test_read_regular_refuses_a_link_a_linked_folder_a_folder_and_a_file_past_its_limit(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.json").write_bytes(b"12345")
    (tmp_path / "link.json").symlink_to(tmp_path / "real" / "a.json")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    refused = {"link": tmp_path / "link.json", "folder": tmp_path / "real"}
    for reason, path in refused.items():
        with pytest.raises(ReadRefused) as error:
            read_regular(path, limit=100)
        assert error.value.reason == reason
    with pytest.raises(ReadRefused) as error:
        read_regular(tmp_path / "linked" / "a.json", limit=100)
    assert error.value.reason == "link"
    assert read_regular(tmp_path / "linked" / "a.json", limit=100, folder_links=True) == b"12345"
    with pytest.raises(ReadRefused, match="5 bytes") as error:
        read_regular(tmp_path / "real" / "a.json", limit=4)
    assert error.value.reason == "large"


def access_list(nobody: int) -> bytes:
    """A POSIX access list as Linux stores it: the owner rw-, user 65534 `nobody`, the rest r--."""
    entries = ((1, 6, 0xFFFFFFFF), (2, nobody, 65534), (4, 4, 0xFFFFFFFF), (0x10, 4, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF))
    return b"\x02\x00\x00\x00" + b"".join(tag.to_bytes(2, "little") + perm.to_bytes(2, "little")
                                          + uid.to_bytes(4, "little") for tag, perm, uid in entries)


def test_a_file_replaced_keeps_an_access_list_that_denies_a_user(tmp_path: Path) -> None:
    """Mode bits cannot say 'not this user': the access list went with the old file."""
    target = tmp_path / "settings.json"
    target.write_text("old")
    denied = access_list(nobody=0)  # user::rw-, user:65534:---, group::r--, mask::r--, other::r--
    try:
        os.setxattr(target, "system.posix_acl_access", denied)
    except OSError:
        pytest.skip("this file system keeps no access lists")
    write_file(target, b"new", overwrite=True)
    assert target.read_bytes() == b"new" and os.getxattr(target, "system.posix_acl_access") == denied


def test_a_file_written_private_stays_private_whatever_access_list_the_one_it_replaces_had(tmp_path: Path) -> None:
    """Setting the old file's access list set its mode bits too: a backup asked for at 0600 came out 0644."""
    target = tmp_path / "memory.chronograph"
    target.write_text("old")
    readable = access_list(nobody=4)  # user::rw-, user:65534:r--, group::r--, mask::r--, other::r--
    try:
        os.setxattr(target, "system.posix_acl_access", readable)
    except OSError:
        pytest.skip("this file system keeps no access lists")
    write_file(target, b"new", overwrite=True, mode=0o600)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # group bits are the mask: nobody's entry counts for none
