"""Where runs are exported as OpenTelemetry: `$ASSAY_OTLP_EXPORT` or a project's `[tool.assay.export]`, and
`--otlp`'s URL checked. Apart from the exporter (`otlp_export`, the SDK's side) so that a run whose
project exports nowhere imports none of it."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

from assay.errors import AssayError, UsageError

__all__ = [
    "ENVIRONMENT", "check_endpoint", "configured_endpoint", "export_command_endpoint", "exports_anywhere", "shown_endpoint",
    "table_endpoint",
]

ENVIRONMENT = "ASSAY_OTLP_EXPORT"


def shown_endpoint(url: str) -> str:
    """The URL as assay prints it: a password in it (`https://user:KEY@host`, which the SDK sends as basic
    authentication) is written `***`, so that an export's line or a run's warning does not put it in a CI log."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # (a URL that does not parse: a password in it cannot be told apart)
        return url
    if password is None:
        return url
    return parts._replace(netloc=f"{parts.username}:***@{parts.netloc.rsplit('@', 1)[1]}").geturl()


def check_endpoint(url: str, option: str = "--otlp") -> str:
    """The collector's base URL (`http://host:4318`): signals go to `<url>/v1/traces` and `/v1/logs`."""
    shown = shown_endpoint(url)
    try:
        parts = urlsplit(url.strip())
    except ValueError as error:  # `http://[::1:4318`: a bracket left open
        raise UsageError(f"{option} {shown!r} is not a URL ({error}); give the OTLP/HTTP endpoint's base URL, like "
                         "http://127.0.0.1:4318 (an IPv6 address in brackets: http://[::1]:4318)", option) from None
    try:
        parts.port  # noqa: B018 - a port past 65535 or not a number raises here
    except ValueError:
        raise UsageError(f"{option} {shown!r}: the port must be a number from 1 to 65535", option) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{option} {shown!r}: give the OTLP/HTTP endpoint's base URL, like http://127.0.0.1:4318", option)
    if parts.query or parts.fragment or url.strip().endswith(("?", "#")):
        base = shown_endpoint(parts._replace(query="", fragment="").geturl().rstrip("/"))
        raise UsageError(f"{option} {shown!r}: give the collector's base URL without a ?query or #fragment ({base}): assay "
                         "adds /v1/traces and /v1/logs to it (headers such as an API key go in OTEL_EXPORTER_OTLP_HEADERS)",
                         option)
    path = parts.path.rstrip("/")
    signal = next((name for name in ("/v1/logs", "/v1/traces", "/v1/metrics") if path.endswith(name)), None)
    if signal is not None:
        base = shown_endpoint(parts._replace(path=path[: -len(signal)], query="", fragment="").geturl())
        raise UsageError(f"{option} {shown!r}: give the collector's base URL ({base}); assay adds /v1/traces and "
                         "/v1/logs itself", option)
    return url.strip().rstrip("/")


def export_command_endpoint(otlp: str | None, here: Path) -> str:
    """Where `assay runs export` sends: `--otlp`, else where every run is exported from `here` (the variable, or
    the table of the project in the current folder), as a user who set either expects; else a `UsageError`."""
    if otlp is not None:
        return check_endpoint(otlp)
    configured = configured_endpoint(here)
    if configured is None:
        # (a pyproject.toml here that cannot be read was passed over in silence, and this line then told the user to
        # set the `otlp` they had set, in that very file)
        unread = _unreadable(Path(here) / "pyproject.toml")
        where = (f"; {unread}, so its [tool.assay.export] table was not read: mend it, or give --otlp" if unread else
                 f" (or set {ENVIRONMENT}, or `otlp` in the [tool.assay.export] table of the pyproject.toml here)")
        raise UsageError(f"--otlp is needed: the collector's OTLP/HTTP base URL, like http://127.0.0.1:4318{where}", "--otlp")
    return configured


