"""Listening for HTTP: beyond loopback only with a token, or when asked for by name.

`chronograph serve --http` and `chronograph ui` bind their port first (a clash is one line,
before anything is announced), then judge where it listens by the address it was bound
to: on loopback anything goes; beyond it, without $CHRONOGRAPH_TOKEN, anyone who reaches
the port could use the memory, so they refuse unless --allow-network-without-token says so
(and then they say what it means on every start).
"""

from __future__ import annotations

import argparse
import socket
import sys

from chronograph.application.engine.config import TOKEN_ENV

__all__ = ["NETWORK_FLAG", "add_network_argument", "may_listen"]

NETWORK_FLAG = "--allow-network-without-token"


def add_network_argument(parser: argparse.ArgumentParser) -> None:
    """The flag that lets a server listen beyond loopback without a token."""
    parser.add_argument(
        NETWORK_FLAG, action="store_true",
        help=f"listen beyond loopback (a --host other than 127.0.0.1) without ${TOKEN_ENV}: anyone who reaches "
             "the port can use the memory (default: refuse)",
    )


def may_listen(prog: str, sock: socket.socket, token: str | None, allowed: bool, exposes: str) -> bool:
    """Whether a server may go on with the bound `sock` (printing why not, or a warning);
    `exposes` says what a stranger could do ("read the graph")."""
    from chronograph.server.addresses import listens_beyond_loopback  # noqa: PLC0415 (a light module)

    if token or not listens_beyond_loopback(sock):
        return True
    address = sock.getsockname()[0]
    if not allowed:
        print(f"{prog}: refusing to listen on {address} (beyond this machine) without ${TOKEN_ENV}: anyone who "
              f"reaches the port could {exposes}. Set ${TOKEN_ENV}, bind to 127.0.0.1 (the default), or add "
              f"{NETWORK_FLAG} to serve it to the network anyway", file=sys.stderr)
        return False
    print(f"{prog}: warning: listening on {address} (beyond this machine) without ${TOKEN_ENV} "
          f"({NETWORK_FLAG}): anyone who reaches the port can {exposes}", file=sys.stderr)
    return True
