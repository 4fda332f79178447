"""A span mapper that raises must be said in the run, not only in
the spans document (which nothing shows), or its author sees an untagged waterfall with no reason."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")

from pathlib import Path  # noqa: E402

from assay.agent.api import run  # noqa: E402
from traced_projects import Collected, write_project  # noqa: E402

PRIVATE_SPANS = Path(__file__).resolve().parent / "otel_apps" / "private_spans.py"
EXPERIMENT = f"""
    import asyncio, os, sys
    from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message
    from assay.agent.traces import tag_span

    def typo(spans):  # a kind misspelt: tag_span raises
        return [tag_span(span, kind="modle") for span in spans]

    async def send(turn_input, ctx):
        child = await asyncio.create_subprocess_exec(sys.executable, {str(PRIVATE_SPANS)!r}, "named",
                                                     env={{**os.environ, **ctx.telemetry.env}})
        assert await child.wait() == 0
        return Turn([message("done")])

    mapped = Experiment(agent=define_agent(name="typo-mapper", send=send, span_mapper=typo,
                                           evidence_coverage=complete_evidence_coverage))
"""


def test_a_span_mapper_that_raises_is_a_run_warning_naming_the_agent_and_the_error(tmp_path):
    project = write_project(tmp_path / "project", {
        "pyproject.toml": "[tool.assay]\n[tool.assay.telemetry]\n",
        "experiments/mapped.py": EXPERIMENT,
        "evals/one_eval.py": """
            from assay.agent import define_eval

            def make():
                async def test(t):
                    await t.send("work")
                    t.succeeded()
                return define_eval(test)

            evals = {"a": make(), "b": make()}
        """,
    })
    collected = Collected()
    results = run(project, reporters=[collected], record=False)
    assert results.error is None
    assert [attempt.verdict for attempt in results.attempts] == ["passed", "passed"]  # spans decide nothing
    assert all("modle" in attempt.spans["span_mapper_error"] for attempt in results.attempts)
    said = [event for event in collected.warnings if event.code == "telemetry-span-mapper-failed"]
    assert len(said) == 1  # once a run, however many attempts
    assert "'typo-mapper'" in said[0].message and "got 'modle'" in said[0].message
