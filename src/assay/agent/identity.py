"""A slot's execution identity: what an attempt's result depends on, as one digest plus one per component.

Components: the eval's source closure (its module and the project modules it imports), the text it
loads (loaders, `send_file` literals, uploaded fixtures), the agent (name, the experiment's source
closure, its `Experiment(...)` settings that are not outcome-bearing left out, and the project files a process
agent's command names), model, reasoning effort, flags, judge
config, sandbox layers, the shared-state key, the timeout and the eval group (its id and membership, for
a member of one). Comparing two identities names each component that changed, so a rerun always has a
reason a person can read.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.agent.loaders import loaded_by
from assay.agent.source_closure import SourceClosure, content_hash

__all__ = [
    "COMPONENTS", "ExecutionIdentity", "IdentityBuilder", "Reason", "effective_timeout", "identity_changes",
    "same_file_hashed_whole",
]

IDENTITY_VERSION = 2  # bumped when what a component covers changes: old results then rerun, named as such
COMPONENTS = ("source", "loaded", "agent", "model", "effort", "flags", "judge", "sandbox", "shared_state", "timeout",
              "group")  # `group` only for a member of an eval group: other evals keep their identity
_FIXTURE_SKIPPED = frozenset({".git", "__pycache__", "node_modules", ".venv"})
# `Experiment(...)` settings that are not what an attempt comes to, or are a component of their own (model, effort,
# flags, timeout): their values are left out of the experiment file's digest, so raising `attempts=` or `budget=` in
# the file does not rerun (and pay again for) every slot the experiment already has.
_SETTINGS_NOT_HASHED = frozenset({
    "attempts", "timeout", "concurrency", "budget", "description", "labels", "early_exit", "evals", "model",
    "reasoning_effort", "flags",
})


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a slot is executed, carried or not dispatched: a stable code and a line for a person."""

    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def _digest(value: Any) -> str:
    # 16 hex digits, like a file's content hash: an identity is in every attempt's record, so its
    # ten digests are a third of a small attempt's line at 32 digits.
    return hashlib.sha256(_canonical(value).encode("utf-8")).hexdigest()[:16]


def effective_timeout(cli: float | None, experiment: float | None, definition: float | None,
                      config: float | None) -> float | None:
    """The attempt's deadline in seconds: --timeout > experiment > eval > project config; None: none."""
    return cli or experiment or definition or config


@dataclass(frozen=True)
class ExecutionIdentity:
    digest: str
    components: Mapping[str, str]  # component -> digest
    files: Mapping[str, Mapping[str, str]]  # source / loaded / agent -> {project-relative path: content hash}
    values: Mapping[str, Any]  # what messages name: eval file, experiment file, agent, model, effort, timeout

    def to_json(self) -> dict[str, Any]:
        return {
            "version": IDENTITY_VERSION, "digest": self.digest, "components": dict(self.components),
            "files": {name: dict(files) for name, files in self.files.items()}, "values": dict(self.values),
        }

    @classmethod
    def from_json(cls, document: Any) -> ExecutionIdentity | None:
        """None for anything that is not an identity this version of assay wrote."""
        if not isinstance(document, Mapping) or document.get("version") != IDENTITY_VERSION:
            return None
        components, files, values = document.get("components"), document.get("files"), document.get("values")
        if not isinstance(document.get("digest"), str) or not isinstance(components, Mapping):
            return None
        if not isinstance(files, Mapping) or not isinstance(values, Mapping):
            return None
        return cls(document["digest"], dict(components), {k: dict(v) for k, v in files.items() if isinstance(v, Mapping)},
                   dict(values))

    def without_timeout(self) -> str:
        """The digest of every component but the timeout (an attempt that fits a new timeout is still valid)."""
        return _digest({name: value for name, value in self.components.items() if name != "timeout"})


