"""The options of OAuth resource-server mode (server/oauth.py), for a command that serves HTTP.

`chronograph serve --http --auth-issuer URL --audience URL [--jwks FILE] [--auth-map FILE]`
takes that issuer's JWT access tokens, as the MCP authorization specification has a server
do; `oauth_of` turns the options into the guard's authenticators and the protected resource
(or says what is wrong with them, before anything is bound or opened).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chronograph.server.authentication import Authenticator
    from chronograph.server.oauth import ProtectedResource

__all__ = ["add_oauth_arguments", "oauth_of"]


def add_oauth_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of OAuth resource-server mode (server/oauth.py)."""
    parser.add_argument(
        "--auth-issuer", metavar="URL",
        help="with --http: accept JWT access tokens of this OAuth authorization server (its issuer URL, exactly "
        "as its tokens' iss says); its keys are found through its metadata",
    )
    parser.add_argument(
        "--audience", metavar="URL",
        help="with --auth-issuer: this server's URL as clients reach it (e.g. https://memory.example.com/mcp); "
        "tokens must name it in aud",
    )
    parser.add_argument(
        "--jwks", metavar="FILE",
        help="with --auth-issuer: the issuer's keys from this JWKS file instead of its jwks_uri (air-gapped sites)",
    )
    parser.add_argument(
        "--auth-map", metavar="FILE",
        help="with --auth-issuer: a TOML file mapping token scopes and subjects to grants (default: the scopes "
        "chronograph:read|write|admin grant that level in every workspace)",
    )


def oauth_of(args: argparse.Namespace) -> tuple[list[Authenticator], ProtectedResource | None] | str:
    """The authenticators and protected resource the OAuth options ask for, or what is wrong."""
    if args.auth_issuer is None:
        if args.audience or args.jwks or args.auth_map:
            return "--audience, --jwks and --auth-map need --auth-issuer URL"
        return [], None
    if not args.http:
        return "--auth-issuer needs --http (over stdio the local user is the principal)"
    if not args.audience:
        return "--auth-issuer needs --audience URL: this server's URL, which the tokens must name in aud"
    from chronograph.server.grantmap import DEFAULT_MAP, load_grant_map
    from chronograph.server.oauth import oauth_authenticator

    try:
        grants = load_grant_map(Path(args.auth_map).expanduser()) if args.auth_map else DEFAULT_MAP
        authenticator, resource = oauth_authenticator(
            args.auth_issuer, args.audience, jwks=Path(args.jwks).expanduser() if args.jwks else None, grants=grants)
    except ValueError as error:
        return str(error)
    if args.jwks is None and (why := authenticator.keys.load()) is not None:
        print(f"chronograph: warning: {why}; trying again when a token comes", file=sys.stderr)
    return [authenticator], resource
