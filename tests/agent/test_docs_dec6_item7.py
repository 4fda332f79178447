"""A stranger's pass over eval groups, sandbox reuse, shared state, the span mapper and the assertion handle, from
docs/agent/shared-sandboxes.md, shared-state.md, traces.md, assertions.md, projects.md, evals.md and usage.md as
written.

- shared-sandboxes.md: "JUnit gives each member's test case an `eval_group` property"; a member carried from an
  earlier run (the usual second run of a project) lost it: its JUnit case had no properties at all.
- shared-sandboxes.md: a member that never ran (its experiment's setup failed, or Ctrl-C came first) lost it too: no group
  line in `assay agent show`, no property in JUnit.
- assertions.md: `.label(text)` is a display label and `.group(title)` shows an assertion under a heading, but
  `assay agent show @LOCATOR` printed neither (only the call as written).
- traces.md: a span mapper's `tag_span(span, knd=...)` failed with Python's words alone (no keyword meant); the
  page's child-process agents left their app running after a send cut short by a timeout or Ctrl-C.
- projects.md: `[tool.asay]` beside a `[tool.assay.pricing]` spelt right had its settings dropped in silence.
- evals.md: `t.log(5)` followed by a timeout, or `t.diagnostic(..., data=5)`, ended the whole run with an internal
  error (exit 2) instead of erroring one attempt or showing the line.
- usage.md: a turn's `Usage(input_tokens="5")` ended the whole run with an internal error (exit 2).
- projects.md: an `evals = [test, 5]` export was refused as "not list", naming no item.
- traces.md: `--telemetry-host` was said to leave apps told 127.0.0.1; they are told the address it listens on.

Every run is a real `assay` process on a project written to `tmp_path`, with its own results store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def assay(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", "agent", *args], capture_output=True, text=True, timeout=120,
                          cwd=project, env={**os.environ, "ASSAY_STORE": str(project.parent / "store" / "assay.db"),
                                            "ASSAY_SANDBOX_DIR": str(project.parent / "sandboxes"), "NO_COLOR": "1"})


def _write(project: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)


def _copy(example: str, target: Path) -> Path:
    shutil.copytree(DOCS / "examples" / example, target, ignore=shutil.ignore_patterns(".assay", "__pycache__"))
    return target


def _junit_groups(path: Path) -> dict[str, str | None]:
    cases = ElementTree.parse(path).getroot().iter("testcase")
    found = {}
    for case in cases:
        prop = case.find("properties/property[@name='eval_group']")
        found[case.get("name")] = prop.get("value") if prop is not None else None
    return found


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_a_group_member_carried_from_an_earlier_run_keeps_its_eval_group_property_in_junit(tmp_path):
    project = _copy("shared_sandbox", tmp_path / "shop")
    first = assay(project, "run", "grouped", "--junit", str(tmp_path / "first.xml"))
    assert first.returncode == 0, first.stdout + first.stderr
    assert _junit_groups(tmp_path / "first.xml") == {"flow/checkout [note-taker]": "flow",
                                                     "flow/login [note-taker]": "flow"}
    second = assay(project, "run", "grouped", "--junit", str(tmp_path / "second.xml"))
    assert second.returncode == 0, second.stdout + second.stderr
    assert "2 of 2 attempt(s) carried" in second.stdout
    assert _junit_groups(tmp_path / "second.xml") == {"flow/checkout [note-taker]": "flow",
                                                      "flow/login [note-taker]": "flow"}


def test_show_prints_an_assertions_label_and_lists_grouped_ones_under_their_heading(tmp_path):
    project = _copy("agent", tmp_path / "guide")
    ran = assay(project, "run", "guide", "handles/")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    attempts = json.loads(assay(project, "show", "--json").stdout)["attempts"]
    [handles] = [attempt for attempt in attempts if attempt["eval_id"] == "handles/handles"]
    shown = assay(project, "show", handles["locator"])
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assertions = lines[lines.index("Assertions:") + 1:lines.index("Conversation:")]
    assert assertions[0] == "  matched     the turn completed (succeeded()) [t]"
    # the one in `.group("reply")` comes last, under its heading, indented beneath it
    assert assertions[-2:] == ["  reply:", '    matched     check(includes("°C")) [t]']
    assert sum("includes(\"°C\")" in line for line in assertions) == 1


def test_a_span_mapper_that_misspells_a_keyword_of_tag_span_is_told_the_keyword_meant():
    # traces.md: a mapper that raises leaves the spans as they came, and the run's warning names the error; Python
    # 3.11 names the misspelt keyword but not the one meant, as assay does for its other callables.
    from assay.agent.traces import tag_span
    from assay.agent.traces.mapping import map_document

    def tag(spans):
        return [tag_span(span, knd="tool") for span in spans]

    span = {"span_id": "01", "trace_id": "aa", "name": "fetch", "attributes": {}}
    mapped = map_document({"turns": [{"spans": [span]}]}, tag)
    assert mapped["turns"][0]["spans"] == [span]
    assert mapped["span_mapper_error"] == (
        "TypeError: tag_span() got an unexpected keyword argument 'knd'; did you mean 'kind'?")


def test_a_misspelt_tool_assay_header_is_named_even_beside_a_tool_assay_pricing_table(tmp_path):
    # projects.md: `[tool.asay]` is an error rather than settings dropped in silence. With its `[tool.assay.pricing]`
    # spelt right below it (the page's own example, with one letter of the header lost), `concurrency` and
    # `timeout` were dropped and the run went on with the defaults.
    from assay.agent.project import load_project_config
    from assay.errors import ConfigError

    (tmp_path / "pyproject.toml").write_text(
        '[tool.asay]\nname = "support-bot"\nconcurrency = 8\ntimeout = 120\n\n'
        '[tool.assay.pricing]\n"gpt-4.1-mini" = { input = 0.4, output = 1.6, cache_read = 0.1 }\n')
    with pytest.raises(ConfigError) as refused:
        load_project_config(tmp_path)
    assert str(refused.value) == (f"{tmp_path / 'pyproject.toml'}: [tool.asay] is not read by assay; did you mean "
                                  "[tool.assay]? (rename the table so its settings apply)")
    (tmp_path / "pyproject.toml").write_text(  # the tables of other tools are theirs, beside [tool.assay] too
        '[tool.assay]\ntimeout = 120\n\n[tool.ruff]\nline-length = 100\n\n[tool.pytest.ini_options]\nx = 1\n')
    assert load_project_config(tmp_path).timeout == 120


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie that nobody reaped yet has ended too
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1] != "Z"
    except OSError:
        return True


@pytest.mark.parametrize("experiment", ["child_process", "private_spans"])
def test_the_pages_child_process_agents_stop_their_app_when_the_send_is_cut_short(tmp_path, experiment):
    # traces.md's agents run the app as a child per turn; a send cut short by a timeout (or Ctrl-C sent to assay
    # alone, as CI does) left the child running after the run had ended, exporting to a receiver that was gone.
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the page's examples use the otel extra")
    import re

    blocks = dict(re.findall(r'^```\w+ title="([^"]+)"\n(.*?)^```$', (DOCS / "agent" / "traces.md").read_text(),
                             re.MULTILINE | re.DOTALL))
    project = tmp_path / "project"
    app = "app.py" if experiment == "child_process" else "private_app.py"
    for name in ("pyproject.toml", "evals/hello_eval.py", f"experiments/{experiment}.py", app):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        text = blocks[name]
        if name == app:  # the app takes longer than the attempt may: it says its pid, then works on
            text = text.replace("print(answer)", "import time\n"
                                f"open({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid()))\n"
                                "time.sleep(60)\nprint(answer)")
        if name.startswith("experiments/"):
            assert text.rstrip().endswith("evidence_coverage=complete_evidence_coverage))")
            text = text.rstrip()[:-1] + ", timeout=2)\n"
        (project / name).write_text(text)
    # Output to files, not pipes: a child left running holds a pipe open, and the run would seem to last as long.
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        ran = subprocess.run([sys.executable, "-m", "assay", "agent", "run"], stdout=out, stderr=err, timeout=120,
                             cwd=project, env={**os.environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    said = (tmp_path / "out.txt").read_text() + (tmp_path / "err.txt").read_text()
    assert ran.returncode == 1, said
    assert "attempt timed out after 2s" in said
    pid = int((tmp_path / "pid").read_text())
    try:
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)  # the app this test started


def test_group_members_that_never_ran_still_name_their_group(tmp_path):
    # shared-sandboxes.md: `assay agent show @LOCATOR` prints the group and JUnit gives each member's case an
    # `eval_group` property. A member errored before it started (its experiment's setup failed) or left unstarted by
    # Ctrl-C was recorded without its group: no group line in `show`, no property in JUnit.
    project = tmp_path / "shop"
    files = {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/e.py": (
            "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n\n"
            "async def send(turn_input, ctx):\n    return Turn([message('ok')])\n\n\n"
            "def setup(ctx):\n    raise RuntimeError('the staging database is down')\n\n\n"
            "e = Experiment(agent=define_agent(name='a', send=send, evidence_coverage=complete_evidence_coverage),\n"
            "               setup=setup)\n"),
        "evals/flow/login_eval.py": ("from assay.agent import define_eval\n\n\n@define_eval\nasync def test(t):\n"
                                     "    await t.send('hi')\n    t.succeeded()\n"),
        "evals/flow_group.py": "from assay.agent import define_eval_group\n\nflow = define_eval_group(['flow/login'])\n",
    }
    _write(project, files)
    ran = assay(project, "run", "--junit", str(tmp_path / "junit.xml"))
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "experiment e setup failed: RuntimeError: the staging database is down" in ran.stdout
    assert _junit_groups(tmp_path / "junit.xml") == {"flow/login [a]": "flow"}
    shown = assay(project, "show", "e/flow/login#1")
    assert "eval group flow (definition " in shown.stdout, shown.stdout


def test_a_log_line_that_is_not_text_is_shown_as_printed_when_the_attempt_times_out(tmp_path):
    # evals.md: `t.log(message)`. Given a number, it was kept as it came; when the attempt then timed out, the
    # recent lines were joined into its error and the whole run ended with "internal error: TypeError" (exit 2).
    project = tmp_path / "shop"
    files = {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/e.py": (
            "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n\n"
            "async def send(turn_input, ctx):\n    ctx.progress(['looking', 'up'])\n    return Turn([message('ok')])\n\n\n"
            "e = Experiment(agent=define_agent(name='a', send=send, evidence_coverage=complete_evidence_coverage))\n"),
        "evals/slow_eval.py": ("import asyncio\n\nfrom assay.agent import define_eval\n\n\n@define_eval\n"
                               "async def test(t):\n    await t.send('hi')\n    t.log(5)\n"
                               "    await asyncio.sleep(30)\n"),
    }
    _write(project, files)
    ran = assay(project, "run", "--timeout", "1")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "timeout: attempt timed out after 1s (last progress: ['looking', 'up'] | 5)" in ran.stdout, ran.stdout
    assert "internal error" not in ran.stdout + ran.stderr


def test_a_diagnostic_whose_data_is_not_a_mapping_errors_its_attempt_not_the_run(tmp_path):
    # evals.md: `t.diagnostic(code, level, message, data)`. A `data=5` was taken as it came, and writing the
    # attempt ended the whole run with "internal error: TypeError: 'int' object is not iterable" (exit 2).
    project = tmp_path / "shop"
    files = {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/e.py": (
            "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n\n"
            "async def send(turn_input, ctx):\n    return Turn([message('ok')])\n\n\n"
            "e = Experiment(agent=define_agent(name='a', send=send, evidence_coverage=complete_evidence_coverage))\n"),
        "evals/noted_eval.py": ("from assay.agent import define_eval\n\n\n@define_eval\n"
                                "async def test(t):\n    await t.send('hi')\n"
                                "    t.diagnostic('slow-tool', 'warning', 'the lookup took 3 s', data=5)\n"),
        "evals/fine_eval.py": ("from assay.agent import define_eval\n\n\n@define_eval\n"
                               "async def test(t):\n    await t.send('hi')\n"
                               "    t.diagnostic('slow-tool', 'warning', 3.5, data={'seconds': 3.5})\n"
                               "    t.succeeded()\n"),
    }
    _write(project, files)
    ran = assay(project, "run")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ("eval-exception: TypeError: diagnostic data must be a mapping (a dict) or None; got int 5 "
            f"({project / 'evals' / 'noted_eval.py'}:7)") in ran.stdout, ran.stdout
    assert "1 passed · 0 failed · 1 errored" in ran.stderr
    shown = assay(project, "show", "e/fine#1")
    assert "warning [slow-tool]: 3.5" in shown.stdout, shown.stdout


@pytest.mark.parametrize(("bind", "told"), [("0.0.0.0", "127.0.0.1"), ("127.0.0.2", "127.0.0.2")])
def test_the_endpoint_apps_are_told_under_telemetry_host_is_as_the_page_says(tmp_path, bind, told):
    # traces.md said apps are "still told 127.0.0.1" under `--telemetry-host`; they are told the address the
    # receiver listens on, 127.0.0.1 only for an address that listens everywhere.
    page = " ".join((DOCS / "agent" / "traces.md").read_text().split())
    assert ("Apps are told the address it listens on (`127.0.0.1` for `0.0.0.0` or `::`, which listen everywhere), "
            "unless `host` says otherwise.") in page
    project = tmp_path / "shop"
    files = {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/e.py": (
            "from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message\n\n\n"
            "async def send(turn_input, ctx):\n    return Turn([message(ctx.telemetry.endpoint)])\n\n\n"
            "e = Experiment(agent=define_agent(name='a', send=send, evidence_coverage=complete_evidence_coverage))\n"),
        "evals/hello_eval.py": ("from assay.agent import define_eval, pattern\n\n\n@define_eval\n"
                                f"async def test(t):\n    await t.send('hi')\n"
                                f"    t.check(t.reply, pattern(r'^http://{told}:[0-9]+/v1/traces$'))\n"),
    }
    _write(project, files)
    ran = assay(project, "run", "--telemetry-host", bind)
    assert ran.returncode == 0, ran.stdout + ran.stderr


@pytest.mark.parametrize(("export", "said"), [
    ("[test, 5]", "not a list whose evals[1] is int 5"),
    ("{'login': test, 'checkout': None}", "not a dict whose evals['checkout'] is NoneType None"),
    ("[]", "not an empty list"),
])
def test_an_evals_export_with_an_item_that_is_no_eval_names_the_item(tmp_path, export, said):
    # projects.md: a file names the evals to run in `evals = [...]` or `evals = {...}`. One item that was not an
    # eval (a typo, a helper's None) was refused as "… not list", leaving the author to find which.
    from assay.agent.discovery import discover_evals
    from assay.errors import ConfigError

    (tmp_path / "evals").mkdir()
    path = tmp_path / "evals" / "flow_eval.py"
    path.write_text("from assay.agent import define_eval\n\n\n@define_eval\nasync def test(t):\n    await t.send('hi')\n\n\n"
                    f"evals = {export}\n")
    with pytest.raises(ConfigError) as refused:
        discover_evals(tmp_path)
    assert str(refused.value) == (f"{path}: `evals` must be an eval or a non-empty list or dict of evals (made with "
                                  f"@define_eval), {said}")


@pytest.mark.parametrize(("usage", "said"), [
    ('Usage(input_tokens="5", output_tokens=2)',
     "turn usage input_tokens must be a whole number of tokens (>= 0), like input_tokens=512; got '5'"),
    ("Usage(input_tokens=-5, output_tokens=2)",
     "turn usage input_tokens must be a whole number of tokens (>= 0), like input_tokens=512; got -5"),
    ('Usage(input_tokens=5, output_tokens=2, cost_usd="0.1")',
     "turn usage cost_usd must be a non-negative number of USD, like cost_usd=0.0042; got '0.1'"),
])
def test_a_turns_usage_with_counts_that_are_not_counts_errors_the_attempt_not_the_run(tmp_path, usage, said):
    # usage.md: each turn's `Usage(input_tokens, output_tokens, …)` is summed. Built with a count as text, it was
    # summed anyway and ended the whole run with "internal error: TypeError: can only concatenate str" (exit 2); a
    # negative count went into `max_tokens` as it came. A mapping was already checked so; a Usage now is too.
    project = tmp_path / "shop"
    files = {
        "pyproject.toml": '[tool.assay]\n\n[tool.assay.pricing]\n"m1" = { input = 1.0, output = 4.0 }\n',
        "experiments/e.py": (
            "from assay.agent import Experiment, Turn, Usage, complete_evidence_coverage, define_agent, message\n\n\n"
            f"async def send(turn_input, ctx):\n    return Turn([message('ok')], usage={usage})\n\n\n"
            "e = Experiment(agent=define_agent(name='a', send=send, evidence_coverage=complete_evidence_coverage),\n"
            "               model='m1')\n"),
        "evals/hi_eval.py": ("from assay.agent import define_eval\n\n\n@define_eval\n"
                             "async def test(t):\n    await t.send('hi')\n    t.max_tokens(100)\n    t.max_cost(1.0)\n"),
    }
    _write(project, files)
    ran = assay(project, "run")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert f"agent-send-failed: agent 'a' returned an invalid turn: {said}" in ran.stdout, ran.stdout