class IdentityBuilder:
    """Identities of one project's slots; files are read and parsed once, pairs computed once."""

    def __init__(self, root: Path, *, project_judge: Mapping[str, Any] | None = None, timeout: float | None = None,
                 config_timeout: float | None = None) -> None:
        self.root = root.resolve()
        self.closures = SourceClosure(self.root)
        self.project_judge = project_judge
        self.timeout = timeout
        self.config_timeout = config_timeout
        self._last: tuple[tuple[str, str], ExecutionIdentity] | None = None
        self._agents: dict[str, tuple[dict[str, str], str]] = {}
        self._whole_files: dict[str, str] = {}  # experiment id -> its file's content digest, when settings were left out
        self._experiments: dict[str, dict[str, str]] = {}  # experiment id -> its own components' digests
        self._digests: dict[tuple[str, Any], str] = {}  # digests of small values many slots share
        self._contents: dict[Path, str] = {}
        self._files: dict[Path, tuple[dict[str, str], str, dict[str, str], str, str | None]] = {}
        self._identities: dict[tuple[Any, ...], ExecutionIdentity] = {}

    def of(self, planned: Any) -> ExecutionIdentity:
        key = (planned.experiment.id, planned.eval.id)
        last = self._last
        if last is not None and last[0] == key:  # a pair's attempts are consecutive in the plan
            return last[1]
        identity = self._build(planned)
        self._last = (key, identity)
        return identity

    # -- components ------------------------------------------------------------------------------
    def _build(self, planned: Any) -> ExecutionIdentity:
        from assay.agent.judging import PROMPT_VERSION, merged_judge_config

        entry, experiment_entry = planned.eval, planned.experiment
        definition, experiment = entry.eval, experiment_entry.experiment
        source, source_digest, loaded, loaded_digest, eval_file = self._file_part(entry)
        judge = merged_judge_config(self.project_judge, experiment.judge, definition.judge)
        sandbox = self._sandbox(planned.sandbox, definition)
        if sandbox is not None:
            loaded = {**loaded, **self._fixtures(sandbox.pop("uploads"))}
            loaded_digest = _digest(loaded)
        timeout = effective_timeout(self.timeout, experiment.timeout, definition.timeout, self.config_timeout)
        judge_digest = self._shared_digest(None) if judge is None else _digest({"config": judge, "prompt": PROMPT_VERSION})
        sandbox_digest = self._shared_digest(None) if sandbox is None else _digest(sandbox)
        # Every eval of one file, run by one experiment with the same judge, sandbox and timeout, has
        # the same identity: it is built once and shared (a 50,000-eval file holds one, not 50,000).
        group = entry.group
        key = (source_digest, loaded_digest, experiment_entry.id, judge_digest, sandbox_digest, timeout, eval_file,
               group)
        shared = self._identities.get(key)
        if shared is not None:
            return shared
        components = {
            "source": source_digest,
            "loaded": loaded_digest,
            **self._experiment_components(experiment_entry),
            "judge": judge_digest,
            "sandbox": sandbox_digest,
            "timeout": self._shared_digest(timeout),
            **({"group": _digest(group.to_json())} if group is not None else {}),
        }
        values = {
            "eval_file": eval_file,
            "experiment_file": self.closures.relative(experiment_entry.path) if experiment_entry.path is not None else None,
            "agent": experiment.agent.name, "model": experiment.model, "effort": experiment.reasoning_effort,
            "timeout": timeout,
            **({"group": group.id} if group is not None else {}),
            **({"experiment_file_whole": self._whole_files[experiment_entry.id]}
               if experiment_entry.id in self._whole_files else {}),
        }
        identity = self._identities[key] = ExecutionIdentity(
            _digest(components), components, {"source": source, "loaded": loaded, "agent": self._agent(experiment_entry)[0]},
            values,
        )
        return identity

    def _file_part(self, entry: Any) -> tuple[dict[str, str], str, dict[str, str], str, str | None]:
        """What an eval's file decides (its closure, what it loads, their digests, its name), once per file."""
        path = entry.path
        if path is None:  # made in code: the function's own file, looked up each time (rare)
            source = self._source(entry)
            return source, _digest(source), {}, self._shared_digest({}), None
        cached = self._files.get(path)
        if cached is None:
            source = self._source(entry)
            loaded = self._loaded(entry, source)
            cached = self._files[path] = (source, _digest(source), loaded, _digest(loaded), self.closures.relative(path))
        return cached

    def _shared_digest(self, value: Any) -> str:
        """The digest of a value many slots share (None, no loaded files, a timeout), computed once."""
        key = (type(value).__name__, _canonical(value)) if isinstance(value, dict) else (type(value).__name__, value)
        digest = self._digests.get(key)
        if digest is None:
            digest = self._digests[key] = _digest(value)
        return digest

    def _experiment_components(self, entry: Any) -> dict[str, str]:
        """The components only the experiment decides, computed once per experiment."""
        components = self._experiments.get(entry.id)
        if components is None:
            experiment = entry.experiment
            components = self._experiments[entry.id] = {
                "agent": self._agent(entry)[1], "model": _digest(experiment.model),
                "effort": _digest(experiment.reasoning_effort), "flags": _digest(dict(experiment.flags)),
                # Only when set: identities recorded before shared state existed stay equal.
                **({"shared_state": _digest(experiment.shared_state)} if experiment.shared_state is not None else {}),
            }
        return components

    def _source(self, entry: Any) -> dict[str, str]:
        if entry.path is not None:
            return self.closures.closure(entry.path)
        return self._function_source(entry.eval.test)

    def _function_source(self, function: Any) -> dict[str, str]:
        """An eval or agent made in code (no file of its own): the file its function is written in."""
        try:
            file = inspect.getsourcefile(function)
        except TypeError:
            file = None
        if file is None or not Path(file).resolve().is_relative_to(self.root):
            return {}
        return self.closures.closure(Path(file))

    def _loaded(self, entry: Any, source: Mapping[str, str]) -> dict[str, str]:
        """Text the eval reads that assay knows of: loader calls of its closure's modules and the
        literal paths its closure sends with `send_file` (relative to the eval's folder)."""
        if entry.path is None:
            return {}
        files: dict[Path, None] = dict.fromkeys(loaded_by(self.closures.files(entry.path)))
        for literal in self.closures.sent_files(entry.path):
            sent = Path(literal)
            files[(sent if sent.is_absolute() else entry.path.parent / sent).resolve()] = None
        loaded = {self.closures.relative(path): self._content(path) for path in files}
        return {name: digest for name, digest in loaded.items() if name not in source}

    def _content(self, path: Path) -> str:
        digest = self._contents.get(path)
        if digest is None:
            try:
                digest = content_hash(path.read_bytes())
            except OSError:
                digest = "missing"
            self._contents[path] = digest
        return digest

    def _fixtures(self, uploads: list[Path]) -> dict[str, str]:
        """Files a sandbox layer uploads (a fixture folder is hashed file by file)."""
        found: dict[str, str] = {}
        for source in uploads:
            if source.is_dir():
                for folder, names, files in os.walk(source):
                    names[:] = sorted(name for name in names if name not in _FIXTURE_SKIPPED)
                    for name in sorted(files):
                        path = Path(folder) / name
                        found[self.closures.relative(path)] = self._content(path)
            else:
                found[self.closures.relative(source)] = self._content(source)
        return found

    def _agent(self, entry: Any) -> tuple[dict[str, str], str]:
        cached = self._agents.get(entry.id)
        if cached is None:
            agent = entry.experiment.agent
            files = self.closures.closure(entry.path) if entry.path is not None else {}
            if entry.path is not None:  # (keyed as the closure keys it)
                path = Path(entry.path) if Path(entry.path).is_absolute() else Path(entry.path).resolve()
                own = self.closures.relative(path)
                if own in files:
                    whole, files = files[own], {**files, own: _experiment_file_digest(path, files[own])}
                    if files[own] != whole:  # runs recorded before hashed the whole file: `same_file_hashed_whole`
                        self._whole_files[entry.id] = whole
            files = {**files, **self._function_source(getattr(agent, "send", None))}
            send = getattr(agent, "send", None)
            files = {**files, **self._command_files(getattr(send, "agent_command", None), getattr(send, "agent_folder", None))}
            cached = self._agents[entry.id] = (files, _digest({"name": agent.name, "files": files}))
        return cached

    def _command_files(self, command: Any, folder: Path | None = None) -> dict[str, str]:
        """The project files a process agent's command names (`node agents/agent.mjs`: the script; a Python
        one with the project modules it imports), as the process, started in `folder` (the project's, for one
        an experiment file made; else the current folder), finds them."""
        if not isinstance(command, str):
            return {}
        try:
            words = shlex.split(command)
        except ValueError:  # the agent's setup says what is wrong with it
            return {}
        found: dict[str, str] = {}
        for word in words[1:]:
            path = Path(word).expanduser()
            path = (path if path.is_absolute() else (folder or Path.cwd()) / path).resolve()
            if not path.is_relative_to(self.root) or not path.is_file():
                continue
            if path.suffix == ".py":
                found.update(self.closures.closure(path))
            else:
                found[self.closures.relative(path)] = self._content(path)
        return found

    def _sandbox(self, binding: Any, definition: Any) -> dict[str, Any] | None:
        """The pair's linked sandbox: each layer's template and prepare steps, the diff rules; None without one."""
        if binding is None:
            return None
        from assay.agent.sandbox.layers import Upload

        uploads: list[Path] = []
        layers = []
        for layer in binding.layers:
            steps = []
            for step in layer.prepares:
                if isinstance(step, Upload):
                    uploads.append(step.source.resolve())
                    steps.append(f"upload {self.closures.relative(step.source.resolve())} -> {step.target or '.'}")
                else:
                    steps.append(step.describe())
            template = layer.provider.describe() if layer.provider is not None else None
            layers.append({"template": template, "prepare": steps, "setups": len(layer.setups),
                           "teardowns": len(layer.teardowns)})
        description = {"owner": binding.template_owner, "layers": layers, "diff": definition.diff}
        # Host paths (a Dockerfile's folder) are named relative to the project, so a clone elsewhere matches.
        text = _canonical(description).replace(str(self.root), "<project>")
        return {**json.loads(text), "uploads": uploads}


