"""The agent-level span mapper (spec §6): an app whose spans follow no convention still gets model, tool and
subagent blocks in the waterfall, through the heuristic tagger or a mapper written for it; tagging only adds
attributes (a mapper that tries to change or drop anything cannot), a mapper that raises leaves the spans as
they came, and no mapper changes a verdict.

The runs are real: each turn starts otel_apps/private_spans.py, which exports with the OpenTelemetry SDK
configured by nothing but `ctx.telemetry.env`."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the OTLP/HTTP exporter is in the test extra")

from pathlib import Path  # noqa: E402

from assay.agent import complete_evidence_coverage, define_agent, define_sandbox_agent  # noqa: E402
from assay.agent.api import run  # noqa: E402
from assay.agent.traces import heuristic_spans, heuristic_tag, tag_span  # noqa: E402
from assay.errors import ConfigError  # noqa: E402
from assay.view.waterfall import waterfall_view  # noqa: E402
from traced_projects import Collected, write_project  # noqa: E402

PRIVATE_SPANS = Path(__file__).resolve().parent / "otel_apps" / "private_spans.py"
AGENT = f"""
    import asyncio, os, sys
    from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message
    from assay.agent.traces import heuristic_spans, heuristic_tag, tag_span

    def agent(name, names, span_mapper=None):
        async def send(turn_input, ctx):
            child = await asyncio.create_subprocess_exec(sys.executable, {str(PRIVATE_SPANS)!r}, names,
                                                         env={{**os.environ, **ctx.telemetry.env}})
            assert await child.wait() == 0
            return Turn([message("done")])
        return define_agent(name=name, send=send, evidence_coverage=complete_evidence_coverage, span_mapper=span_mapper)

    KINDS = {{"model": "model", "tool": "tool", "agent": "subagent"}}

    def by_step_type(spans):  # a mapper written for the app: its own attribute says what a span is
        return [tag_span(span, op="chat" if span["attributes"]["step.type"] == "model" else None,
                         kind=KINDS.get(span["attributes"]["step.type"])) for span in spans]

    def tampering(spans):  # tries to rename, retype, strip and drop: none of it may stick
        changed = [{{**span, "name": "renamed", "attributes": {{"step.type": "forged", "assay.span.kind": "tool"}}}}
                   for span in spans]
        return changed[:1]

    def raising(spans):
        raise RuntimeError("the mapper broke")

    def generated(spans):  # a generator expression, not a list: the spans all the same
        return (heuristic_tag(span) for span in spans)
