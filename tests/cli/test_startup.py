"""`assay --version` starts without importing any kind, and a mistyped group is still suggested."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_version_imports_no_kind_and_no_command_group():
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "assay", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("assay "), done
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    heavy = sorted(name for name in imported if name.split(".")[:2] in (
        ["assay", "agent"], ["assay", "video"], ["assay", "doc"]) or name in ("aiohttp", "rich", "yaml", "numpy", "av"))
    assert heavy == []
    groups = {f"assay.cli.{name}" for name in ("video", "agent", "doc", "runs", "labels", "judge")}
    assert sorted(groups & imported) == []


def test_a_mistyped_group_is_suggested():
    done = subprocess.run([sys.executable, "-m", "assay", "vido"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "No such command 'vido'. Did you mean 'video'?" in done.stderr, done


EXPERIMENT = """
from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    return Turn(events=[message("hello")])

base = Experiment(agent=define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage))
"""


def _one_eval_project(folder):
    (folder / "experiments").mkdir()
    (folder / "experiments" / "base.py").write_text(EXPERIMENT)
    (folder / "evals").mkdir()
    (folder / "evals" / "one_eval.py").write_text("from assay.agent import define_eval\n\n"
                                                  "async def test(t):\n    await t.send('hi')\n\n"
                                                  "one = define_eval(test)\n")
    return folder


def _imported_by(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "assay", *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}


@pytest.mark.parametrize("numbers", [(), ("--concurrency", "8", "--attempts", "1", "--timeout", "30.5")])
def test_a_local_one_eval_agent_run_imports_only_what_it_needs(tmp_path, numbers):
    """Numbers typed on the command line included (`--concurrency 8` imported pydantic: +0.07 s). Ray's worker module, pydantic (which typer uses to coerce options), PyYAML, the JUnit reporter, the
    email package (an HTTP date in Retry-After), rich's emoji codes (no `:code:` printed), the sandbox
    stack (providers, lifecycle, layers, change ledger, `tarfile`), the assertion and matcher classes, the
    judge preflight and the OpenTelemetry exporter are not needed by a local run of a project without YAML,
    --junit, a sandbox, an assertion, a judge or an export endpoint."""
    command = [sys.executable, "-X", "importtime", "-m", "assay", "agent", "run", "--project", str(_one_eval_project(tmp_path)),
               *numbers]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "1 passed" in done.stderr + done.stdout, done
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    unneeded = ("pydantic", "ray", "assay.agent.remote_worker", "assay.core.ray_executor", "yaml",
                "assay.core.report.junit", "email.utils", "rich.markdown", "rich._emoji_codes",
                "assay.agent.sandbox.local", "assay.agent.sandbox.custom", "assay.adapters.process_tree", "ctypes",
                "assay.agent.sandbox.lifecycle", "assay.agent.sandbox.layers", "assay.agent.sandbox.ledger",
                "assay.agent.sandbox.handle", "assay.agent.sandbox.agent", "tarfile", "assay.agent.assertions",
                "assay.agent.matchers", "assay.agent.eval_sandbox", "assay.agent.judge_preflight",
                "assay.core.interop.otlp_export")
    assert sorted(imported & set(unneeded)) == []


def test_agent_list_imports_only_the_authoring_names_the_project_uses(tmp_path):
    """`from assay.agent import define_eval` imports `assay.agent.definition`, not the whole authoring surface:
    listing evals runs none, so it needs no `t`, assertion, judge or sandbox."""
    imported = _imported_by("agent", "list", "--project", str(_one_eval_project(tmp_path)))
    assert "assay.agent.definition" in imported
    unneeded = {"assay.agent.authoring", "assay.agent.assertions", "assay.agent.judging", "assay.agent.matchers",
                "assay.agent.sandbox.agent", "assay.agent.sandbox.layers", "assay.agent.sandbox.local", "tarfile"}
    assert sorted(imported & unneeded) == []


# Every name of a lazily filled package (`core/lazy_names.py`) is the object its module defines, listed by `dir`.
_EVERY_NAME_IS_ITS_MODULES = (
    "import importlib\n"
    "for package in ({packages}):\n"
    "    for name in package.__all__:\n"
    "        value = getattr(package, name)\n"
    "        home = importlib.import_module(getattr(value, '__module__', None) or package.__name__)\n"
    "        assert name in dir(package) and (getattr(home, name, value) is value), (package.__name__, name)\n"
)


def test_every_public_agent_name_is_imported_on_first_use_as_the_object_its_module_defines():
    script = (
        "import importlib, sys\n"
        "import assay.agent, assay.agent.sandbox\n"
        "print(sorted(name for name in sys.modules if name.startswith('assay.agent.') and name != 'assay.agent.sandbox'))\n"
        + _EVERY_NAME_IS_ITS_MODULES.format(packages="assay.agent, assay.agent.sandbox") +
        "from assay.agent import define_eval, docker_sandbox, local_sandbox, Sandbox\n"
        "from assay.agent.sandbox import SandboxError\n"
        "assert Sandbox is assay.agent.sandbox.Sandbox is assay.agent.sandbox.handle.Sandbox\n"
        "try:\n    assay.agent.no_such_name\nexcept AttributeError as error:\n    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "module 'assay.agent' has no attribute 'no_such_name'"]


def test_runs_compare_with_default_numbers_imports_no_pydantic(tmp_path):
    """Options left at a number or flag default (`--alpha 0.05`, `--limit 20`) are taken as they are."""
    from assay.core.record import RunManifest, UnitResult
    from assay.core.results_store import publish_run

    store = tmp_path / "assay.db"
    units = [UnitResult(f"eval/unit-{index}", "passed") for index in range(5)]
    publish_run(RunManifest("agent-before", "agent", "2026-01-01T00:00:00Z"), units, database=store)
    publish_run(RunManifest("agent-after", "agent", "2026-01-02T00:00:00Z"), units, database=store)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "assay", "runs", "compare", "agent-before", "agent-after"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env={**os.environ, "ASSAY_STORE": str(store)})
    assert done.returncode == 0, done.stdout + done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "pydantic" not in imported


@pytest.mark.parametrize("package", ["src/assay/agent/__init__.py", "src/assay/agent/sandbox/__init__.py",
                                     "src/assay/agent/adapters/__init__.py", "src/assay/judge/__init__.py"])
def test_a_lazy_package_names_each_public_name_alike_for_type_checkers_at_run_time_and_in_all(package):
    # Its names are written three times: imports type checkers read, the run-time map, and `__all__` (which
    # type checkers need as a literal). A name missing from one is invisible to that reader.
    import ast

    tree = ast.parse((Path(__file__).resolve().parents[2] / package).read_text(encoding="utf-8"))
    checked = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.If)
               and getattr(node.test, "id", None) == "TYPE_CHECKING"
               for statement in node.body for alias in statement.names}
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_names")
    mapped = {name for names in ast.literal_eval(call.args[1]).values() for name in names}
    exported = next(ast.literal_eval(node.value) for node in tree.body
                    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "__all__")
    assert len(exported) == len(set(exported))
    assert checked == mapped == set(exported), (checked ^ mapped, mapped ^ set(exported))


def test_an_endpoint_agent_imports_no_schema_checks_and_no_other_adapter():
    """`openai_chat_agent` talks through `judge.openai_http`; importing that imported all of `assay.judge`
    (jsonschema with it, ~20 ms) and `assay.agent.adapters` imported the Codex and process adapters (ctypes)."""
    script = (
        "import sys\n"
        "from assay.agent.adapters import openai_chat_agent\n"
        "from assay.agent.runner import AgentRun\n"
        "import assay.judge.openai_http\n"
        "openai_chat_agent(base_url='http://127.0.0.1:9/v1', api_key='x', model='m')\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('jsonschema', 'openai', 'ctypes')"
        " or name.startswith(('assay.agent.adapters.codex', 'assay.agent.adapters.process', 'assay.judge.validation',"
        " 'assay.judge.client'))))\n"
        "import assay.judge, assay.agent.adapters\n"
        + _EVERY_NAME_IS_ITS_MODULES.format(packages="assay.judge, assay.agent.adapters") +
        "from assay.judge import JudgeError, schema_errors\n"
        "assert JudgeError is sys.modules['assay.judge.errors'].JudgeError\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]"]