# ---------------------------------------------------------------------------------------------
# What changed


def _file_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    return sorted(path for path in set(old) | set(new) if old.get(path) != new.get(path))


def _named(paths: list[str], limit: int = 3) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def identity_changes(old: ExecutionIdentity, new: ExecutionIdentity) -> list[Reason]:
    """Every component (but the timeout, which the duration decides) that differs, most specific first."""
    reasons: list[Reason] = []
    changed = {name for name in COMPONENTS if old.components.get(name) != new.components.get(name)}
    if "source" in changed:
        paths = _file_changes(old.files.get("source", {}), new.files.get("source", {}))
        own = new.values.get("eval_file")
        if own in paths:
            reasons.append(Reason("eval-source-changed", f"eval source changed ({own})"))
        helpers = [path for path in paths if path != own]
        if helpers:
            reasons.append(Reason("helper-changed", f"helper changed ({_named(helpers)})"))
        if not paths:
            reasons.append(Reason("eval-source-changed", "eval source changed"))
    if "loaded" in changed:
        paths = _file_changes(old.files.get("loaded", {}), new.files.get("loaded", {}))
        reasons.append(Reason("loaded-file-changed", f"loaded file changed ({_named(paths)})" if paths else
                              "loaded files changed"))
    for name, code, label in (("model", "model-changed", "model"), ("effort", "effort-changed", "reasoning effort")):
        if name in changed:
            reasons.append(Reason(code, f"{label} changed ({old.values.get(name)} → {new.values.get(name)})"))
    if "flags" in changed:
        reasons.append(Reason("flags-changed", "flags changed"))
    if "judge" in changed:
        reasons.append(Reason("judge-changed", "judge changed"))
    if "sandbox" in changed:
        reasons.append(Reason("sandbox-changed", "sandbox changed"))
    if "group" in changed:
        old_group, new_group = old.values.get("group"), new.values.get("group")
        reasons.append(Reason("eval-group-changed", f"eval group changed ({old_group or 'none'} → {new_group or 'none'})"
                              if old_group != new_group else f"eval group {new_group} changed its members"))
    if "shared_state" in changed:
        reasons.append(Reason("shared-state-changed", "shared state key changed"))
    if "agent" in changed:
        if old.values.get("agent") != new.values.get("agent"):
            reasons.append(Reason("agent-changed", f"agent changed ({old.values.get('agent')} → {new.values.get('agent')})"))
        paths = _file_changes(old.files.get("agent", {}), new.files.get("agent", {}))
        own = new.values.get("experiment_file")
        if own in paths:
            reasons.append(Reason("experiment-changed", f"experiment changed ({own})"))
        others = [path for path in paths if path != own]
        if others:
            reasons.append(Reason("agent-changed", f"agent changed ({_named(others)})"))
        if not paths and old.values.get("agent") == new.values.get("agent"):
            reasons.append(Reason("agent-changed", "agent changed"))
    return reasons


