"""What a failed HTTP exchange says about its request: provably never sent, or possibly seen.

Only a failure while connecting (refused, unresolvable host, TLS handshake, connect or pool timeout)
proves the server never got the request; anything later (a reply cut off, a read timeout, a dropped
connection) may follow work the server did, so it must be reported, never silently resent. Every
HTTP caller (judges, agent endpoints, HTTP agents) classifies through here; `core/retry.py` resends.
"""

from __future__ import annotations

import socket
import ssl
import sys
from dataclasses import dataclass

# Transports seen through the openai SDK (httpx2 with an aiohttp backend, or httpx) and plain httpx callers.
_HTTPX_MODULES = ("httpx", "httpx2", "httpcore")


@dataclass(frozen=True, slots=True)
class TransportFailure:
    never_sent: bool  # True only when the request provably never reached the server
    detail: str  # for a person, e.g. "connection refused"
    # False when every try fails the same way, so a caller reports it at once rather than resending it: an
    # https:// URL whose server speaks plain HTTP (a local model server given as https://127.0.0.1:8000/v1).
    worth_resending: bool = True


# OpenSSL's reasons for a handshake whose reply is no TLS record at all: what a plain-HTTP server's
# "HTTP/1.1 400 …" reads as (1.1/3.0: wrong version number; 3.2+: record layer failure; older: unknown protocol).
_NOT_TLS_REASONS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "UNKNOWN_PROTOCOL",
                              "PACKET_LENGTH_TOO_LONG"})
_NOT_TLS_TEXT = ("wrong version number", "record layer failure", "unknown protocol", "packet length too long")


def _plain_http_server(chain: list[BaseException], url: str | None) -> TransportFailure | None:
    """The failure of an https:// `url` whose server answered the TLS handshake in plain HTTP, else None."""
    if not url or not url.strip().lower().startswith("https://"):
        return None
    for error in chain:
        if isinstance(error, ssl.SSLError) and not isinstance(error, ssl.SSLCertVerificationError):
            reason = str(getattr(error, "reason", "") or "").upper()
            if reason in _NOT_TLS_REASONS or any(text in str(error).lower() for text in _NOT_TLS_TEXT):
                shown = url.strip().rstrip("/")
                detail = (f"the server at {shown} answered in plain HTTP, not TLS: use http:// instead of https:// "
                          f"(http://{shown.split('://', 1)[1]})")
                return TransportFailure(True, detail, worth_resending=False)
    return None


def _chain(error: BaseException) -> list[BaseException]:
    """The error and its causes, outermost first (SDKs wrap the transport's error once or twice)."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(found) < 16 and not any(current is seen for seen in found):
        found.append(current)
        wrapped = current.args[0] if current.args and isinstance(current.args[0], BaseException) else None
        # httpcore wraps the socket's error as its argument, `from None` (httpx: ConnectError(OSError(…)))
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__) or wrapped
    return found


def _classes(modules: tuple[str, ...], *names: str) -> tuple[type, ...]:
    """Exception classes by name from the modules already imported (an error cannot come from one that is not)."""
    classes = []
    for module_name in modules:
        module = sys.modules.get(module_name)
        for name in names:
            value = getattr(module, name, None) if module is not None else None
            if isinstance(value, type):
                classes.append(value)
    return tuple(classes)


def _any(chain: list[BaseException], classes: tuple[type, ...]) -> BaseException | None:
    return next((error for error in chain if classes and isinstance(error, classes)), None)


def _is_transport(chain: list[BaseException]) -> bool:
    classes = (
        _classes(("openai",), "APIConnectionError")
        + _classes(_HTTPX_MODULES, "TransportError", "TimeoutException")
        + _classes(("aiohttp",), "ClientError")
        + (ConnectionError, ssl.SSLError, socket.gaierror)
    )
    return _any(chain, classes) is not None


def _connect_phase(chain: list[BaseException]) -> bool:
    # aiohttp's errors are the precise ones; the SDK's bridge maps some of them to httpx classes that
    # say more than is known (a server that hung up after the request becomes a "ConnectTimeout").
    if _any(chain, _classes(("aiohttp",), "ClientError")) is not None:
        return _any(chain, _classes(("aiohttp",), "ClientConnectorError", "ConnectionTimeoutError")) is not None
    if _any(chain, (ConnectionRefusedError, socket.gaierror)) is not None:
        return True
    return _any(chain, _classes(_HTTPX_MODULES, "ConnectError", "ConnectTimeout", "PoolTimeout")) is not None


def _system_error(chain: list[BaseException]) -> BaseException | None:
    """The operating system's own error, if any (a bare timeout does not count: it says nothing more)."""
    for error in chain:
        if isinstance(error, OSError) and not isinstance(error, TimeoutError) and type(error).__module__ in (
            "builtins", "socket", "ssl",
        ):
            return error
    return None


def _innermost_text(chain: list[BaseException]) -> str:
    for error in reversed(chain):
        text = str(error).strip()
        if text:
            return " ".join(text.split())
    return type(chain[-1]).__name__


def transport_failure(error: BaseException, *, timeout: float | None = None, url: str | None = None) -> TransportFailure | None:
    """How `error` ended the exchange with `url` (the base URL, named when that is what to fix), or None when
    it is not a transport failure at all."""
    chain = _chain(error)
    if not _is_transport(chain):
        return None
    plain = _plain_http_server(chain, url)
    if plain is not None:
        return plain
    within = f" within {timeout:g}s" if timeout else ""
    if _connect_phase(chain):
        if _any(chain, (ConnectionRefusedError,)) is not None:
            return TransportFailure(True, "connection refused")
        if _any(chain, (socket.gaierror,) + _classes(("aiohttp",), "ClientConnectorDNSError")) is not None:
            return TransportFailure(True, f"could not resolve the host name ({_innermost_text(chain)})")
        if _any(chain, (ssl.SSLError,) + _classes(("aiohttp",), "ClientSSLError")) is not None:
            return TransportFailure(True, f"TLS handshake failed ({_innermost_text(chain)})")
        if _system_error(chain) is None:
            return TransportFailure(True, f"could not connect{within}")
        return TransportFailure(True, f"could not connect ({_innermost_text(chain)})")
    if _any(chain, _classes(("aiohttp",), "ServerDisconnectedError")) is not None:
        return TransportFailure(False, "the server closed the connection without a complete reply")
    cut = _classes(("aiohttp",), "ClientPayloadError") + _classes(_HTTPX_MODULES, "RemoteProtocolError", "ReadError")
    if _any(chain, cut) is not None:
        return TransportFailure(False, f"the reply was cut off before it was complete ({_innermost_text(chain)})")
    if _any(chain, _classes(_HTTPX_MODULES, "WriteError", "WriteTimeout")) is not None:
        detail = f"the connection broke while the request was being sent ({_innermost_text(chain)})"
        return TransportFailure(False, detail)
    timeouts = (
        _classes(("openai",), "APITimeoutError") + _classes(_HTTPX_MODULES, "TimeoutException")
        + _classes(("aiohttp",), "ServerTimeoutError")
    )
    if _any(chain, timeouts) is not None:
        return TransportFailure(False, f"no complete reply{within}")
    return TransportFailure(False, f"the connection failed once it was open ({_innermost_text(chain)})")


__all__ = ["TransportFailure", "transport_failure"]
