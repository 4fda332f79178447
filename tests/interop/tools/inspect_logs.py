"""Writes one Inspect AI log of each format (`.eval`, `.json`) with Inspect's mock model, and what
Inspect itself says the run came to (`summary.json`). Run as a script: `python inspect_logs.py DIR`."""

import json
import sys
from pathlib import Path

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, match
from inspect_ai.solver import generate


def answer(messages, tools, tool_choice, config):
    text = messages[-1].text
    if "Atlantis" in text:
        raise RuntimeError("no such country")
    output = ModelOutput.from_content(model="mockllm", content="Paris" if "France" in text else "I do not know")
    # Usage given here: the mock model's own count would download a tokenizer.
    output.usage = ModelUsage(input_tokens=len(text.split()), output_tokens=3, total_tokens=len(text.split()) + 3)
    return output


task = Task(
    name="capitals",
    dataset=[
        Sample(input="Capital of France?", target="Paris", id="france"),
        # An input of chat messages: in the log's summaries each message is an object whose first key
        # is its id, as a summary's is (`},{"id":` inside a summary as well as between two).
        Sample(input=[ChatMessageSystem(content="Answer in one word."), ChatMessageUser(content="Capital of Peru?")],
               target="Lima", id="peru"),
        Sample(input="Capital of Atlantis?", target="?", id="atlantis"),
        Sample(input="Capital of Spain?", target="Madrid", id=3),
    ],
    solver=generate(), scorer=[includes(), match()], epochs=2,
)
folder = Path(sys.argv[1])
summary = {}
for log_format in ("eval", "json"):
    log = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=answer), log_dir=str(folder / log_format),
                       log_format=log_format, display="none", fail_on_error=False)[0]
    headline = log.results.scores[0]
    summary[log_format] = {
        "path": log.location, "status": log.status, "total_samples": log.results.total_samples,
        "completed_samples": log.results.completed_samples, "scorer": headline.name,
        "accuracy": headline.metrics["accuracy"].value, "version": log.eval.packages.get("inspect_ai"),
        "errors": sum(1 for sample in log.samples if sample.error), "model": log.eval.model,
    }
(folder / "summary.json").write_text(json.dumps(summary))
