"""`[tool.assay.telemetry]`: whether a run starts its OTLP receiver, where it listens and what apps are told.

Keys: `enabled` (default true once the table exists), `port` (default 0: a free port per run; a fixed
port is for long-running services that read OTEL_EXPORTER_OTLP_ENDPOINT once), `host` (the hostname
reported to apps, e.g. behind a tunnel) and `scope` (`run`, or `attempt`: an endpoint path per attempt).
Environment variables are never read for any of these.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError, UsageError

__all__ = ["SCOPES", "TelemetryConfig", "telemetry_config"]

SCOPES = ("run", "attempt")
_KEYS = ("enabled", "port", "host", "scope")


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    bind: str = "127.0.0.1"  # where the receiver listens (`--telemetry-host`)
    port: int = 0
    host: str | None = None  # the hostname apps are told; default: the bind address (loopback for a wildcard)
    scope: str = "run"
    where: str = field(default="[tool.assay.telemetry]", compare=False)  # the table they came from (its file), for messages

    @property
    def advertised_host(self) -> str:
        if self.host:
            return _url_host(self.host)
        if self.bind in ("0.0.0.0", "::", ""):
            return "127.0.0.1"
        return _url_host(self.bind)


def _url_host(host: str) -> str:
    """`host` as it goes between `http://` and `:PORT`: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _ipv6(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text.strip("[]")), ipaddress.IPv6Address)
    except ValueError:
        return False


def host_problem(host: str) -> str | None:
    """Why `host` is no host name or address (a URL, a port with it, characters no name has); None when it is one."""
    if "://" in host:
        return "is a URL, not a host"
    if ":" in host and not _ipv6(host):
        return "holds a port"
    if not re.fullmatch(r"\[?[A-Za-z0-9._:%-]+\]?", host):
        return "is not a host name or an IP address"
    return None


def telemetry_config(table: Any, where: str, bind: str | None = None) -> TelemetryConfig | None:
    """The settings a `[tool.assay.telemetry]` table (None: absent) holds; a `ConfigError` naming `where` for a
    table a run would refuse (the project loader checks it too, so `list` and `--dry` refuse it as well)."""
    if table is None and bind is None:
        return None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    table = table or {}
    unknown = [key for key in table if key not in _KEYS]
    if unknown:
        from assay.core.format import did_you_mean

        hint = did_you_mean(str(unknown[0]), _KEYS, form=" (did you mean {}?)")
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}{hint}; telemetry reads {', '.join(_KEYS)}")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: enabled must be true or false, got {enabled!r:.40}")
    if not enabled and bind is None:
        return None
    port = table.get("port", 0)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"{where}: port must be an integer in 0..65535 (0: a free port per run), got {port!r:.40}")
    host = table.get("host")
    if host is not None and (not isinstance(host, str) or not host.strip()):
        raise ConfigError(f"{where}: host must be a non-empty string")
    if host is not None and (problem := host_problem(host)) is not None:
        # It goes into the endpoint apps are told, http://HOST:PORT/v1/traces, where anything else breaks it.
        fix = "the receiver's port is `port`" if problem == "holds a port" else "give the host name alone"
        raise ConfigError(f"{where}: host {host!r} {problem}; {fix}, like host = \"127.0.0.1\" or host = "
                          "\"otel.tunnel.example\"")
    scope = table.get("scope", "run")
    if scope not in SCOPES:
        from assay.core.format import did_you_mean

        hint = did_you_mean(str(scope), SCOPES, form=" (did you mean {}?)")
        raise ConfigError(f"{where}: scope must be one of {', '.join(SCOPES)}, got {scope!r}{hint}")
    if port and scope == "attempt":
        raise ConfigError(f"{where}: a fixed port is for a service that reads its endpoint once: use scope = \"run\"")
    return TelemetryConfig(bind=_bind_address(bind) if bind else "127.0.0.1", port=port, host=host, scope=scope,
                           where=where)


def _bind_address(bind: str) -> str:
    """`--telemetry-host` as the socket takes it (an IPv6 address without brackets), or a `UsageError`
    for a URL or an address with a port, which the socket would refuse as an unknown name."""
    problem = host_problem(bind)
    if problem is not None:
        fix = "the port is [tool.assay.telemetry] port" if problem == "holds a port" else "give the address alone"
        raise UsageError(f"--telemetry-host {bind} {problem}; {fix}, like 127.0.0.1 (the default) or 0.0.0.0",
                         "--telemetry-host")
    return bind.strip("[]")
