"""Where an HTTP server listens and what it answers to: loopback or beyond, the names its
Host check accepts, the URL it announces.

A name of this machine (localhost, 127.0.0.1, [::1], and the wildcard 0.0.0.0) is
accepted as Host or Origin only from a client on this machine: from anywhere else it is
a request that lies about where it is going, or a page another machine serves on its own
localhost. A server listening on every address (0.0.0.0, ::) also answers to the
machine's host name and to any IP address (DNS rebinding, which the Host check stops,
needs a name; an address names the server itself).
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["LOOPBACK", "WILDCARDS", "announced", "is_ip", "is_loopback", "listens_beyond_loopback", "served_names"]

LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")
"""The names of this machine a client on it may use."""
WILDCARDS = ("0.0.0.0", "::", "[::]", "")
"""Binding to these listens on every address of the machine."""


def is_ip(name: str) -> bool:
    """Whether `name` (a Host's name, IPv6 in brackets or not) is an IP address."""
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def is_loopback(address: str) -> bool:
    """Whether `address` (an IP, IPv4 mapped in IPv6 too, or "localhost") is this machine only."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return address.lower() == "localhost"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def listens_beyond_loopback(sock: socket.socket) -> bool:
    """Whether the bound `sock` can be reached from other machines (a name is judged by the
    address it was bound to, not by how it reads)."""
    return not is_loopback(str(sock.getsockname()[0]))


def served_names(host: str, allowed: list[str]) -> set[str]:
    """The Host names a server bound to `host` answers to: this machine's (from clients on
    it), `host`, the names --allow-host adds, and on a wildcard the machine's host name."""
    names = {*LOOPBACK, host.lower(), *(name.lower() for name in allowed)}
    if host in WILDCARDS:
        names.add(socket.gethostname().lower())
    return names


def announced(host: str, port: int, path: str) -> str:
    """The URL to print for a server bound to `host`: on a wildcard, the machine's host name
    (which the Host check accepts), else `host` itself."""
    name = socket.gethostname() if host in WILDCARDS else host
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"
    return f"http://{name}:{port}{path}"
