"""Plain command-line values are coerced without pydantic, to exactly what typer's own adapter gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
        evals: list[str] = typer.Argument(None),
    ) -> None:
        pass

    return typer.main.get_command(app)


def _coerced(build: Any, param: Any, ctx: Any, value: Any) -> tuple[str, Any]:
    try:
        return "value", build(param.type_descriptor).coerce(value, param=param, ctx=ctx)
    except BadParameter as error:
        return "error", error.format_message()


@pytest.mark.parametrize(("name", "value"), [
    ("name", None), ("name", "x y"), ("name", ""), ("tags", None), ("tags", ("a", "b")), ("tags", ()),
    ("evals", None), ("evals", ("one", "two")), ("evals", "one"), ("project", None), ("project", "."),
    ("project", "a/b/"), ("project", ""), ("existing", "/nonexistent/x"), ("existing", "/tmp"),
    ("existing", __file__), ("count", "7"), ("count", "seven"), ("count", 4), ("share", "0.5"), ("share", "1e3"),
    ("alpha", 0.05), ("alpha", 1.0), ("alpha", 1), ("alpha", "0.01"), ("limit", 20), ("limit", True), ("limit", 2.0),
    ("limit", "3"), ("quiet", False), ("quiet", True), ("count", 4.0), ("share", 3),
])
def test_plain_values_coerce_as_typer_own_adapter_does(name, value):
    command = _command()
    ctx = command.make_context("body", [], resilient_parsing=True)
    param = next(param for param in command.params if param.name == name)
    ours, typer_own = _coerced(_plain_first, param, ctx, value), _coerced(build_runtime_param, param, ctx, value)
    assert ours == typer_own
    assert type(ours[1]) is type(typer_own[1])
