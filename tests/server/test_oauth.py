"""OAuth resource-server mode: JWT access tokens of one issuer, checked and mapped to principals."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from pathlib import Path
from typing import Any

import jwt
import pytest
from chronograph.application.engine.principal import Principal
from chronograph.server.grantmap import GrantMap
from chronograph.server.oauth import IssuerKeys, OAuthAuthenticator, oauth_authenticator
from cryptography.hazmat.primitives import serialization
from freezegun import freeze_time
from support.issuer import AUDIENCE, Issuer, issuer, rsa_key, serving

GRANTS = GrantMap(scopes={"chronograph:write": {"*": "write"}}, subjects={"alice": {"audit": "admin"}})


@pytest.fixture
def signer() -> Issuer:
    return issuer()


def authenticator(signer: Issuer, tmp_path: Path, grants: GrantMap = GRANTS) -> OAuthAuthenticator:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(signer.jwks()))
    return oauth_authenticator(signer.url, AUDIENCE, jwks=jwks, grants=grants)[0]


def test_a_valid_token_is_accepted_with_the_principal_its_grants_map_to(signer: Issuer, tmp_path: Path) -> None:
    principal = authenticator(signer, tmp_path).authenticate(signer.token())
    assert principal == Principal("oauth:alice", {"*": "write", "audit": "admin"})


def test_a_token_signed_with_an_ec_key_is_accepted(signer: Issuer, tmp_path: Path) -> None:
    principal = authenticator(signer, tmp_path).authenticate(signer.token(kid="ec-1", sub="bob"))
    assert principal == Principal("oauth:bob", {"*": "write"})


def test_an_audience_list_that_names_this_server_is_accepted(signer: Issuer, tmp_path: Path) -> None:
    token = signer.token(aud=["https://other.example.com", AUDIENCE])
    assert authenticator(signer, tmp_path).authenticate(token) is not None


def test_a_token_that_maps_to_no_grant_is_authenticated_with_none(signer: Issuer, tmp_path: Path) -> None:
    principal = authenticator(signer, tmp_path).authenticate(signer.token(sub="carol", scope="openid"))
    assert principal == Principal("oauth:carol", {})


def _unsigned(signer: Issuer) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'kid': 'rsa-1', 'typ': 'JWT'})}.{part(signer.claims())}."


def _hmac_with_the_public_key(signer: Issuer) -> str:
    public = signer.keys["rsa-1"].public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "kid": "rsa-1"}).encode()).rstrip(b"=")
    body = base64.urlsafe_b64encode(json.dumps(signer.claims()).encode()).rstrip(b"=")
    signature = hmac.new(public, header + b"." + body, hashlib.sha256).digest()
    return (header + b"." + body + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()


REFUSED = {
    "expired": lambda s: s.token(exp=1_000_000_000, iat=999_999_000),
    "for another audience": lambda s: s.token(aud="https://other.example.com/mcp"),
    "of another issuer": lambda s: s.token(iss="https://evil.example.com"),
    "with a bad signature": lambda s: s.token(key=rsa_key()),
    "with an unknown key id": lambda s: s.token(kid="rsa-2", key=rsa_key()),
    "with alg none": _unsigned,
    "HMAC-signed with the public key": _hmac_with_the_public_key,
    "RS-signed with the EC key's id": lambda s: s.token(kid="ec-1", key=s.keys["rsa-1"], alg="RS256"),
    "without exp": lambda s: s.token(exp=None),
    "without sub": lambda s: s.token(sub=None),
    "whose sub holds a line break": lambda s: s.token(sub="bad\nsub"),
    "whose sub holds a delete": lambda s: s.token(sub="\x7f"),
    "whose sub is empty": lambda s: s.token(sub=""),
    "whose sub is blank": lambda s: s.token(sub="   "),
    "without aud": lambda s: s.token(aud=None),
    "not yet valid": lambda s: s.token(nbf=4_000_000_000),
    "not a JWT": lambda s: "opaque-token-0123456789",
    "garbage in three parts": lambda s: "a.b.c",
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_token_is_refused(signer: Issuer, tmp_path: Path, case: str, caplog: pytest.LogCaptureFixture) -> None:
    token = REFUSED[case](signer)
    with caplog.at_level(logging.DEBUG):
        assert authenticator(signer, tmp_path).authenticate(token) is None
    for part in token.split("."):
        assert len(part) < 8 or part not in caplog.text  # the token is never logged, nor a part of it


def test_a_token_expired_within_the_leeway_is_still_accepted_and_beyond_it_refused(
        signer: Issuer, tmp_path: Path) -> None:
    checker = authenticator(signer, tmp_path)
    with freeze_time("2026-06-01T12:00:00Z"):
        now = 1_780_315_200
        assert checker.authenticate(signer.token(iat=now - 600, exp=now - 30)) is not None
        assert checker.authenticate(signer.token(iat=now - 600, exp=now - 61)) is None
        assert checker.authenticate(signer.token(iat=now + 30, exp=now + 600)) is not None
        assert checker.authenticate(signer.token(iat=now + 120, exp=now + 600)) is None


def test_the_keys_are_found_through_the_issuer_s_metadata(tmp_path: Path) -> None:
    with serving() as local:
        checker, _ = oauth_authenticator(local.url, AUDIENCE, grants=GRANTS)
        assert checker.authenticate(local.token()) == Principal("oauth:alice", {"*": "write", "audit": "admin"})
        assert checker.authenticate(local.token(sub="bob")) is not None
    assert local.fetches == ["/.well-known/oauth-authorization-server", "/jwks"]  # fetched once, then cached


def test_metadata_that_names_another_issuer_is_not_trusted_for_its_keys() -> None:
    with serving(named="https://evil.example.com") as local:
        checker, _ = oauth_authenticator(local.url, AUDIENCE, grants=GRANTS)
        assert checker.authenticate(local.token()) is None
    assert "/jwks" not in local.fetches


def test_a_new_key_id_fetches_the_keys_again_but_at_most_once_per_cooldown() -> None:
    now = [1000.0]
    with serving() as local:
        keys = IssuerKeys(local.url, cooldown=60.0, clock=lambda: now[0])
        checker = OAuthAuthenticator(local.url, AUDIENCE, keys, GRANTS)
        assert checker.authenticate(local.token()) is not None
        local.keys["rsa-2"] = rsa_key()  # the issuer rotates its keys
        now[0] += 61
        assert checker.authenticate(local.token(kid="rsa-2")) is not None  # fetched again, found
        for _ in range(5):  # made-up key ids: one fetch at most per cooldown
            assert checker.authenticate(local.token(kid="made-up", key=rsa_key())) is None
        now[0] += 61
        assert checker.authenticate(local.token(kid="made-up", key=rsa_key())) is None
    assert local.fetches.count("/jwks") == 3


def test_keys_not_reachable_at_start_are_fetched_once_the_issuer_answers(
        signer: Issuer, caplog: pytest.LogCaptureFixture) -> None:
    now, down = [1000.0], [True]

    def fetch(url: str) -> Any:
        if down[0]:
            raise OSError("connection refused")
        return {"issuer": signer.url, "jwks_uri": signer.url + "/jwks"} if "well-known" in url else signer.jwks()

    keys = IssuerKeys(signer.url, fetch=fetch, cooldown=60.0, clock=lambda: now[0])
    checker = OAuthAuthenticator(signer.url, AUDIENCE, keys, GRANTS)
    with caplog.at_level(logging.WARNING):
        assert keys.load() is not None  # the issuer is down at start: why, for the caller to say once
    assert caplog.records == []
    down[0] = False
    assert checker.authenticate(signer.token()) is None  # within the cooldown: not asked again
    now[0] += 61
    assert checker.authenticate(signer.token()) is not None


def test_an_issuer_or_keys_file_that_cannot_be_trusted_is_refused_at_start(signer: Issuer, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="https"):
        oauth_authenticator("http://id.example.com", AUDIENCE)
    secret = tmp_path / "oct.json"
    secret.write_text(json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "h"}]}))
    with pytest.raises(ValueError, match="no public signing key"):
        oauth_authenticator(signer.url, AUDIENCE, jwks=secret)
    with pytest.raises(ValueError, match="JWKS file"):
        oauth_authenticator(signer.url, AUDIENCE, jwks=tmp_path / "missing.json")


def test_a_hmac_token_is_refused_even_when_the_keys_hold_a_symmetric_key(signer: Issuer, tmp_path: Path) -> None:
    jwks = tmp_path / "jwks.json"
    secret = b"s" * 32
    symmetric = {"kty": "oct", "k": base64.urlsafe_b64encode(secret).rstrip(b"=").decode(), "kid": "h"}
    jwks.write_text(json.dumps({"keys": [*signer.jwks()["keys"], symmetric]}))
    checker = oauth_authenticator(signer.url, AUDIENCE, jwks=jwks, grants=GRANTS)[0]
    token = jwt.encode(signer.claims(), secret, algorithm="HS256", headers={"kid": "h"})
    assert checker.authenticate(token) is None


def test_a_verified_token_is_not_verified_again(signer: Issuer, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    checker = authenticator(signer, tmp_path)
    decoded: list[str] = []
    decode = jwt.decode

    def counting(token: str, *args: Any, **kwargs: Any) -> Any:
        decoded.append(token)
        return decode(token, *args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counting)
    token = signer.token()
    assert checker.authenticate(token) == checker.authenticate(token) is not None
    assert len(decoded) == 1


def test_a_remembered_token_is_refused_once_it_expires(signer: Issuer, tmp_path: Path) -> None:
    checker = authenticator(signer, tmp_path)
    with freeze_time("2026-06-01T12:00:00Z") as clock:
        token = signer.token(iat=1_780_315_200, exp=1_780_315_200 + 300)
        assert checker.authenticate(token) is not None
        clock.tick(300 + 61)
        assert checker.authenticate(token) is None


def test_a_remembered_token_is_checked_again_once_the_issuer_s_keys_change(signer: Issuer) -> None:
    now = [1000.0]

    def fetch(url: str) -> Any:
        return {"issuer": signer.url, "jwks_uri": signer.url + "/jwks"} if "well-known" in url else signer.jwks()

    keys = IssuerKeys(signer.url, fetch=fetch, cooldown=60.0, clock=lambda: now[0])
    checker = OAuthAuthenticator(signer.url, AUDIENCE, keys, GRANTS)
    token = signer.token()
    assert checker.authenticate(token) is not None
    del signer.keys["rsa-1"]  # the issuer retires the key (say it leaked) and signs with another
    signer.keys["rsa-2"] = rsa_key()
    now[0] += 61
    assert checker.authenticate(signer.token(kid="rsa-2")) is not None  # an unknown key id: the keys are fetched
    assert checker.authenticate(token) is None


def test_reading_the_same_keys_again_keeps_what_they_verified(signer: Issuer, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    checker = authenticator(signer, tmp_path)
    token = signer.token()
    assert checker.authenticate(token) is not None
    assert checker.keys.load() is None  # e.g. a made-up key id had the file read again
    monkeypatch.setattr(jwt, "decode", lambda *_, **__: pytest.fail("verified again"))
    assert checker.authenticate(token) is not None
