"""Tier 2 of agent evals: OpenTelemetry spans from the app under test, per turn, for the waterfall.

The run's OTLP/HTTP receiver (`receiver`), decoding (`otlp`), attribution to turns (`attribution`),
`[tool.assay.telemetry]` (`config`), the run's and attempts' wiring (`tracing`) and the agent's span
mapper with its taggers (`mapping`: `tag_span`, `heuristic_tag`, `heuristic_spans`).
"""

from assay.agent.traces.mapping import heuristic_spans, heuristic_tag, tag_span

__all__ = ["heuristic_spans", "heuristic_tag", "tag_span"]