def _unreadable(path: Path) -> str | None:
    """Why the pyproject.toml at `path` cannot be read (not UTF-8, not TOML), or None: it reads, or there is none."""
    try:
        tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        return f"{path} is not UTF-8 text ({error.reason} at byte {error.start})"
    except tomllib.TOMLDecodeError as error:
        return f"{path} is not valid TOML ({error})"
    except OSError as error:
        return f"{path} cannot be read ({error.strerror or error})"
    return None


def configured_endpoint(home: Path | None) -> str | None:
    """Where every run is exported, if anywhere: `$ASSAY_OTLP_EXPORT`, else `otlp` of
    `[tool.assay.export]` in the pyproject.toml of the run's folder (an agent project)."""
    value = os.environ.get(ENVIRONMENT, "").strip()
    if value:
        return check_endpoint(value, ENVIRONMENT)
    from assay.core.format import variable_meant

    misspelt = variable_meant(os.environ, ENVIRONMENT)
    if misspelt is not None:  # (it was ignored: nothing was exported, and nothing said why)
        raise UsageError(f"{misspelt} is set, but assay reads {ENVIRONMENT} (did you mean it?): rename the variable to "
                         f"{ENVIRONMENT}, or unset it")
    if home is None:
        return None
    path = Path(home) / "pyproject.toml"
    if not path.is_file():
        return None
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # the project's own loader reports a broken file
    tool = document.get("tool") if isinstance(document.get("tool"), dict) else {}
    assay = tool.get("assay") if isinstance(tool.get("assay"), dict) else {}
    table = assay.get("export")
    if table is None:
        _refuse_misplaced_otlp(assay, path)
    return None if table is None else table_endpoint(table, f"{path} [tool.assay.export]")


def _refuse_misplaced_otlp(assay: dict, path: Path) -> None:
    """A `UsageError` when the project names an endpoint where assay does not read it: `[tool.assay.exprt]` (a
    misspelt table) or `otlp` put in `[tool.assay]` itself. Outside an agent project (whose loader checks its keys)
    it was passed over in silence: a doc or video run was not exported, and `assay runs export` said to set the
    `otlp` that was set."""
    from assay.core.format import did_you_mean

    if "otlp" in assay:  # (its value shown as `runs export` shows a URL: a password in it is `***`)
        value = assay["otlp"]
        shown = f' = "{shown_endpoint(value)}"' if isinstance(value, str) else ""
        raise UsageError(f"{path} [tool.assay] holds otlp, which assay reads from the [tool.assay.export] table: move it "
                         f"there ([tool.assay.export] otlp{shown})")
    for key, value in assay.items():
        if isinstance(value, dict) and ("otlp" in value or did_you_mean(key, ("export",), cutoff=0.85, form="{}")):
            raise UsageError(f"{path} [tool.assay.{key}]: assay reads the endpoint from [tool.assay.export] (did you mean "
                             "it?): rename the table")


def table_endpoint(table: object, where: str) -> str | None:
    """The endpoint a `[tool.assay.export]` table names (None: none); a table that is not one is a `UsageError`
    naming `where`. An agent project's loader checks it too, so `list` and `--dry` refuse what a run would."""
    if not isinstance(table, dict):
        raise UsageError(f"{where}: the table holds one key, otlp = \"http://host:4318\"")
    unknown = sorted(str(key) for key in set(table) - {"otlp"})
    if unknown:
        from assay.core.format import did_you_mean

        hint = did_you_mean(unknown[0], ("otlp",), form=" (did you mean {}?)")
        raise UsageError(f"{where}: unknown key {unknown[0]!r}{hint}; the table holds one key, otlp = \"http://host:4318\"")
    value = table.get("otlp")
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{where}: otlp must be a URL string")
    return check_endpoint(value, f"{where} otlp")


def exports_anywhere(home: Path | None) -> bool:
    """Whether runs of `home` are exported (a misconfigured endpoint counts: the export says what is wrong)."""
    try:
        return configured_endpoint(home) is not None
    except AssayError:
        return True
