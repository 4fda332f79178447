"""LLM-as-judge for agent evals: the `Judge` protocol, the recipes, and `LLMJudge` over `assay.judge`'s client.

A judge config is resolved eval > experiment > project; with no model or no key the assertion is
unavailable (never failed) and no call is made. Calls go through the shared `JudgeClient`, so they
are cached by content (model, prompt, input) and share the endpoint's rate limiter.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from assay.agent.evidence import sum_counts
from assay.agent.outcome import MATCHED, UNAVAILABLE, Outcome
from assay.core.endpoint_defaults import AGENT_JUDGE_DEFAULTS

RECIPES = ("closed_qa", "factuality", "summarizes", "rubric")
CONFIG_KEYS = ("model", "base_url", "api_key_env", "timeout", "reasoning_effort")
DEFAULT_TIMEOUT_S = 180.0
PROMPT_VERSION = "assay-agent-judge/1"
_TEXT_KEYS = ("model", "base_url", "api_key_env", "reasoning_effort")
_UNSET_KEYS = ("model", "base_url", "reasoning_effort")  # None is "not set" (from Python; TOML has no None)
# The efforts OpenAI's API takes. Another server may take others, so only a near miss of one is refused.
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # what api_key_env may name


def check_judge_settings(settings: Any, where: str) -> None:
    """Judge settings as a file gives them (`[tool.assay.judge]`, an experiment's or an eval's `judge=`),
    checked when the file is read: a misspelt key or a wrong type would otherwise make every judge
    assertion unavailable at run time, and a run selecting no judged eval would not notice it at all."""
    from assay.core.format import did_you_mean
    from assay.errors import ConfigError

    if not isinstance(settings, Mapping):
        raise ConfigError(f"{where} must be a mapping of judge settings ({', '.join(CONFIG_KEYS)})")
    for key, value in settings.items():
        if key not in CONFIG_KEYS:
            hint = did_you_mean(str(key), CONFIG_KEYS, form=" (did you mean {}?)")
            raise ConfigError(f"{where}: unknown setting {key!r}{hint}; use {', '.join(CONFIG_KEYS)}")
        if key in _TEXT_KEYS and not isinstance(value, str) and not (value is None and key in _UNSET_KEYS):
            raise ConfigError(f"{where}: {key} must be a string, got {value!r}")
        if key == "api_key_env" and isinstance(value, str) and value and not _VARIABLE_NAME.fullmatch(value):
            # (the key itself written here was echoed as "the judge key variable sk-… is not set", on the console
            # and in every stored record; so the value is not repeated)
            raise ConfigError(f"{where}: api_key_env names the environment variable that holds the judge's key "
                              f"(like api_key_env = \"JUDGE_API_KEY\"), and what it has is no variable name "
                              f"(not repeated here: it may be the key itself); put the key in a variable and name "
                              f"that, or write \"\" for a server that needs no key")
        if key in ("model", "base_url") and isinstance(value, str) and not value.strip():
            raise ConfigError(f"{where}: {key} is empty; give the judge's {key.replace('_', ' ')}, or leave the key out")
        if key == "base_url" and isinstance(value, str):
            from assay.judge.openai_http import url_problem

            problem = url_problem(value)
            if problem is not None:  # (a typo such as htp:// made every judged attempt error at run time)
                raise ConfigError(f"{where}: base_url {value} {problem}")
        if key == "reasoning_effort" and isinstance(value, str) and value not in REASONING_EFFORTS:
            # (a typo such as "hihg" went out with every judge call, which a server refuses: every judged attempt
            # errored at run time)
            # (`Hihg`, a typo in another case too, is as near a miss as `hihg`: it went out unrefused)
            hint = did_you_mean(value, REASONING_EFFORTS, form="{}") or did_you_mean(
                value.casefold(), REASONING_EFFORTS, form="{}")
            if hint:
                raise ConfigError(f"{where}: reasoning_effort {value!r} looks misspelt (did you mean {hint}?); "
                                  f"OpenAI's efforts are {', '.join(REASONING_EFFORTS)}")
        if key == "timeout" and (isinstance(value, bool) or not isinstance(value, (int, float))
                                 or not math.isfinite(value) or value <= 0):
            raise ConfigError(f"{where}: timeout must be a positive number of seconds, got {value!r}")


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    recipe: str  # closed_qa | factuality | summarizes | rubric
    criterion: str  # the question, the reference, the source or the rubric
    input: str
    output: str
    config: Mapping[str, Any] | None = None  # project < experiment < eval judge settings, merged


@dataclass(frozen=True, slots=True)
class JudgeScore:
    score: float  # in [0, 1]; anything else errors the assertion (never clamped)
    explanation: str | None = None
    model: str | None = None
    cached: bool = False
    repaired: bool = False  # the score came from the one repair request after an unusable answer


class Judge(Protocol):
    async def grade(self, request: JudgeRequest) -> JudgeScore: ...


class JudgeUnavailable(Exception):
    """No judgement can be made (unresolved model or key, bad config): the assertion is unavailable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


