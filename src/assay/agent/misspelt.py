"""`; did you mean …?` for a misspelt keyword or attribute of assay.agent's own callables and objects, in the
error an eval, an agent's `send` or a project file raised. A leaf module: discovery, the attempt and the session
line all use it, and it reaches the names it checks through `sys.modules` rather than importing them.
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = ["keyword_meant"]

_ID_KEYWORDS = ("id", "name", "eval_id")  # how other tools name an eval, which assay takes from where it is

_CANNOT_IMPORT = re.compile(r"^cannot import name '(\w+)' from '(assay\.agent(?:\.\w+)*)'")
_UNEXPECTED_KEYWORD = re.compile(r"^(?:(\w+)\.)?(\w+)\(\) got an unexpected keyword argument '(\w+)'$")


# Python's words for a call with the wrong arguments: `_Scoped.succeeded() takes 1 positional argument but 2 were
# given`, `EvalContext.check() missing 1 required positional argument: 'matcher'`.
_WRONG_ARGUMENTS = re.compile(r"^(?:(\w+)\.)?(\w+)\(\) (?:takes .* given|missing \d+ required .*|got multiple values .*)$")
# The classes an eval's `t`, a session line and a turn handle are, as Python names them in those words.
_RECEIVERS = {"_Scoped": "t", "EvalContext": "t", "SessionHandle": "session", "TurnHandle": "turn",
              "AssertionHandle": "handle"}


def arguments_meant(error: BaseException) -> str:
    """`; it is called t.check(value, matcher)` for a call of one of assay.agent's callables with the wrong
    arguments (`t.succeeded(True)`, `t.check(includes("x"))`), naming it as the eval does, else ""."""
    found = _WRONG_ARGUMENTS.match(str(error)) if isinstance(error, TypeError) else None
    if found is None:
        return ""
    owner, name = found.groups()
    parameters = _parameters(owner, name)
    if parameters is None:
        return ""
    shown = ", ".join(
        ("*" if parameter.kind is parameter.VAR_POSITIONAL else "") + parameter.name
        + ("=…" if parameter.default is not parameter.empty and parameter.kind is not parameter.VAR_POSITIONAL else "")
        for parameter in parameters if parameter.kind is not parameter.VAR_KEYWORD
    )
    receiver = f"{_RECEIVERS.get(owner, owner)}." if owner is not None and owner != name else ""
    return f"; it is called {receiver}{name}({shown})"


def keyword_meant(error: BaseException) -> str:
    """`; did you mean 'lifetime'?` for a misspelt keyword of one of assay.agent's callables (`Experiment(lifetim=…)`,
    `local_sandbox(isolaton=…)`, `t.send(ouptut=…)`, `tool_match(stauts=…)`) or a misspelt attribute of one of its
    objects (`handle.or_stp()`), else ""."""
    from assay.core.format import did_you_mean

    if isinstance(error, ImportError) and not isinstance(error, ModuleNotFoundError):
        return _import_meant(error)
    if isinstance(error, AttributeError):
        owner = getattr(error, "obj", None)
        if not type(owner).__module__.startswith("assay.agent") or not isinstance(getattr(error, "name", None), str):
            return ""
        return did_you_mean(error.name, [name for name in dir(owner) if not name.startswith("_")])
    found = _UNEXPECTED_KEYWORD.match(str(error)) if isinstance(error, TypeError) else None
    if found is None:
        return ""
    owner, name, keyword = found.groups()
    if owner is None and name in ("define_eval", "define_eval_group") and keyword in _ID_KEYWORDS:
        return ("; an eval's id is not given but comes from its file's path: `evals/orders/refund_eval.py` is "
                "'orders/refund' (rename the file to change it; `assay agent list` shows the ids)")
    method = owner is not None and name != "__init__"
    # A method's required arguments are given by position (`t.check(value, matcher)`): a misspelt keyword is one
    # of its options, and `lable=` is not `value`.
    parameters = _parameters(owner, name) or ()
    keywords = [
        parameter.name for parameter in parameters
        if not (method and parameter.kind is not parameter.KEYWORD_ONLY and parameter.default is parameter.empty)
        and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD, parameter.POSITIONAL_ONLY)
    ]
    # A keyword like none of them (`event_match(..., status=…)`) gets the ones there are: Python names none.
    return did_you_mean(keyword, keywords) or (f"; its keywords are {', '.join(keywords)}" if keywords else "")


def _import_meant(error: ImportError) -> str:
    """`from assay.agent import includs` (a misspelt name), or `import succeeded` (an assertion, which is a method of
    `t` and has nothing to import): the name meant, or how the assertion is called. Python 3.11 names neither."""
    from assay.core.format import did_you_mean

    found = _CANNOT_IMPORT.match(str(error))
    module = sys.modules.get(found.group(2)) if found is not None else None
    if found is None or module is None:
        return ""
    missing = found.group(1)
    context = _assay_agent_name("EvalContext", classes=True)
    if context is not None and not missing.startswith("_") and callable(getattr(context, missing, None)):
        return f"; {missing} is not imported: it is a method of the eval's `t`, called as t.{missing}(...)"
    names = getattr(module, "__all__", None) or [name for name in vars(module) if not name.startswith("_")]
    return did_you_mean(missing, names)


def _parameters(owner: str | None, name: str) -> list[Any] | None:
    """The parameters an eval gives `owner.name(...)` (or the function `name`; a class's `__init__`: the class),
    one of assay.agent's callables, without `self` and private ones; None when it is none of them."""
    import inspect

    target = _assay_agent_name(owner or name, classes=owner is not None)
    if target is not None and owner is not None and name != "__init__":
        target = getattr(target, name, None)
    try:
        signature = inspect.signature(target) if target is not None else None
    except (TypeError, ValueError):
        return None
    if signature is None:
        return None
    return [parameter for parameter in signature.parameters.values()
            if parameter.name != "self" and not parameter.name.startswith("_")]


def _assay_agent_name(name: str, *, classes: bool) -> Any:
    """The public function or class `name` of assay.agent, or with `classes` a class of one of its loaded
    modules (`SessionHandle`, whose methods an eval calls on `t`), else None."""
    public = sys.modules.get("assay.agent")  # loaded whenever an eval or agent of it raised
    if public is None:
        return None
    if name in public.__all__:
        return getattr(public, name, None)
    # the official agents' factories (`openai_chat_agent(modle=)`), a span mapper's taggers (`tag_span(knd=)`)
    for module_name in ("assay.agent.adapters", "assay.agent.traces"):
        module = sys.modules.get(module_name)
        if module is not None and name in getattr(module, "__all__", ()):
            return getattr(module, name, None)
    for module_name, module in list(sys.modules.items()) if classes else ():
        if module_name.startswith("assay.agent") and module is not None:
            value = vars(module).get(name)
            if isinstance(value, type) and value.__module__ == module_name:
                return value
    return None
