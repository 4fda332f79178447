"""The Host header rule every assay server applies: a loopback name with exactly the bound port.

Kept apart from the Starlette app so a server that is not Starlette (the run's OTLP receiver) applies
the same rule without importing a web framework.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection

__all__ = ["host_is_allowed", "split_host_header"]


def split_host_header(host_header: str | None) -> tuple[str, int] | None:
    """(name, port) of a Host header (no port means 80); None for a header that is not well formed."""
    if not host_header:
        return None
    host_header = host_header.strip()
    if host_header.startswith("["):
        closing = host_header.find("]")
        if closing < 0:
            return None
        name, rest = host_header[1:closing], host_header[closing + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
        if "%" in name:  # zone ids are not loopback literals we serve
            return None
    else:
        if host_header.count(":") > 1:  # an IPv6 literal must be bracketed
            return None
        name, separator, port_text_found = host_header.partition(":")
        if separator and not port_text_found:
            return None
        port_text = port_text_found if separator else None
    if port_text is None:
        return name, 80
    if port_text.isascii() and port_text.isdigit() and len(port_text) <= 5:
        return name, int(port_text)
    return None


def host_is_allowed(host_header: str | None, port: int | None, also: Collection[str] = ()) -> bool:
    """`localhost` or a loopback IP literal (or a name in `also`), with exactly the bound port.

    A DNS name that resolves to loopback is refused: that is how a rebinding page reaches a local server."""
    split = split_host_header(host_header)
    if split is None or port is None or split[1] != port:
        return False
    name = split[0].lower()
    if name == "localhost" or name in also:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
