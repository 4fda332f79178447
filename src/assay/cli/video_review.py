"""`assay video review`: start the local browser editor for an eval directory (spec/video.md §22.1).

Checks the eval directory and the requested case and target before binding 127.0.0.1, prints the
URL, opens a browser unless told not to, and serves until Ctrl-C (exit 0).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlencode

import typer

from assay.cli import common
from assay.cli.video_options import EvalDirOption, cloud_materializer
from assay.errors import AssayError, CaseError

# Click's UsageError as the installed Typer ships it (newer Typer vendors its own Click).
CommandUsageError = typer.BadParameter.__mro__[1]


def _check_options(case: Optional[str], target: Optional[str], time: Optional[float]) -> None:
    if target is not None and case is None:
        raise CommandUsageError("--target requires --case")
    if time is not None and case is None:
        raise CommandUsageError("--time requires --case")
    if time is not None and (not math.isfinite(time) or time < 0):
        common.bad_parameter("--time", "must be a finite, nonnegative number")


def _declared_targets(case_path: Path) -> list[str]:
    from assay.video.loading import read_yaml_mapping

    try:
        raw_targets = read_yaml_mapping(case_path).get("targets")
    except AssayError:
        return []
    return [key for key in raw_targets if isinstance(key, str)] if isinstance(raw_targets, dict) else []


def prepare_review(eval_dir: Path, case: Optional[str], target: Optional[str]) -> tuple[Path, Optional[str]]:
    """The resolved eval dir and the case's file name, after the checks GlassKit makes before serving."""
    from assay.video.loading import discover_case_paths, load_eval_config, resolve_eval_dir

    root = resolve_eval_dir(eval_dir)
    load_eval_config(root)
    paths = discover_case_paths(root, case)
    if case is None:
        return root, None
    case_path = paths[0]
    if target is not None and target not in _declared_targets(case_path):
        raise CaseError(f"case {case_path.name!r} has no target matching {target!r}")
    return root, case_path.name


def review_url(port: int, case_file: Optional[str], target: Optional[str], time: Optional[float]) -> str:
    query = [(name, value) for name, value in (("case", case_file), ("target", target)) if value is not None]
    if time is not None:
        query.append(("time", str(time)))
    return f"http://127.0.0.1:{port}/" + (f"?{urlencode(query)}" if query else "")


def _open_browser(url: str, say: Any) -> None:
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except Exception as error:  # noqa: BLE001 - any browser failure is reported, never fatal
        say(f"Could not open browser: {error}")
        return
    if not opened:
        say("Could not open browser automatically; use the URL above.")


def review_command(
    eval_dir: Path = EvalDirOption,
    case: Optional[str] = typer.Option(None, "--case", help="Open this case (file name or stem)."),
    target: Optional[str] = typer.Option(None, "--target", help="Select this target (needs --case)."),
    time: Optional[float] = typer.Option(None, "--time", help="Start at this time in seconds (needs --case)."),
    port: int = typer.Option(0, "--port", callback=common.between(0, 65535), help="Port on 127.0.0.1 (0 picks a free one)."),
    no_open: bool = typer.Option(False, "--no-open", help="Do not open a browser."),
    results: Optional[Path] = typer.Option(
        None,
        "--results",
        help="JSON report or run checkpoint whose pass/fail marks to show (default: the newest under <eval-dir>/runs).",
    ),
) -> None:
    """Open the local browser editor for cases, samples and expectations."""
    _check_options(case, target, time)
    console = common.stdout_console()

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    try:
        root, case_file = prepare_review(eval_dir, case, target)
    except AssayError as error:
        common.fail("Could not start review UI", error, console=console)

    from assay.video.review.server import ReviewServer, create_review_app
    from assay.web.app import Binding, bind_loopback_socket, serve

    try:
        sock = bind_loopback_socket(port)
    except OSError as error:
        common.fail("Could not start review UI", error, console=console)
    binding = Binding(port=sock.getsockname()[1])
    server = ReviewServer(
        eval_dir=root,
        binding=binding,
        results_path=results.expanduser().resolve() if results is not None else None,
        materialize=cloud_materializer(),
    )
    url = review_url(binding.port or 0, case_file, target, time)
    say(f"Review UI: {url}")
    if not no_open:
        _open_browser(url, say)
    try:
        serve(create_review_app(server), sock)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    raise typer.Exit(0)
