"""Plain command-line values are coerced without pydantic, to exactly what typer's own adapter gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import pytest
import typer

pytest.importorskip("typer._coercion", reason="this typer coerces with click's types, not pydantic adapters")

from typer._click.exceptions import BadParameter  # noqa: E402
from typer._coercion import build_runtime_param  # noqa: E402

from assay.cli.plain_params import _plain_first  # noqa: E402


def _command() -> Any:
    app = typer.Typer()

    @app.command()
    def body(
        name: str = typer.Option(None),
        tags: list[str] = typer.Option(None),
        project: Path = typer.Option(None),
        existing: Path = typer.Option(None, exists=True, dir_okay=False, resolve_path=True),
        count: int = typer.Option(None),
        share: float = typer.Option(None),
        alpha: float = typer.Option(0.05),
        limit: int = typer.Option(20),
        quiet: bool = typer.Option(False, "--quiet"),
        at: list[float] = typer.Option(None),
        attempts: Optional[int] = typer.Option(None),
        evals: list[str] = typer.Argument(None),
    ) -> None:
        pass

    return typer.main.get_command(app)


def _coerced(build: Any, param: Any, ctx: Any, value: Any) -> tuple[str, Any]:
    try:
        return "value", build(param.type_descriptor).coerce(value, param=param, ctx=ctx)
    except BadParameter as error:
        return "error", error.format_message()


WHOLE_NUMBERS_TYPED = ["4", "+4", "-4", "007", "-0", "0", "4.0", " 4", "4 ", "1_000", "99999999999999999999", "\u0661\u0662",
                       "0x10", "1e3", "+", "--4", "4x", "9223372036854775808"]
DECIMALS_TYPED = ["1", "1.5", "-1.5", "+.5", ".5", "5.", "1e3", "1E-3", "1e+3", "1e400", "inf", "nan", "-inf", "1_0.5",
                  " 1", "0x1p3", "1e", ".", "00.5", "\u0663.\u0665", "1.5.2", "e3"]


@pytest.mark.parametrize(("name", "value"), [
    ("name", None), ("name", "x y"), ("name", ""), ("tags", None), ("tags", ("a", "b")), ("tags", ()),
    ("evals", None), ("evals", ("one", "two")), ("evals", "one"), ("project", None), ("project", "."),
    ("project", "a/b/"), ("existing", "/nonexistent/x"), ("existing", "/tmp"),
    ("existing", __file__), ("count", "7"), ("count", "seven"), ("count", 4), ("share", "0.5"), ("share", "1e3"),
    ("alpha", 0.05), ("alpha", 1.0), ("alpha", 1), ("alpha", "0.01"), ("limit", 20), ("limit", True), ("limit", 2.0),
    ("limit", "3"), ("quiet", False), ("quiet", True), ("count", 4.0), ("share", 3),
    # numbers as typed: the usual spellings are read here, every other one by typer's adapter (same result)
    *[("count", typed) for typed in WHOLE_NUMBERS_TYPED], *[("attempts", typed) for typed in WHOLE_NUMBERS_TYPED],
    *[("share", typed) for typed in DECIMALS_TYPED], *[("at", (typed, "2")) for typed in DECIMALS_TYPED],
    ("at", ()), ("at", ("1", "x")), ("at", ("1",)),
])
def test_plain_values_coerce_as_typer_own_adapter_does(name, value):
    # (An empty path is the one value refused where typer's adapter gives the current folder: see below.)
    command = _command()
    ctx = command.make_context("body", [], resilient_parsing=True)
    param = next(param for param in command.params if param.name == name)
    ours, typer_own = _coerced(_plain_first, param, ctx, value), _coerced(build_runtime_param, param, ctx, value)
    if typer_own[0] == "error" and "unable to parse" in typer_own[1]:
        # refused alike, in typer's (and GlassKit's) words, then the value they do not name
        given = next(item for item in value if item not in ("1", "2")) if isinstance(value, tuple) else value
        typer_own = ("error", f"{typer_own[1]} (got {given!r})")
    assert repr(ours) == repr(typer_own)  # (repr: nan is not equal to itself)
    assert type(ours[1]) is type(typer_own[1])


@pytest.mark.parametrize("arguments", [("view", "--export", ""), ("video", "run", "--eval-dir", ""),
                                       ("agent", "run", "--junit", "")])
def test_an_empty_path_is_refused_not_taken_as_the_current_folder(tmp_path, monkeypatch, arguments):
    """`assay view --export "$SITE"` with SITE unset wrote the viewer's site into the current folder."""
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    done = subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")})
    assert done.returncode == 2, done.stdout + done.stderr
    option = arguments[-2]
    assert (f"Invalid value for '{option}': needs a path, and the value given is empty (an unset variable in a "
            "script?)") in done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


@pytest.mark.parametrize("arguments", [("runs", "list", "--limit", ""), ("runs", "compare", "a", "b", "--alpha", " "),
                                       ("agent", "run", "--concurrency", ""),
                                       ("video", "run", "--case", "c", "--at", "1", "--at", "")])
def test_an_empty_number_says_so_not_that_it_cannot_be_parsed(tmp_path, monkeypatch, arguments):
    """`--limit "$N"` with N unset said "Input should be a valid integer, unable to parse string as an integer"."""
    from typer.testing import CliRunner

    from assay.cli.app import app

    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "assay.db"))
    result = CliRunner().invoke(app, list(arguments))
    assert result.exit_code == 2, result.output
    assert (f"Invalid value for '{arguments[-2]}'" in result.output
            and "needs a number, and the value given is empty (an unset variable in a script?)" in " ".join(result.output.split()))


@pytest.mark.parametrize("arguments", [("video", "run", "--eval-dir", "{tmp}", "--resume", ""),
                                       ("agent", "run", "--project", "{tmp}", "--resume", " ")])
def test_an_empty_resume_value_says_so_not_that_the_current_folder_has_no_checkpoint(tmp_path, monkeypatch, arguments):
    """`--resume "$CHECKPOINT"` with the variable unset read `<current folder>/manifest.json`: "could not read
    checkpoint manifest …/manifest.json: [Errno 2] No such file or directory"."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[tool.assay]\n")
    done = subprocess.run([sys.executable, "-m", "assay", *(item.format(tmp=tmp_path) for item in arguments)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**__import__("os").environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")})
    assert done.returncode == 2, done.stdout + done.stderr
    output = " ".join((done.stdout + done.stderr).split())
    assert ("needs a checkpoint id or folder, and the value given is empty (an unset variable in a script?)" in output
            and "manifest.json" not in output and "Traceback" not in output), output