"""
EXPERIMENTS = {
    "heuristic": "agent('heuristic', 'named', heuristic_spans)",
    "custom": "agent('custom', 'opaque', by_step_type)",
    "none": "agent('none', 'named')",
    "tampering": "agent('tampering', 'opaque', tampering)",
    "raising": "agent('raising', 'named', raising)",
    "generated": "agent('generated', 'named', generated)",
}


def _project(root: Path) -> Path:
    files = {
        "pyproject.toml": "[tool.assay]\nconcurrency = 2\n[tool.assay.telemetry]\n",
        **{f"experiments/{name}.py": AGENT + f"\n    {name} = Experiment(agent={call})\n"
           for name, call in EXPERIMENTS.items()},
        "evals/passes_eval.py": """
            from assay.agent import define_eval

            @define_eval()
            async def passes(t):
                await t.send("work")
                t.succeeded()
        """,
        "evals/fails_eval.py": """
            from assay.agent import define_eval, equals

            @define_eval()
            async def fails(t):
                await t.send("work")
                t.check("the reply", equals("another reply"))
        """,
    }
    return write_project(root, files)


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    collected = Collected()
    results = run(_project(tmp_path_factory.mktemp("mapped") / "project"), reporters=[collected], record=False)
    assert results.error is None
    return {(attempt.experiment_id, attempt.eval_id): attempt for attempt in results.attempts}


def _categories(attempt) -> dict[str, str]:
    [trace] = waterfall_view(attempt.to_json())["turns"]
    return {row["name"]: row["category"] for row in trace["rows"]}


def test_spans_that_follow_no_convention_are_all_other_without_a_mapper(mapped):
    assert set(_categories(mapped["none", "passes"]).values()) == {"other"}


def test_the_heuristic_tagger_gives_model_tool_and_subagent_blocks(mapped):
    assert _categories(mapped["heuristic", "passes"]) == {
        "handle request": "other", "callLLM": "model", "runTool search": "tool", "delegate researcher": "subagent",
        "cache.lookup": "other",
    }


def test_a_mapper_written_for_the_app_tags_by_its_own_attributes_and_only_adds(mapped):
    attempt = mapped["custom", "passes"]
    assert _categories(attempt) == {"step 0": "other", "step 1": "model", "step 2": "tool", "step 3": "subagent",
                                    "step 4": "other"}
    [turn] = attempt.spans["turns"]
    model = next(span for span in turn["spans"] if span["name"] == "step 1")
    assert model["attributes"] == {"step.type": "model", "app.note": "model work", "gen_ai.operation.name": "chat",
                                   "assay.span.kind": "model"}


def test_a_mapper_cannot_change_or_drop_what_the_app_sent(mapped):
    attempt = mapped["tampering", "passes"]
    [turn] = attempt.spans["turns"]
    assert sorted(span["name"] for span in turn["spans"]) == ["step 0", "step 1", "step 2", "step 3", "step 4"]
    first = turn["spans"][0]  # the one span the mapper returned (in the order it was given them)
    # Its one new key is added; the app's own keys keep their values; the other spans are as they came.
    assert first["attributes"] == {"step.type": first["attributes"]["step.type"], "app.note": first["attributes"]["app.note"],
                                   "assay.span.kind": "tool"}
    assert first["attributes"]["app.note"] == f"{first['attributes']['step.type']} work"
    assert all(span["attributes"]["step.type"] != "forged" for span in turn["spans"])
    assert [span for span in turn["spans"] if "assay.span.kind" in span["attributes"]] == [first]


def test_a_mapper_that_raises_leaves_the_spans_as_they_came_and_says_why(mapped):
    attempt = mapped["raising", "passes"]
    assert attempt.spans["span_mapper_error"] == "RuntimeError: the mapper broke"
    assert set(_categories(attempt).values()) == {"other"}
    assert attempt.error is None


def test_spans_and_their_mapper_never_change_a_verdict(mapped):
    for experiment in EXPERIMENTS:
        passes, fails = mapped[experiment, "passes"], mapped[experiment, "fails"]
        assert (passes.verdict, fails.verdict) == ("passed", "failed"), experiment
        assert passes.spans and len(passes.spans["turns"][0]["spans"]) == 5, experiment
        assert [a["status"] for a in fails.assertions] == [a["status"] for a in mapped["none", "fails"].assertions]


def test_tag_span_only_adds_and_checks_what_it_is_given():
    span = {"name": "x", "span_id": "1", "attributes": {"gen_ai.operation.name": "embeddings"}}
    tagged = tag_span(span, op="chat", kind="model")
    assert tagged["attributes"] == {"gen_ai.operation.name": "embeddings", "assay.span.kind": "model"}
    assert span["attributes"] == {"gen_ai.operation.name": "embeddings"}  # a new span: the given one is untouched
    with pytest.raises(ValueError, match="kind must be one of model, tool, subagent, other"):
        tag_span(span, kind="llm")
    # A span a convention already places keeps its place.
    assert "assay.span.kind" not in heuristic_tag({"name": "execute_tool chat", "attributes": {}})["attributes"]
    assert heuristic_spans([{"name": "askModel", "attributes": {}}])[0]["attributes"] == {"assay.span.kind": "model"}


def test_span_mapper_must_be_a_function_and_a_sandbox_agent_takes_one_too():
    async def send(turn_input, ctx):
        raise AssertionError("not sent")

    with pytest.raises(ConfigError, match=r"define_agent\('a'\): span_mapper must be a function spans -> spans"):
        define_agent(name="a", send=send, evidence_coverage=complete_evidence_coverage, span_mapper="heuristic")
    agent = define_sandbox_agent(name="b", send=send, evidence_coverage=complete_evidence_coverage,
                                 span_mapper=heuristic_spans)
    assert agent.span_mapper is heuristic_spans and agent.send.body is send


def test_a_mapper_may_return_any_iterable_of_spans(mapped):
    # A generator expression was refused as "not a list", and the whole turn went untagged.
    assert "span_mapper_error" not in mapped["generated", "passes"].spans
    assert _categories(mapped["generated", "passes"]) == _categories(mapped["heuristic", "passes"])


def test_a_misspelt_kind_is_named_with_the_kind_meant():
    with pytest.raises(ValueError, match=r"got 'modle' \(did you mean 'model'\?\)$"):
        tag_span({"name": "x", "attributes": {}}, kind="modle")


async def _tag_later(spans):
    return spans


class _AsyncMapper:
    async def __call__(self, spans):
        return spans


@pytest.mark.parametrize(("mapper", "said"), [
    (_tag_later, "span_mapper must be a plain function (def), not async def"),
    (_AsyncMapper(), "span_mapper must be a plain function (def), not async def"),
    (heuristic_tag, "span_mapper=heuristic_tag tags one span, and the mapper is given the turn's list of spans: "
                    "use span_mapper=heuristic_spans"),
    (tag_span, "span_mapper=tag_span tags one span"),
], ids=["async-def", "async-call", "heuristic_tag", "tag_span"])
def test_a_mapper_that_could_never_tag_a_span_is_refused_where_the_agent_is_defined(mapper, said):
    # Each was taken, then failed at every turn with a run warning (and, for an async one, Python's
    # "coroutine was never awaited" on stderr).
    async def send(turn_input, ctx):
        raise AssertionError("not sent")

    for define in (define_agent, define_sandbox_agent):
        with pytest.raises(ConfigError, match=r"\('a'\): " + re.escape(said)):
            define(name="a", send=send, evidence_coverage=complete_evidence_coverage, span_mapper=mapper)


def test_a_mapper_that_hands_back_an_awaitable_is_a_failure_without_pythons_warning(recwarn):
    from assay.agent.traces.mapping import map_document

    class Sneaky:  # a plain __call__ that returns a coroutine: no definition-time check can see it
        def __call__(self, spans):
            return _tag_later(spans)

    document = {"turns": [{"spans": [{"name": "callLLM", "span_id": "1", "attributes": {}}]}]}
    mapped_document = map_document(document, Sneaky())
    assert mapped_document["span_mapper_error"].startswith("TypeError: the span mapper returned an awaitable")
    assert mapped_document["turns"] == document["turns"]
    assert not [warning for warning in recwarn if "never awaited" in str(warning.message)]
