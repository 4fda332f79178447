"""What every model-backed doc command shares: model settings, rendering, judge calls and their records.

Each call is kept (variables, request body, raw response) so a bundle shows exactly what the model saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from assay.doc.artifacts import RunBundle
from assay.errors import AdapterError, UsageError
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
        return {
            "model": self.model,
            "provider": self.provider,
            "model_provider": self.model_provider,
            "reasoning_effort": self.effort,
        }

    def client(self) -> Any:
        from assay.judge.client import JudgeClient

        return JudgeClient(self.endpoint, cache=self.cache)


def public_vars(variables: Mapping[str, Any]) -> dict[str, Any]:
    """Template variables without the adapter's private `_...` keys, which never reach the model."""
    return {name: value for name, value in variables.items() if not name.startswith("_")}


def check_vars(variables: Any, hook: str, required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(variables, dict):
        raise AdapterError(f"{hook} must return an object of template variables")
    missing = [name for name in required if variables.get(name) in (None, "")]
    if missing:
        raise AdapterError(f"{hook} did not return {', '.join(missing)}")
    return variables


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
    ) -> Any:
        """Render, call, record; with `schema`, return the parsed and fully validated JSON, else the text.

        Only an answer that parses and validates is cached; the raw reply is logged either way."""
        from assay.judge.client import ChatRequest, json_answer
        from assay.judge.errors import JudgeAnswerError, JudgeError

        sent_vars = public_vars(variables)
        prompt = render_template(self.template, sent_vars)
        request = ChatRequest.from_prompt(settings.model, prompt, json_schema=schema, reasoning_effort=settings.effort)
        self.requests.append({"vars": sent_vars, "request": client.request_body(request)})
        if schema is None:
            completion = await client.complete(request)
            self._log(completion)
            return completion.text
        try:
            completion, value = await client.complete_checked(request, json_answer(schema, label))
        except JudgeAnswerError as error:
            self._log(error.completion)
            # The message alone cannot show what the model said; point at the kept reply.
            saved = self.bundle.relative_to_repo(RESPONSE_FILE)
            raise JudgeError(f"{error}; the raw reply is saved in {saved}") from error
        self._log(completion)
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
