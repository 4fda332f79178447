"""What every model-backed doc command shares: model settings, rendering, judge calls and their records.

Each call is kept (variables, request body, raw response) so a bundle shows exactly what the model saw.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from assay.doc.artifacts import RunBundle
from assay.errors import AdapterError, ConfigError, UsageError
from assay.judge.cache import CallCache
from assay.judge.templates import render_template

__all__ = [
    "EFFORTS",
    "JudgeCallLog",
    "ModelSettings",
    "check_effort",
    "check_vars",
    "normalize_provider",
    "public_vars",
]

EFFORTS = ("low", "medium", "high")
REQUEST_FILE = "judge-request.json"
RESPONSE_FILE = "judge-response.json"


def normalize_provider(value: str | None) -> str:
    """`openai` (the default) or `openai:<label>`; the endpoint is always OpenAI-compatible."""
    if not value or value == "openai":
        return "openai"
    if value.startswith("openai:") and len(value) > len("openai:"):
        return value
    raise UsageError(f"unsupported provider {value}; use openai or openai:<label>")


def check_effort(value: str) -> str:
    # eval-kit documented these three values but never checked them.
    if value not in EFFORTS:
        raise UsageError(f"--effort must be one of {', '.join(EFFORTS)}, got {value}")
    return value


@dataclass(frozen=True)
class ModelSettings:
    model: str
    provider: str  # normalised
    effort: str
    endpoint: Any  # assay.judge.client.JudgeEndpoint (imported lazily with the SDK)
    cache: CallCache | None = None

    @property
    def model_provider(self) -> str:
        return self.provider if self.provider.endswith(f":{self.model}") else f"{self.provider}:{self.model}"

    def manifest_fields(self) -> dict[str, str]:
        # In eval-kit's order: a manifest's keys read as an eval-kit one's do.
        return {
            "model_provider": self.model_provider,
            "model": self.model,
            "provider": self.provider,
            "reasoning_effort": self.effort,
        }

    def client(self) -> Any:
        from assay.judge.client import JudgeClient

        return JudgeClient(self.endpoint, cache=self.cache)


def public_vars(variables: Mapping[str, Any]) -> dict[str, Any]:
    """Template variables without the adapter's private `_...` keys, which never reach the model."""
    return {name: value for name, value in variables.items() if not name.startswith("_")}


_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")  # as assay.judge.templates renders them


def check_vars(
    variables: Any,
    hook: str,
    required: tuple[str, ...],
    template: Any = None,
    supplied: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The hook's variables, refused when a required one is absent or empty, or when `template` (a
    `PromptTemplate`) has a placeholder they do not fill (`supplied`: names the kit adds itself).

    An unfilled placeholder renders empty, as in promptfoo, so a misspelt key in the hook's answer or in
    a suite's template would send the model a prompt without, say, its source material, and bill for it."""
    if not isinstance(variables, dict):
        raise AdapterError(f"{hook} must return an object of template variables")
    absent = [name for name in required if variables.get(name) is None]
    empty = [name for name in required if variables.get(name) == ""]
    if absent or empty:
        said = [f"did not return {', '.join(absent)}"] if absent else []
        said += [f"returned an empty {', '.join(empty)}"] if empty else []
        raise AdapterError(f"{hook} {' and '.join(said)}")
    if template is not None:
        _check_template_syntax(template)
        _check_placeholders(variables, hook, template, supplied)
    return variables


_TEMPLATE_SYNTAX = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)


def _check_template_syntax(template: Any) -> None:
    """A suite template with Nunjucks beyond `{{ name }}` (a filter, an attribute, a `{% if %}`), as an
    eval-kit prompt rendered by promptfoo may have, is refused before the model is asked: assay fills
    only plain placeholders, so the rest went to the model as written, unannounced, and was billed."""
    if template.source == "bundled":
        return
    for match in _TEMPLATE_SYNTAX.finditer(template.text):
        if _PLACEHOLDER.fullmatch(match.group(0)):
            continue
        shown = " ".join(match.group(0).split())
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ConfigError(
            f"the {template.key} prompt template {template.source} has {shown}, which assay does not render: only "
            "{{ name }} placeholders are filled (no filters, attributes or {% %} tags), so it would reach the model "
            "as written; use a {{ name }} the adapter's hook returns"
        )


