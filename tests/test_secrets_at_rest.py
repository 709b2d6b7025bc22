"""No secret at rest: after a token's whole life (issued, used over HTTP and by the explorer's
link, listed, audited, revoked, backed up, exported, restored), no byte of the store, the backup,
the export, the restored store, nor of anything a command or the server printed or logged holds
the token, its random part, or that part's bytes as hex or base64; only its digest is kept."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from chronograph.application.engine.tokens import PREFIX, digest_of
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.http import ANNOUNCED, request

pytestmark = [pytest.mark.anyio, pytest.mark.wire]
ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ENV.pop("CHRONOGRAPH_TOKEN", None)


def forms(secret: str) -> list[bytes]:
    """Every spelling of the secret that a leak could take."""
    body = secret[len(PREFIX):]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    return [secret.encode(), body.encode(), raw, raw.hex().encode(), raw.hex().upper().encode(),
            base64.b64encode(raw), base64.b64encode(raw).rstrip(b"="), base64.urlsafe_b64encode(raw),
            base64.b64encode(secret.encode()).rstrip(b"=")]


def cli(outputs: list[bytes], *args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run([sys.executable, "-m", "chronograph", *args], capture_output=True, timeout=120, env=ENV,
                          cwd=ROOT)
    outputs += [done.stdout, done.stderr]
    assert done.returncode == 0, done.stderr.decode()
    return done


def every_byte(*places: Path) -> Iterator[tuple[Path, bytes]]:
    for place in places:
        files = [place] if place.is_file() else sorted(p for p in place.rglob("*") if p.is_file())
        for path in files:
            yield path, path.read_bytes()


async def test_a_token_s_whole_life_leaves_no_secret_in_any_byte_written_or_printed(tmp_path: Path) -> None:
    store, outputs = tmp_path / "store", []  # type: list[bytes]
    created = subprocess.run([sys.executable, "-m", "chronograph", "token", "create", "alice", "--grant", "*=write",
                              "--store", str(store)], capture_output=True, timeout=120, env=ENV, cwd=ROOT)
    assert created.returncode == 0
    secret = created.stdout.decode().splitlines()[-1]  # shown this once: the only output that may hold it
    outputs.append(created.stderr)
    cli(outputs, "token", "create", "bob", "--grant", "work=read", "--store", str(store))

    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen([sys.executable, "-m", "chronograph", "--http", "--port", "0", "--store",
                                   str(store), "--log-level", "DEBUG"], env=ENV, cwd=ROOT, stdout=sink, stderr=sink)
        try:
            for _ in range(600):  # the port it bound, from the address it announces
                if (found := ANNOUNCED.search(log.read_bytes())) is not None:
                    break
                assert server.poll() is None, log.read_text()
                await anyio.sleep(0.1)
            assert found is not None, "the server announced no address"
            base = f"http://127.0.0.1:{int(found.group(1))}"
            for _ in range(600):
                try:
                    if request(base + "/health", headers={"Authorization": f"Bearer {secret}"})[0] == 200:
                        break
                except OSError:
                    pass
                assert server.poll() is None
                await anyio.sleep(0.1)
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http, Client(
                    streamable_http_client(base + "/mcp", http_client=http)) as client:
                await client.call_tool("create_entities", {"entities": [
                    {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]})
                await client.call_tool("get_audit_log", {"allWorkspaces": True})
            with httpx2.Client(timeout=30, follow_redirects=True) as browser:
                assert browser.get(f"{base}/ui/?token={secret}").status_code == 200
                assert browser.get(f"{base}/ui/api/audit").status_code == 200
            assert request(base + "/mcp", headers={"Authorization": f"Bearer {secret}x"})[0] == 401
            cli(outputs, "token", "list", "--store", str(store))
            cli(outputs, "token", "revoke", "alice", "--store", str(store))
            assert request(base + "/ready", headers={"Authorization": f"Bearer {secret}"})[0] == 401
        finally:
            server.terminate()
            server.wait(timeout=30)

    listed = cli(outputs, "token", "list", "--json", "--store", str(store)).stdout.decode().splitlines()
    used = {row["name"]: row["lastUsed"] for row in map(json.loads, listed)}
    assert used["alice"] is not None and used["bob"] is None  # the server wrote when it last saw alice
    cli(outputs, "audit", "--json", "--store", str(store), "--limit", "0")
    backup, export, restored = tmp_path / "backup.chronograph", tmp_path / "export.jsonl", tmp_path / "restored"
    cli(outputs, "backup", "--store", str(store), "-o", str(backup))
    cli(outputs, "export", "--store", str(store), "--all-workspaces", "-o", str(export))
    cli(outputs, "restore", str(backup), "--store", str(restored))
    cli(outputs, "replay", "--store", str(restored), "--verify")
    audited = cli(outputs, "audit", "--json", "--store", str(restored), "--principal", "alice").stdout
    assert b'"subject":"Ada"' in audited.replace(b'": "', b'":"')  # the restored log keeps the principal

    leaks = [(str(path), form) for path, data in every_byte(store, backup, export, restored, log)
             for form in forms(secret) if form in data]
    leaks += [("output", form) for data in outputs for form in forms(secret) if form in data]
    assert leaks == []
    assert b"/ui/?token=(hidden)" in log.read_bytes(), "the access log was written, the link's token blanked"
    digest = digest_of(secret).encode()
    assert any(digest in data for _, data in every_byte(store)), "the store keeps the digest"