def _experiment_file_digest(path: Path, whole: str) -> str:
    """The digest of an experiment file's code with its `Experiment(...)` settings that are not hashed
    (`_SETTINGS_NOT_HASHED`) left out, read from its syntax tree (so a comment or the layout is no change either);
    `whole`, its content digest, when it cannot be read or parsed."""
    import ast

    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return whole
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        ) == "Experiment":
            node.keywords = [keyword for keyword in node.keywords if keyword.arg not in _SETTINGS_NOT_HASHED]
    return content_hash(ast.dump(tree).encode())


def same_file_hashed_whole(old: ExecutionIdentity, new: ExecutionIdentity) -> bool:
    """Whether `old` differs from `new` only in how the experiment file was hashed: recorded when the whole file was
    hashed (before its settings' values were left out, 2026-12-07) from the very file there is now. Such a slot
    is carried, not run again (and paid for) once for every project after the upgrade."""
    whole, own = new.values.get("experiment_file_whole"), new.values.get("experiment_file")
    if not whole or not own:
        return False
    names = set(old.components) | set(new.components)
    if {name for name in names if old.components.get(name) != new.components.get(name)} != {"agent"}:
        return False
    return old.values.get("agent") == new.values.get("agent") and \
        dict(old.files.get("agent", {})) == {**new.files.get("agent", {}), own: whole}