async def grade(judge: Judge | None, request: JudgeRequest) -> Outcome:
    return (await grade_with_details(judge, request))[0]


async def grade_with_details(judge: Judge | None, request: JudgeRequest) -> tuple[Outcome, dict[str, Any] | None]:
    """The outcome plus what produced it (model, cache hit, prompt version), for the record."""
    if judge is None:
        return Outcome(UNAVAILABLE, "judge-model-unresolved: no judge is configured for this run"), None
    try:
        result = await judge.grade(request)
    except JudgeUnavailable as error:
        return Outcome(UNAVAILABLE, str(error)), None
    except Exception as error:  # noqa: BLE001 - a failed call is missing evidence, not a verdict
        from assay.judge.errors import JudgeAnswerError, JudgeError

        if isinstance(error, JudgeAnswerError):  # it answered, but nothing usable: never a 0, NaN or a pass
            return Outcome(UNAVAILABLE, f"judge-error: {error}{_what_it_said(error.completion)}"), None
        # assay's own judge errors say what failed; another exception (a custom judge's bug) is named by its type
        said = str(error) if isinstance(error, JudgeError) else f"{type(error).__name__}: {error}"
        return Outcome(UNAVAILABLE, f"judge-call-failed: {said}"), None
    details: dict[str, Any] = {"recipe": request.recipe}
    if result.model is not None:
        details.update(model=result.model, cached=result.cached, prompt=PROMPT_VERSION)
        if result.repaired:
            details["repaired"] = True
    if not isinstance(result.score, (int, float)) or not math.isfinite(result.score):
        return Outcome(MATCHED, result.explanation or "", float("nan")), details
    return Outcome(MATCHED, result.explanation or "", float(result.score)), details


_SAID_CHARACTERS = 160  # of the judge's unusable answer, shown in the assertion's reason


def _what_it_said(completion: object) -> str:
    """`; the judge answered: '…'`: the start of the answer that could not be used, so the reason shows what the
    model wrote (prose around the JSON, a refusal) and not only why it was refused."""
    text = getattr(completion, "text", None)
    if not isinstance(text, str) or not text.strip():
        return ""
    shown = " ".join(text.split())
    return f"; the judge answered: {shown[:_SAID_CHARACTERS] + '…' if len(shown) > _SAID_CHARACTERS else shown!r}"


def _judgement(text: str) -> dict[str, Any]:
    """A judge answer the assertion can use: the score JSON with a finite score in [0, 1]."""
    from assay.judge.client import json_answer
    from assay.judge.errors import JudgeError

    value = json_answer(_SCORE_SCHEMA, "judge answer")(text)
    score = value["score"]
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise JudgeError(f"judge answer: score {score!r} is outside [0, 1]")
    return value


# ---------------------------------------------------------------------------------------------
# The built-in judge

_SCORE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["reasons", "score"],
    # No bounds here: an out-of-range score is refused by `_judgement` as a judge-error with its own
    # message (and never cached), not as a schema miss.
    "properties": {"reasons": {"type": "string"}, "score": {"type": "number"}},
}

_SYSTEM = (
    "You are a careful, strict evaluator of an AI agent's output. Judge only by the criterion given. "
    'Answer with one JSON object: {"reasons": "<one short paragraph>", "score": <a number from 0 to 1>}, '
    "where 1 means the criterion is fully met and 0 means it is not met at all."
)
_TASKS = {
    "closed_qa": "Does the output satisfy this criterion?\nCriterion: {criterion}",
    "factuality": "Does the output agree with this reference answer (ignore style, judge facts)?\nReference: {criterion}",
    "summarizes": "Is the output a faithful and complete summary of this source?\nSource: {criterion}",
    "rubric": "Grade the output against this rubric.\nRubric: {criterion}",
}


