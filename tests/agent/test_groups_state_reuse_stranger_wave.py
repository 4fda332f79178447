"""A newcomer's pass over eval groups, sandbox reuse, shared state and the span mapper, following
docs/agent/shared-sandboxes.md, docs/agent/shared-state.md and the span-mapper section of docs/agent/traces.md as
written: a group listing its members as a folder (`["flow/"]`, as an experiment's `evals=` takes them) was told
"did you mean 'flow/login'?", as if one member were misspelt; a span mapper written `def tag(spans, ctx)` was
accepted and then failed in every turn, a warning at most; a mapper that tagged the spans in place and returned
nothing was "returned NoneType"; one that built its spans anew (no `span_id`) or set `assay.span.kind` by hand to
a kind that is none of the four tagged nothing and said nothing; a `sys.exit()` in a mapper ended the whole run
with exit 1, no result recorded and no word of why; the recover command printed for a dead owner's lease of a key
starting with a dash (`shared_state="-db"`) was refused by the command line as an unknown option.

Every run is a real `assay` process on a project written to `tmp_path`; the spans come from a child process
exporting with the OpenTelemetry SDK to the run's receiver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from traced_projects import write_project

PRIVATE_SPANS = Path(__file__).resolve().parent / "otel_apps" / "private_spans.py"


def assay(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", "agent", *args], capture_output=True, text=True, timeout=120,
                          cwd=project, env={**os.environ, "ASSAY_STORE": str(project.parent / "store" / "assay.db"),
                                            "ASSAY_SANDBOX_DIR": str(project.parent / "sandboxes")})


PASSING_EVAL = """
    from assay.agent import define_eval

    @define_eval
    async def test(t):
        await t.send("work")
        t.succeeded()
"""


@pytest.mark.parametrize("member", ["flow/", "flow/*", "flow"])
def test_a_group_member_written_as_a_folder_is_refused_with_the_member_ids_to_write(tmp_path, member):
    project = write_project(tmp_path / "shop", {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/e.py": """
            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            async def send(turn_input, ctx):
                return Turn([message("ok")])

            e = Experiment(agent=define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage))
        """,
        "evals/flow/login_eval.py": PASSING_EVAL,
        "evals/flow/checkout_eval.py": PASSING_EVAL,
        "evals/other_eval.py": PASSING_EVAL,
        "evals/flow_group.py": f"""
            from assay.agent import define_eval_group

            flow = define_eval_group([{member!r}])
        """,
    })

    for command in (["list"], ["run"]):
        refused = assay(project, *command)

        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "Traceback" not in refused.stderr
        group_file = project / "evals" / "flow_group.py"
        assert (f"Error: eval group 'flow' ({group_file}) names {member!r}, a folder of evals; "
                "a group names each member by its eval id, not by a prefix: "
                'define_eval_group(["flow/checkout", "flow/login"])') in refused.stderr, refused.stderr
        assert "did you mean" not in refused.stderr


def traced_project(root: Path, mapper_source: str) -> Path:
    """One experiment, `mapped`, whose agent (named 'mapped-agent') starts otel_apps/private_spans.py in each
    turn and has `mapper_source`'s `mapper` as its span mapper; one eval that passes."""
    experiment = f"""
        import asyncio, os, sys
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message
        from assay.agent.traces import heuristic_tag, tag_span

        {textwrap.indent(textwrap.dedent(mapper_source).strip(), " " * 8).lstrip()}

        async def send(turn_input, ctx):
            child = await asyncio.create_subprocess_exec(sys.executable, {str(PRIVATE_SPANS)!r}, "named",
                                                         env={{**os.environ, **ctx.telemetry.env}})
            assert await child.wait() == 0
            return Turn([message("done")])

        mapped = Experiment(agent=define_agent(name="mapped-agent", send=send, span_mapper=mapper,
                                               evidence_coverage=complete_evidence_coverage))
    """
    return write_project(root, {
        "pyproject.toml": "[tool.assay]\n[tool.assay.telemetry]\n",
        "experiments/mapped.py": experiment,
        "evals/one_eval.py": PASSING_EVAL,
    })


@pytest.mark.parametrize(("mapper", "signature"), [
    ("def mapper(spans, ctx):\n    return spans", "mapper(spans, ctx)"),
    ("def mapper():\n    return []", "mapper()"),
])
def test_a_span_mapper_that_cannot_be_called_with_the_list_alone_is_refused_where_the_agent_is_defined(
        tmp_path, mapper, signature):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")
    project = traced_project(tmp_path / "traced", mapper)

    refused = assay(project, "run")

    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert (f"{project / 'experiments' / 'mapped.py'} (line " in refused.stderr
            and f"define_agent('mapped-agent'): span_mapper is called with one argument, the turn's list of spans, but "
                f"{signature} cannot be called so; write it as def mapper(spans)" in refused.stderr), refused.stderr


