"""A fake model for doc tests: reads the rendered prompt and answers with valid judge JSON.

Tests bend the answer (fences, prose, wrong fields, wrong echo) through `tweak`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from servers.fake_openai import RecordedRequest, Reply, chat_reply


def judge_env(server: Any) -> dict[str, str]:
    """The judge variables a model command reads, naming the fake server `server` (with a key, as a hosted one wants)."""
    return {"ASSAY_JUDGE_BASE_URL": server.base_url, "ASSAY_JUDGE_API_KEY": "test-key"}


def _field(prompt: str, name: str) -> str:
    match = re.search(rf"^- {re.escape(name)}: (.*)$", prompt, flags=re.MULTILINE)
    assert match, f"prompt has no {name} line"
    return match.group(1).strip()


def pointwise_answer(prompt: str, verdict: str = "covered") -> dict[str, Any]:
    items_text = prompt.split("## Expected items (JSON)", 1)[1].split("## Candidate", 1)[0]
    items = json.loads(items_text)
    return {
        **{name: _field(prompt, name) for name in ("case_id", "model", "provider", "rubric_version", "prompt_version")},
        "items": [
            {
                "item_id": item["item_id"],
                "kind": "judge-made-up-kind",  # canonicalisation restores the expected kind
                "verdict": verdict,
                "severity": item["severity"],
                "confidence": "high",
                "candidate_evidence": ["We ship the importer"] if verdict != "missing" else [],
                "source_refs": item["source_refs"],
                "explanation": f"{item['item_id']} judged {verdict}",
            }
            for item in items
        ],
    }


def pairwise_answer(prompt: str, pick: str = "first-good") -> dict[str, Any]:
    """`pick`: a displayed slot (candidate_a/candidate_b), tie, or `first-good`: the slot showing 'ship the importer'."""
    order = [part.strip() for part in _field(prompt, "displayed candidate order").split(",")]
    if pick == "first-good":
        shown_a = prompt.split("<candidate_a>", 1)[1].split("</candidate_a>", 1)[0]
        pick = "candidate_a" if "ship the importer" in shown_a else "candidate_b"
    seed_text = _field(prompt, "randomization seed")
    return {
        **{name: _field(prompt, name) for name in ("case_id", "model", "provider", "rubric_version", "prompt_version")},
        "candidate_order": order,
        "randomization": {
            "method": _field(prompt, "randomization method"),
            "seed": seed_text,
            "original_order": [part.strip() for part in _field(prompt, "original order").split(",")],
            "candidate_order": order,
        },
        "winner": pick,
        "criteria": ["Coverage"],
        "evidence": ["ship the importer"],
        "explanation": "the displayed winner keeps the goal",
        "confidence": "medium",
    }


def judge_responder(
    kind: str, tweak: Callable[[dict[str, Any]], Any] | None = None, **options: Any
) -> Callable[[RecordedRequest], Reply]:
    """A responder for `fake_openai.respond_with`; `tweak(answer)` may edit it or return replacement text."""

    def respond(request: RecordedRequest) -> Reply:
        prompt = request.prompt
        answer = pointwise_answer(prompt, **options) if kind == "pointwise" else pairwise_answer(prompt, **options)
        if tweak is None:
            return chat_reply(json.dumps(answer))
        replaced = tweak(answer)
        return chat_reply(replaced if isinstance(replaced, str) else json.dumps(answer))

    return respond
