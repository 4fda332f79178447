"""Tools an eval author declares as Python functions, for the official OpenAI-compatible adapters.

A tool's JSON Schema comes from the function's signature (pydantic); calling it validates the
model's arguments first, and its result travels back to the model as JSON text.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

from assay.core.jsonvalue import jsonable
from assay.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one call produced: `output` is JSON; `failed` when the function raised or the arguments were invalid."""

    output: Any
    failed: bool = False

    def text(self) -> str:
        """The tool message content the model reads."""
        return self.output if isinstance(self.output, str) else json.dumps(self.output, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON Schema of the arguments object
    function: Callable[..., Any]
    arguments_model: Any = None  # the pydantic model that validates arguments

    def chat_definition(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }

    def responses_definition(self) -> dict[str, Any]:
        return {
            "type": "function", "name": self.name, "description": self.description,
            "parameters": dict(self.parameters),
        }

    async def invoke(self, arguments: Any) -> ToolResult:
        if not isinstance(arguments, Mapping):
            return ToolResult(f"invalid arguments: expected a JSON object, got {arguments!r}", failed=True)
        try:
            validated = self.arguments_model.model_validate(dict(arguments))
        except Exception as error:  # noqa: BLE001 - pydantic's ValidationError; the model can correct itself
            return ToolResult(f"invalid arguments: {error}", failed=True)
        try:
            result = self.function(**{name: getattr(validated, name) for name in type(validated).model_fields})
            if inspect.isawaitable(result):
                result = await result
        except Exception as error:  # noqa: BLE001 - a failing tool is evidence (status failed), not a crash
            return ToolResult(f"{type(error).__name__}: {error}", failed=True)
        return ToolResult(jsonable(result, fallback=str))


def tool(
    function: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None
) -> Any:
    """`@tool` or `tool(fn, name=…)`: a `Tool` whose schema comes from the signature and docstring."""

    def build(target: Callable[..., Any]) -> Tool:
        from pydantic import create_model

        if isinstance(target, Tool):
            return target
        if not callable(target):
            raise ConfigError(f"a tool must be a function, got {type(target).__name__}")
        tool_name = name or getattr(target, "__name__", None)
        if not tool_name or not tool_name.replace("_", "").replace("-", "").isalnum():
            raise ConfigError(f"tool name {tool_name!r} must be letters, digits, _ or -")
        try:
            hints = get_type_hints(target)
        except Exception:  # noqa: BLE001 - unresolved annotations fall back to "any JSON"
            hints = {}
        fields: dict[str, Any] = {}
        for parameter in inspect.signature(target).parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise ConfigError(f"tool {tool_name!r}: *args and **kwargs cannot be described to a model")
            annotation = hints.get(parameter.name, Any)
            default = ... if parameter.default is parameter.empty else parameter.default
            fields[parameter.name] = (annotation, default)
        model = create_model(f"{tool_name}_arguments", **fields)  # type: ignore[call-overload]
        schema = model.model_json_schema()
        schema.pop("title", None)
        text = description if description is not None else inspect.getdoc(target) or ""
        return Tool(tool_name, text, schema, target, model)

    if function is not None:
        return build(function)
    return build


def as_tools(items: Iterable[Any]) -> tuple[Tool, ...]:
    """Functions or `Tool`s, each name once."""
    tools = tuple(tool(item) for item in items)
    seen: set[str] = set()
    for item in tools:
        if item.name in seen:
            raise ConfigError(f"two tools are named {item.name!r}")
        seen.add(item.name)
    return tools


__all__ = ["Tool", "ToolResult", "as_tools", "tool"]