TAGGED_IN_PLACE = """
def mapper(spans):
    for span in spans:
        span["attributes"]["assay.span.kind"] = "model"
"""
MADE_ANEW = """
def mapper(spans):
    return [{"name": span["name"], "attributes": {"assay.span.kind": "tool"}} for span in spans]
"""
KIND_BY_HAND = """
def mapper(spans):
    return [{**span, "attributes": {**span["attributes"], "assay.span.kind": "tols"}} for span in spans]
"""
EXITS = """
def mapper(spans):
    sys.exit(1)
"""


@pytest.mark.parametrize(("mapper", "why"), [
    (TAGGED_IN_PLACE, "TypeError: the span mapper returned None, not a list of spans; it must return the spans "
                      "(`return spans` after tagging them in place)"),
    (MADE_ANEW, "ValueError: the span mapper returned a span ('callLLM') with no span_id; return the spans it is "
                "given, tagged (tag_span(span, kind=…) keeps a span's id)"),
    (KIND_BY_HAND, "ValueError: the span mapper set assay.span.kind to 'tols' on span 'callLLM'; it must be one "
                   "of model, tool, subagent, other (did you mean 'tool'?)"),
    (EXITS, "SystemExit: 1"),
], ids=["tagged-in-place", "made-anew", "kind-by-hand", "sys-exit"])  # (callLLM: the first span to end, and exported)
def test_a_span_mapper_that_tags_nothing_is_said_once_and_the_run_goes_on(tmp_path, mapper, why):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")
    project = traced_project(tmp_path / "traced", mapper)

    ran = assay(project, "run")

    assert ran.returncode == 0, ran.stdout + ran.stderr  # spans decide nothing: the eval passed
    assert "Traceback" not in ran.stderr
    said = [line for line in (ran.stdout + ran.stderr).splitlines() if "telemetry-span-mapper-failed" in line]
    assert said == [f"warning [telemetry-span-mapper-failed]: the span mapper of agent 'mapped-agent' raised {why}, "
                    "so its spans are in the waterfall untagged, as they came (each such attempt's spans document "
                    "names it: span_mapper_error)"], ran.stdout + ran.stderr
    shown = assay(project, "show", "--json")
    (attempt,) = json.loads(shown.stdout)["attempts"]
    assert attempt["verdict"] == "passed"
    assert attempt["spans"]["span_mapper_error"] == why
    spans = [span for turn in attempt["spans"]["turns"] for span in turn["spans"]]
    assert len(spans) == 5 and not any("assay.span.kind" in span["attributes"] for span in spans)


def test_the_recover_command_a_dead_owner_is_met_with_works_for_a_key_that_starts_with_a_dash(tmp_path):
    """`shared_state="-db"`: the command the run printed, `recover -db --owner-token …`, was refused by the
    command line itself ("No such option: -d"), so the lease could not be released as the message said."""
    import shlex
    import signal
    import time

    project = write_project(tmp_path / "staging", {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/nightly.py": """
            import time
            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            def load_fixtures(ctx):
                time.sleep(60)  # killed in here, holding the lease

            async def send(turn_input, ctx):
                return Turn([message("done")])

            shop = define_agent(name="shop", send=send, evidence_coverage=complete_evidence_coverage)
            nightly = Experiment(agent=shop, shared_state="-db", setup=load_fixtures)
        """,
        "evals/orders_eval.py": PASSING_EVAL,
    })
    env = {**os.environ, "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    owner = subprocess.Popen([sys.executable, "-m", "assay", "agent", "run"], cwd=project, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list((project / ".assay" / "shared-state").glob("*.lease")) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)

    refused = assay(project, "run")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    printed = refused.stderr.strip().rsplit("release it with: ", 1)[1]
    assert printed.startswith("assay agent shared-state recover --owner-token "), printed
    assert printed.endswith(" -- -db"), printed

    released = assay(project, *shlex.split(printed)[2:])  # as a person pastes it
    assert released.returncode == 0, released.stdout + released.stderr
    assert released.stdout.startswith('released shared state "-db" (owner token ')
    assert assay(project, "shared-state", "list").stdout == "no shared-state lease is held in this project\n"
