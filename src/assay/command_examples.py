"""The examples at the end of every command's help (`assay video run -h`), kept in one table so they read as
one product. The video examples name the case `assay video init eval` writes (`lamp`) and `runs trend` a
group of the bundled agent example, so an example copied after `init` (or the demo) runs. Text only:
`assay.cli.app` puts each command's examples under its help, and tests/cli/test_help.py parses every
example with the command it shows, so an example cannot outlive an option."""

from __future__ import annotations

__all__ = ["EXAMPLES", "epilog"]

EXAMPLES: dict[str, tuple[str, ...]] = {
    "video run": (
        "assay video run --eval-dir eval --concurrency 8 --output-json report.json",
        'assay video run --adapter-command "node eval/adapter.mjs" --junit junit.xml',
        "assay video run --case lamp --from 1 --until 3 --verbose",
        "assay video run --resume run-20261201T120000Z-1a2b3c4d",
    ),
    "video validate": ("assay video validate --eval-dir eval", 'assay video validate --adapter-command "node eval/adapter.mjs"'),
    "video list-samples": ("assay video list-samples --eval-dir eval --case lamp",),
    "video export-frames": ("assay video export-frames --case lamp --at 1.5 --at 3",),
    "video seed": ("assay video seed --eval-dir eval --case lamp", "assay video seed --replace --keep-going"),
    "video review": ("assay video review --eval-dir eval --case lamp --time 1.5",),
    "video init": ("assay video init", "assay video init my-eval --adapter js"),
    "video store pull": ("assay video store pull --eval-dir eval",),
    "video store upload": ("assay video store upload recording.mp4 --store team-videos",),
    "video store prune-cache": ("assay video store prune-cache", "assay video store prune-cache --all"),
    "agent init": ("assay agent init", "assay agent init my-project"),
    "agent list": ("assay agent list --project my-project", "assay agent list --tag orders --json"),
    "agent run": (
        "assay agent run --project my-project",
        "assay agent run baseline orders/ --attempts 3 --junit junit.xml",
        "assay agent run --json > events.ndjson",
    ),
    "agent sandbox list": ("assay agent sandbox list", "assay agent sandbox list --orphans --json"),
    "agent sandbox diff": (
        "assay agent sandbox diff 3f9a", "assay agent sandbox diff 3f9a --window turn2 --path src/app.py",
        "assay agent sandbox diff 3f9a --window after",
    ),
    "agent sandbox enter": (
        "assay agent sandbox enter 3f9a", "assay agent sandbox enter 3f9a --leave-running",
        "echo 'python -m pytest -q' | assay agent sandbox enter 3f9a",
    ),
    "agent sandbox stop": ("assay agent sandbox stop 3f9a", "assay agent sandbox stop --all"),
    "agent sandbox prune": ("assay agent sandbox prune", "assay agent sandbox prune --force"),
    "agent shared-state list": ("assay agent shared-state list", "assay agent shared-state list --json"),
    "agent shared-state recover": (
        "assay agent shared-state recover staging-db --owner-token 3f9a0c1d2e4b5a69 --confirm-owner-terminated "
        "--confirm-remote-quiesced",
    ),
    "agent show": ("assay agent show", "assay agent show @1A2B3C4D5E6F --json"),
    "doc init": ("assay doc init --adapter-language python",),
    "doc scaffold-case": ("assay doc scaffold-case --case release-notes-v2",),
    "doc doctor": ("assay doc doctor --config evals/eval-kit.config.json",),
    "doc list-cases": ("assay doc list-cases",),
    "doc validate-fixtures": ("assay doc validate-fixtures",),
    "doc run-case": ("assay doc run-case --case release-notes-v1 --candidate out.md --junit junit.xml",),
    "doc generate": ("assay doc generate --case c --model m --provider openai --effort low --run-id gen-1",),
    "doc judge-coverage": ("assay doc judge-coverage --case c --candidate out.md --model m --provider openai --effort low",),
    "doc judge-pairwise": (
        "assay doc judge-pairwise --case c --candidate-a a.md --candidate-b b.md --model m --provider openai "
        "--effort low --seed 7 --run-id pair-1 --both-orders",
    ),
    "doc report": ("assay doc report --run-id report-1 --deterministic deterministic-2026-12-01T12-00-00-000Z",),
    "runs list": ("assay runs list --kind video --limit 5",),
    "runs show": ("assay runs show latest", "assay runs show latest~1 --json"),
    "runs compare": (
        "assay runs compare latest --fail-on-regression",
        "assay runs compare latest~1 latest --history 20 --group-depth 2 --json",
    ),
    "runs flaky": ("assay runs flaky", "assay runs flaky --kind agent --last 20 --json"),
    "runs trend": ("assay runs trend", "assay runs trend baseline/orders --kind agent --last 20"),
    "runs import": ("assay runs import junit.xml", "assay runs import logs/*.eval --format inspect"),
    "runs export": ("assay runs export latest --otlp http://127.0.0.1:4318",),
    "runs merge": ("assay runs merge records/* --output-json report.json",),
    "runs reindex": ("assay runs reindex",),
    "view": ("assay view", "assay view --export site/", "assay view --label --as alice"),
    "labels export": ("assay labels export -o golden.jsonl",),
    "labels import": ("assay labels import golden.jsonl",),
    "judge agreement": ("assay judge agreement", "assay judge agreement --judge gpt-4.1-mini --json"),
    "judge cache clear": ("assay judge cache clear",),
}


def epilog(command: str) -> str | None:
    """The examples of `command` (its path without `assay`: "runs compare") as help shows them, if it has any."""
    lines = EXAMPLES.get(command)
    # `\b` keeps click from rewrapping the block.
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines) if lines else None
