"""Tier 2 of agent evals: OpenTelemetry spans from the app under test, per turn, for the waterfall.

The run's OTLP/HTTP receiver (`receiver`), decoding (`otlp`), attribution to turns (`attribution`),
`[tool.assay.telemetry]` (`config`) and the run's and attempts' wiring (`tracing`).
"""