def _check_placeholders(variables: Mapping[str, Any], hook: str, template: Any, supplied: tuple[str, ...]) -> None:
    from assay.core.format import did_you_mean

    filled = {*public_vars(variables), *supplied}
    unfilled = list(dict.fromkeys(
        name for name in _PLACEHOLDER.findall(template.text) if not name.startswith("_") and name not in filled
    ))
    if not unfilled:
        return
    which = f"the bundled {template.key}" if template.source == "bundled" else f"the {template.key}"
    named = "" if template.source == "bundled" else f" {template.source}"
    extra = sorted(set(public_vars(variables)) - set(_PLACEHOLDER.findall(template.text)))
    for name in unfilled:
        hint = did_you_mean(name, extra, form=" (it returned {}: one of the two is misspelt)", shown=str)
        said = f"{hook} did not return {name}, which {which} prompt template{named} uses as {{{{ {name} }}}}"
        if hint:  # a key and a placeholder one typo apart: the prompt would surely go out without it
            raise AdapterError(f"{said}{hint}; return it from {hook} or fix the placeholder, so the model is not "
                               "sent an empty value")
    # A placeholder nothing resembles renders empty, as it does in eval-kit (promptfoo), where a suite may rely
    # on it: said once, not refused.
    print(f"Warning: {hook} did not return {', '.join(unfilled)}, which {which} prompt template{named} uses: "
          "rendered empty", file=sys.stderr)


def _checked_by(answer: Callable[[str], Any], check: Callable[[Any], None]) -> Callable[[str], Any]:
    """`answer`'s check, then `check` on the value it gives: one check, so the cache sees both."""

    def checked(text: str) -> Any:
        value = answer(text)
        check(value)
        return value

    return checked


_CUT_OFF = "the model stopped at its output limit (finish_reason length)"


def _cut_off(completion: Any) -> bool:
    """Whether the endpoint says the reply ended at the output-token limit rather than where the model stopped."""
    choices = (getattr(completion, "response", None) or {}).get("choices") or []
    return bool(choices) and isinstance(choices[0], Mapping) and choices[0].get("finish_reason") == "length"


@dataclass
class JudgeCallLog:
    """Requests and raw responses of one run, written as `judge-request.json` and `judge-response.json`.

    Callers write the log in a `finally`, so a reply that cannot be read is on disk when its error is shown.
    """

    bundle: RunBundle
    template_source: str
    template: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)

    async def ask(
        self,
        client: Any,
        settings: ModelSettings,
        variables: Mapping[str, Any],
        *,
        schema: Mapping[str, Any] | None = None,
        label: str = "model output",
        check: Callable[[Any], None] | None = None,
    ) -> Any:
        """Render, call, record; with `schema`, return the parsed and fully validated JSON, else the (non-empty) text.

        `check(value)` raises `JudgeError` for a valid answer the command still cannot use (echoed
        metadata that does not match). Only an answer that parses, validates and passes `check` is
        cached, so a bad answer is never served again once the model is fixed; the raw reply is logged
        either way."""
        from assay.judge.client import ChatRequest, json_answer, text_answer
        from assay.judge.errors import JudgeAnswerError, JudgeError

        sent_vars = public_vars(variables)
        prompt = render_template(self.template, sent_vars)
        request = ChatRequest.from_prompt(settings.model, prompt, json_schema=schema, reasoning_effort=settings.effort)
        self.requests.append({"vars": sent_vars, "request": client.request_body(request)})
        # Text (generate) goes through the same path as JSON: an empty reply is logged and pointed at too.
        answer = text_answer() if schema is None else json_answer(schema, label)
        if check is not None:
            answer = _checked_by(answer, check)
        try:
            completion, value = await client.complete_checked(request, answer)
        except JudgeAnswerError as error:
            self._log(error.completion)
            # The message alone cannot show what the model said; point at the kept reply.
            saved = self.bundle.relative_to_repo(RESPONSE_FILE)
            # Said of a reply that has text to be cut: one that is empty is already called empty.
            partial = _cut_off(error.completion) and bool((getattr(error.completion, "text", "") or "").strip())
            cut = f"; {_CUT_OFF}, so the reply is incomplete" if partial else ""
            raise JudgeError(f"{error}{cut}; the raw reply is saved in {saved}") from error
        self._log(completion)
        if _cut_off(completion):  # text that ends mid-sentence still reads as an answer: say so
            saved = self.bundle.relative_to_repo(RESPONSE_FILE)
            print(f"Warning: {_CUT_OFF}, so the {label} is incomplete; see {saved}", file=sys.stderr)
        return value

    def _log(self, completion: Any) -> None:
        self.responses.append(
            {"cached": completion.cached, "attempts": completion.attempts, "text": completion.text,
             "response": completion.response}
        )

    def write(self) -> list[tuple[str, str]]:
        self.bundle.write_json(
            REQUEST_FILE, {"template_source": self.template_source, "template": self.template, "calls": self.requests}
        )
        self.bundle.write_json(RESPONSE_FILE, {"calls": self.responses})
        return [("judge_request", REQUEST_FILE), ("raw_judge_response", RESPONSE_FILE)]