def judge_messages(request: JudgeRequest) -> tuple[dict[str, str], ...]:
    task = _TASKS[request.recipe].replace("{criterion}", request.criterion)
    user = f"{task}\n\n[Input given to the agent]\n{request.input}\n\n[Output to judge]\n{request.output}"
    return ({"role": "system", "content": _SYSTEM}, {"role": "user", "content": user})


def merged_judge_config(
    project_judge: Mapping[str, Any] | None, experiment_judge: Mapping[str, Any] | None, eval_judge: Any
) -> dict[str, Any] | None:
    """eval > experiment > project, merged key by key; None when the eval did not declare a judge."""
    if not eval_judge:
        return None
    config = dict(project_judge or {})
    config.update(experiment_judge or {})
    if isinstance(eval_judge, Mapping):
        config.update(eval_judge)
    return config


def resolve_judge_config(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`{model, base_url, api_key, timeout, reasoning_effort}` or `JudgeUnavailable` with the spec's codes."""
    env = os.environ if environ is None else environ
    settings = dict(config or {})
    unknown = sorted(set(settings) - set(CONFIG_KEYS))
    if unknown:
        raise JudgeUnavailable(
            "judge-config-invalid", f"unknown judge setting(s) {', '.join(unknown)}; use {', '.join(CONFIG_KEYS)}"
        )
    model = settings.get("model")
    if model is not None and not isinstance(model, str):
        raise JudgeUnavailable("judge-config-invalid", f"judge model must be a string, got {model!r}")
    if not model:
        raise JudgeUnavailable("judge-model-unresolved", "no judge model is configured (eval, experiment or project)")
    defaults = AGENT_JUDGE_DEFAULTS  # ASSAY_JUDGE_API_KEY, else OPENAI_API_KEY
    if "api_key_env" in settings:
        key_env = settings["api_key_env"]
        if not isinstance(key_env, str):
            raise JudgeUnavailable("judge-config-invalid", "judge api_key_env must be a string")
        # An empty api_key_env says the endpoint needs no key (a local vLLM, Ollama or llama.cpp).
        defaults = defaults.with_api_key_variable(key_env)
    api_key = defaults.api_key(None, env)
    if defaults.api_key_variables and not api_key:
        names = " nor ".join(defaults.api_key_variables)
        raise JudgeUnavailable("judge-key-unresolved",
                               f"the judge key variable {names} is not set" if len(defaults.api_key_variables) == 1
                               else f"neither {names} is set")
    base_url = defaults.base_url(settings.get("base_url"), env)
    timeout = settings.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise JudgeUnavailable("judge-config-invalid", "judge timeout must be a positive number of seconds")
    effort = settings.get("reasoning_effort")
    return {"model": model, "base_url": str(base_url), "api_key": api_key, "timeout": float(timeout),
            "reasoning_effort": effort if isinstance(effort, str) else None}


class LLMJudge:
    """Grades with an OpenAI-compatible model through `assay.judge.JudgeClient` (one per endpoint)."""

    def __init__(self, *, cache: Any = None, environ: Mapping[str, str] | None = None, max_attempts: int = 4,
                 backoff_s: float = 0.5) -> None:
        self.cache = cache
        self.environ = environ
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self._clients: dict[tuple[Any, ...], Any] = {}
        self._closed_retries: dict[str, int] = {}  # of clients closed already: the run reads them after closing
        self._closed_usage: dict[str, dict[str, int]] = {}  # the same for what the calls cost
        self._lock = asyncio.Lock()

    async def _client(self, settings: Mapping[str, Any]) -> Any:
        from assay.judge.client import JudgeClient, JudgeEndpoint

        key = (settings["base_url"], settings["api_key"], settings["timeout"])
        async with self._lock:
            client = self._clients.get(key)
            if client is None:
                endpoint = JudgeEndpoint(
                    base_url=settings["base_url"], api_key=settings["api_key"], timeout_s=settings["timeout"],
                    max_attempts=self.max_attempts, backoff_s=self.backoff_s,
                )
                client = self._clients[key] = JudgeClient(endpoint, cache=self.cache)
        return client

    async def grade(self, request: JudgeRequest) -> JudgeScore:
        from assay.judge.client import ChatRequest

        settings = resolve_judge_config(request.config, self.environ)
        client = await self._client(settings)
        chat = ChatRequest(
            model=settings["model"], messages=judge_messages(request), json_schema=_SCORE_SCHEMA,
            schema_name="judgement", reasoning_effort=settings["reasoning_effort"],
        )
        # An unusable answer gets one repair request (counted in the run's judge retries as `repair`);
        # only a usable answer is cached, and a second unusable one is a judge-error.
        completion, value = await client.complete_checked(chat, _judgement, repair=True)
        return JudgeScore(float(value["score"]), value["reasons"], settings["model"], completion.cached, completion.repaired)

    @property
    def retries(self) -> dict[str, int]:
        return sum_counts([self._closed_retries, *(client.retries for client in self._clients.values())])

    @property
    def usage(self) -> dict[str, dict[str, int]]:
        """Model -> calls answered, answers read from the cache and tokens (`assay.judge.usage.count_usage`)."""
        if not self._clients and not self._closed_usage:
            return {}  # no judge was asked: a run without judges never imports the judge's client
        from assay.judge.usage import merged_usage

        return merged_usage([self._closed_usage, *(client.usage for client in self._clients.values())])

    async def aclose(self) -> None:
        # The run closes its judge before it reads the judge's retries for the summary: keep them.
        self._closed_retries = self.retries
        self._closed_usage = self.usage
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


def judge_spend(usage: Mapping[str, Mapping[str, int]], pricing: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What a run's judge calls cost, model by model: the counts of `LLMJudge.usage` and an
    `estimated_cost_usd` from the project's price table (None when it has no price for the model, or
    when a call reported no usage, since the estimate would then be too low). Judge calls are the
    harness's spending, not the agent's: they count towards no experiment's budget."""
    from assay.agent.model import Usage
    from assay.agent.pricing import estimate_cost, unpriced_reason

    spend: dict[str, dict[str, Any]] = {}
    for model, counts in sorted(usage.items()):
        tokens = Usage(input_tokens=counts["input_tokens"], output_tokens=counts["output_tokens"],
                       cache_read_tokens=counts["cache_read_tokens"])
        cost = None if counts["no_usage"] else estimate_cost(model, tokens, pricing) if counts["calls"] else 0.0
        spend[model] = {**counts, "estimated_cost_usd": cost}
        if cost is None and not counts["no_usage"]:  # priced badly, not unreported: say what the table lacks
            spend[model]["unpriced"] = unpriced_reason(model, dict(counts), pricing)
    return spend


def summed_spend(spends: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Several runs' `judge_spend`s as one (a merge of shards): counts added, and a cost only where every run
    that called the model had one."""
    total: dict[str, dict[str, Any]] = {}
    for spend in spends:
        for model, counts in spend.items():
            if not isinstance(counts, Mapping):
                continue
            entry = total.setdefault(model, {"estimated_cost_usd": 0.0})
            for name, value in counts.items():
                if name == "estimated_cost_usd":
                    known = entry[name] is not None and isinstance(value, (int, float)) and not isinstance(value, bool)
                    entry[name] = entry[name] + value if known else None
                elif type(value) is int:
                    entry[name] = entry.get(name, 0) + value
    return {model: {**{name: value for name, value in entry.items() if name != "estimated_cost_usd"},
                    "estimated_cost_usd": entry["estimated_cost_usd"]} for model, entry in sorted(total.items())}


def render_value(value: Any) -> str:
    """What the judge reads for a checked value: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):
        return str(value)


__all__ = [
    "CONFIG_KEYS", "Judge", "JudgeRequest", "JudgeScore", "JudgeUnavailable", "LLMJudge", "PROMPT_VERSION",
    "RECIPES", "check_judge_settings", "grade", "grade_with_details", "judge_messages", "judge_spend", "merged_judge_config",
    "render_value", "summed_spend",
    "resolve_judge_config",
]
