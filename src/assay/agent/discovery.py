"""Finding evals and experiments in a project, and selecting which (experiment, eval) pairs run.

Evals: `evals/**/*_eval.py` (id = path without `_eval.py`) and `evals/<dir>/eval.py` (id = dir);
eval groups: `evals/**/*_group.py` (id = path without `_group.py`), each naming its member evals; experiments: `experiments/**/*.py` (id = path without `.py`); `_`-prefixed files and folders are shared code.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.adapters.loading import exec_module_file
from assay.agent.definition import Eval, EvalDescriptor, EvalGroup
from assay.agent.experiment import Experiment
from assay.agent.misspelt import keyword_meant
from assay.agent.project import EVALS_DIR, EXPERIMENTS_DIR, nearby_project_hint
from assay.errors import AssayError, ConfigError, UsageError

EVAL_SUFFIX = "_eval.py"
GROUP_SUFFIX = "_group.py"
EVAL_ENTRY = "eval.py"
EVAL_FILE_PATTERNS = f"{EVALS_DIR}/**/*{EVAL_SUFFIX} or {EVALS_DIR}/<folder>/{EVAL_ENTRY}"
_DEFINERS = ("define_eval", "define_score_eval")
EVALS_EXPORT = "evals"  # a file's explicit list of its evals: it wins over every other public name
_NOT_EXPORTED = object()


@functools.lru_cache(maxsize=1024)
def _folder_of(path: Path) -> Path:
    """An eval file's folder, one object per file: every attempt asks, and a file defines many evals."""
    return path.parent


@dataclass(frozen=True, slots=True)
class GroupRef:
    """The eval group an eval belongs to: its id and a hash of its membership (part of carry identity)."""

    id: str
    definition_hash: str
    path: Path | None = None

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "definition_hash": self.definition_hash}


@dataclass(frozen=True, slots=True)
class EvalEntry:
    id: str
    eval: Eval
    path: Path | None = None
    digest: str = ""  # SHA-256 of the defining file: part of a checkpoint's identity
    group: GroupRef | None = None  # the eval group it runs in (serially, sharing one sandbox)

    @property
    def directory(self) -> Path | None:
        return _folder_of(self.path) if self.path is not None else None

    @property
    def descriptor(self) -> EvalDescriptor:
        return EvalDescriptor(self.id, self.eval.description, self.eval.tags, self.eval.kind, self.eval.metadata)


@dataclass(frozen=True)
class ExperimentEntry:
    id: str
    experiment: Experiment
    path: Path | None = None

    @property
    def group(self) -> str:
        return self.id.split("/", 1)[0]


def _skipped(relative: Path) -> bool:
    return any(part.startswith(("_", ".")) for part in relative.parts)


def _import(path: Path, project: Path, namespace: str) -> Any:
    if str(project) not in sys.path:
        sys.path.insert(0, str(project))  # so files can import the project's `agents/` and helpers
    name = f"assay_agent_{namespace}_{hashlib.sha256(os.fsencode(path)).hexdigest()[:16]}"
    try:
        module = exec_module_file(path, name)
    except AssayError as error:  # (`define_eval(tags="smoke")`: the line that made the call is named too)
        raise ConfigError(f"{path}{_line_in(path, error)}: {error}") from None
    except (Exception, SystemExit) as error:
        raise ConfigError(f"could not import {path}{_line_in(path, error)}: {type(error).__name__}: {error}"
                          f"{keyword_meant(error)}") from error
    if module is None:
        raise ConfigError(f"could not load {path}")
    return module


def _line_in(path: Path, error: BaseException) -> str:
    """` (line N)`: the last line of `path` the error passed through (a SyntaxError names its own line)."""
    import traceback

    if isinstance(error, SyntaxError):
        return ""
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == str(path)]
    return f" (line {lines[-1]})" if lines and lines[-1] else ""


def _is_eval_collection(value: Any) -> bool:
    if isinstance(value, Eval):
        return True
    if isinstance(value, (list, tuple)):
        return bool(value) and all(isinstance(item, Eval) for item in value)
    if isinstance(value, Mapping):
        return bool(value) and all(isinstance(item, Eval) for item in value.values())
    return False


def _not_an_eval(value: Any) -> str:
    """What an `evals` export that is not a collection of evals is: its type, or (a list or dict whose items are
    not all evals: `[test, 5]`) the first item that is none, which "not list" left the author to find."""
    items = (list(value.items()) if isinstance(value, Mapping) else list(enumerate(value))
             if isinstance(value, (list, tuple)) else [])
    for key, item in items:
        if not isinstance(item, Eval):
            where = f"[{key!r}]" if isinstance(value, Mapping) else f"[{key}]"
            return f"a {type(value).__name__} whose {EVALS_EXPORT}{where} is {type(item).__name__} {item!r:.60}"
    return "an empty " + type(value).__name__ if items == [] and isinstance(value, (list, tuple, Mapping)) \
        else type(value).__name__


def _check_key(key: Any, path: Path) -> str:
    if not isinstance(key, str) or not key or key in (".", "..") or any(
        character in key for character in "/\\"
    ) or any(ord(character) < 32 or ord(character) == 127 for character in key):
        raise ConfigError(f"{path}: eval key {key!r} must be one non-empty path segment (no '/', '\\', '.', '..')")
    return key


def _evals_of(module: Any, path: Path, base_id: str) -> list[tuple[str, Eval]]:
    # An explicit `evals` export is the file's answer to "which evals": the decorated functions it
    # gathers stay public names too, so without this rule the export would only add one more.
    explicit = vars(module).get(EVALS_EXPORT, _NOT_EXPORTED)
    if explicit is not _NOT_EXPORTED:
        if not _is_eval_collection(explicit):
            raise ConfigError(
                f"{path}: `{EVALS_EXPORT}` must be an eval or a non-empty list or dict of evals (made with "
                f"@define_eval), not {_not_an_eval(explicit)}"
            )
        exported = [(EVALS_EXPORT, explicit)]
    else:
        exported = [
            (name, value) for name, value in vars(module).items()
            if not name.startswith("_") and _is_eval_collection(value)
        ]
    if not exported:
        raise ConfigError(
            f"{path} defines no eval: decorate `async def test(t)` with @define_eval, or export a list or dict of evals"
        )
    if len(exported) > 1:
        from assay.core.format import join_first

        # (a module spreading 20,000 evals into its globals named every one of them: a 200 KB line)
        names = join_first([name for name, _ in exported], limit=10, separator=", ")
        raise ConfigError(
            f"{path} defines several evals ({names}); export one eval, or list the ones to run in "
            f"`{EVALS_EXPORT} = [...]` or `{EVALS_EXPORT} = {{...}}` (an `{EVALS_EXPORT}` export wins over the "
            "other names), or start the other names with `_`"
        )
    value = exported[0][1]
    if isinstance(value, Eval):
        return [(base_id, value)]
    if isinstance(value, Mapping):
        return [(f"{base_id}/{_check_key(key, path)}", value[key]) for key in sorted(value)]
    return [(f"{base_id}/{position:04d}", item) for position, item in enumerate(value)]


def _is_eval_file_name(name: str) -> bool:
    return name == EVAL_ENTRY or (name.endswith(EVAL_SUFFIX) and len(name) > len(EVAL_SUFFIX))


def _decodable(relative: Path, root: Path) -> None:
    """Refuse a file name the locale could not decode: it becomes an id that records and the results
    store (UTF-8 text) cannot hold. Only where the file system's encoding is not UTF-8 (an ASCII locale),
    where a name's non-ASCII bytes reach Python as lone surrogates."""
    text = relative.as_posix()
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode("utf-8", "replace")
        raise ConfigError(
            f"{root.name}/{shown}: this locale's file-system encoding ({sys.getfilesystemencoding()}) cannot read "
            "the file's name, which makes its id; run assay in a UTF-8 locale (LC_ALL=C.UTF-8) or rename the file"
        ) from None


def _eval_files(root: Path) -> list[tuple[str, Path]]:
    files: list[tuple[str, Path]] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if _skipped(relative) or not _is_eval_file_name(path.name):
            continue
        _decodable(relative, root)
        if path.name == EVAL_ENTRY:
            if len(relative.parts) == 1:
                raise ConfigError(f"{path}: an eval.py entry must be inside a folder of {root} (its id is the folder)")
            files.append((relative.parent.as_posix(), path))
        else:
            files.append((relative.with_name(path.name[: -len(EVAL_SUFFIX)]).as_posix(), path))
    return files


def _names_a_definer(node: ast.AST, definers: tuple[str, ...] = _DEFINERS) -> bool:
    return any(
        (isinstance(part, ast.Name) and part.id in definers)
        or (isinstance(part, ast.Attribute) and part.attr in definers)
        for part in ast.walk(node)
    )


def _defines_evals_at_top_level(source: str, definers: tuple[str, ...] = _DEFINERS) -> bool:
    """Whether the module itself defines an eval (or, with `definers`, a group): `@define_eval` on a
    top-level function, or a call in a top-level statement. A helper whose functions build evals for
    eval files is not one."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return False  # not importable either way; no guess about what it meant
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_names_a_definer(decorator, definers) for decorator in statement.decorator_list):
                return True
        elif isinstance(statement, (ast.Import, ast.ImportFrom, ast.ClassDef)):
            continue
        elif _names_a_definer(statement, definers):
            return True
    return False


_GROUP_DEFINERS = ("define_eval_group",)


def unmatched_eval_files(project: Path, definers: tuple[str, ...] = _DEFINERS) -> list[Path]:
    """Python files under evals/ that define evals (or, with `definers`, groups) but are not named like
    eval files (group files), so discovery never imports them (a file named `checkout.py` instead of
    `checkout_eval.py`, `flow_grop.py` instead of `flow_group.py`)."""
    root = project.resolve() / EVALS_DIR
    found = []
    for path in sorted(root.rglob("*.py")) if root.is_dir() else ():
        if (_skipped(path.relative_to(root)) or _is_eval_file_name(path.name) or path.name == "__init__.py"
                or (path.name.endswith(GROUP_SUFFIX) and len(path.name) > len(GROUP_SUFFIX))):
            continue
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if any(name in source for name in definers) and _defines_evals_at_top_level(source, definers):
            found.append(path)
    return found


_warned_unmatched: set[Path] = set()  # once per file and process: list, plan and workers all discover


def warn_about_unmatched_eval_files(project: Path) -> None:
    """One line on stderr per such file, naming it and the file names discovery reads."""
    project = project.resolve()
    for path in unmatched_eval_files(project):
        if path in _warned_unmatched:
            continue
        _warned_unmatched.add(path)
        print(
            f"warning: {path.relative_to(project).as_posix()} defines an eval but is skipped: eval files are "
            f"{EVAL_FILE_PATTERNS} (rename it {path.stem}{EVAL_SUFFIX})",
            file=sys.stderr,
        )
    for path in unmatched_eval_files(project, _GROUP_DEFINERS):
        if path in _warned_unmatched:
            continue
        _warned_unmatched.add(path)
        print(
            f"warning: {path.relative_to(project).as_posix()} defines an eval group but is skipped: a group's file "
            f"is <group id>{GROUP_SUFFIX} (evals/flow{GROUP_SUFFIX} for the group 'flow'); rename it so",
            file=sys.stderr,
        )


def discover_evals(project: Path) -> list[EvalEntry]:
    project = project.resolve()
    root = project / EVALS_DIR
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{root} is a file, not a folder: evals live in the {EVALS_DIR}/ folder of {project}")
    if not root.is_dir():
        raise ConfigError(f"no {EVALS_DIR}/ folder in {project}; "
                          + (nearby_project_hint(project) or "run `assay agent init` there"))
    warn_about_unmatched_eval_files(project)
    entries: dict[str, EvalEntry] = {}
    for base_id, path in _eval_files(root):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        module = _import(path, project, "eval")
        for eval_id, definition in _evals_of(module, path, base_id):
            if eval_id in entries:
                raise ConfigError(f"eval id {eval_id!r} is defined twice: {entries[eval_id].path} and {path}; an id "
                                  "comes from the file's path (and its key in an EVALS table): rename one of them")
            entries[eval_id] = EvalEntry(eval_id, definition, path, digest)
    _with_groups(project, root, entries)
    return [entries[key] for key in sorted(entries)]


def _group_of(module: Any, path: Path) -> EvalGroup:
    found = [value for name, value in vars(module).items() if not name.startswith("_") and isinstance(value, EvalGroup)]
    if len(found) != 1:
        raise ConfigError(
            f"{path} must define exactly one eval group (group = define_eval_group([...eval ids])), found {len(found)}"
        )
    return found[0]


def _group_files(root: Path) -> list[tuple[str, Path]]:
    return [
        (path.relative_to(root).as_posix()[: -len(GROUP_SUFFIX)], path)
        for path in sorted(root.rglob(f"*{GROUP_SUFFIX}"))
        if not _skipped(path.relative_to(root)) and len(path.name) > len(GROUP_SUFFIX)
    ]


def _with_groups(project: Path, root: Path, entries: dict[str, EvalEntry]) -> None:
    """Each group's members get its `GroupRef`; an unknown member or an eval in two groups fails discovery,
    naming the group and its file."""
    from assay.core.format import did_you_mean, join_first

    owner: dict[str, tuple[str, Path]] = {}
    for group_id, path in _group_files(root):
        group = _group_of(_import(path, project, "group"), path)
        where = f"eval group {group_id!r} ({path})"
        for member in group.evals:
            if member not in entries:
                folder = member.rstrip("*").rstrip("/")
                under = sorted(eval_id for eval_id in entries if folder and eval_id.startswith(f"{folder}/"))
                if under:  # `["flow/"]` as an experiment's `evals=` takes it: a group lists each member
                    listed = ", ".join(json.dumps(eval_id) for eval_id in under[:5])
                    listed += ", ..." if len(under) > 5 else ""
                    raise ConfigError(f"{where} names {member!r}, a folder of evals; a group names each member by "
                                      f"its eval id, not by a prefix: define_eval_group([{listed}])")
                hint = did_you_mean(member, entries)
                # (Not "`assay agent list` shows the eval ids": listing discovers this group too, and fails the same way.)
                ids = join_first(sorted(entries), separator=", ")
                raise ConfigError(f"{where} names eval {member!r}, which does not exist{hint} (the evals: {ids})")
            if member in owner:
                other, other_path = owner[member]
                raise ConfigError(
                    f"{where} names eval {member!r}, which is already in eval group {other!r} ({other_path}); "
                    "an eval runs in one group at most"
                )
            owner[member] = (group_id, path)
        definition = json.dumps({"id": group_id, "evals": list(group.evals)}, separators=(",", ":"))
        ref = GroupRef(group_id, hashlib.sha256(definition.encode()).hexdigest()[:16], path)
        for member in group.evals:
            entries[member] = dataclasses.replace(entries[member], group=ref)


_LOADING_PROJECT: ContextVar[Path | None] = ContextVar("assay_loading_project", default=None)


def loading_project() -> Path | None:
    """The project whose experiment files are being imported, for a factory called by one (`process_agent`
    starts its command there); None outside `discover_experiments` (an experiment made in the Python API)."""
    return _LOADING_PROJECT.get()


def discover_experiments(project: Path) -> list[ExperimentEntry]:
    project = project.resolve()
    token = _LOADING_PROJECT.set(project)
    try:
        return _discover_experiments(project)
    finally:
        _LOADING_PROJECT.reset(token)


def _discover_experiments(project: Path) -> list[ExperimentEntry]:
    root = project / EXPERIMENTS_DIR
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{root} is a file, not a folder: experiments live in the {EXPERIMENTS_DIR}/ folder of {project}")
    if not root.is_dir():
        raise ConfigError(f"no {EXPERIMENTS_DIR}/ folder in {project}; add one with an Experiment(agent=...) file")
    entries = []
    for path, relative in _experiment_files(root):
        _decodable(relative, root)
        module = _import(path, project, "experiment")
        found = [value for name, value in vars(module).items() if not name.startswith("_") and isinstance(value, Experiment)]
        if len(found) != 1:
            raise ConfigError(f"{path} must define exactly one Experiment(...), found {len(found)}")
        entries.append(ExperimentEntry(relative.with_suffix("").as_posix(), found[0], path))
    return sorted(entries, key=lambda entry: entry.id)


def _experiment_files(root: Path) -> Iterator[tuple[Path, Path]]:
    """The experiment files under `root` (the project's experiments/), each with its path relative to it: its id."""
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if not _skipped(relative) and path.name != "__init__.py":
            yield path, relative


def experiment_ids(project: Path) -> list[str] | None:
    """The project's experiment ids, told from its files without importing them; None without an experiments/ folder."""
    root = project.resolve() / EXPERIMENTS_DIR
    if not root.is_dir():
        return None
    return [relative.with_suffix("").as_posix() for _, relative in _experiment_files(root)]


def selects_an_experiment(selector: str, ids: Sequence[str]) -> bool:
    return any(experiment_id == selector or _matches_selector(selector, experiment_id) for experiment_id in ids)


def _matches_selector(selector: str, experiment_id: str) -> bool:
    wanted = [part for part in selector.strip("/").split("/") if part]
    if selector.endswith(".py"):
        wanted[-1] = wanted[-1][:-3]
    if wanted and wanted[0] == EXPERIMENTS_DIR and len(wanted) > 1:
        wanted = wanted[1:]  # `experiments/baseline.py` names the same thing as `baseline`
    parts = experiment_id.split("/")
    if not wanted or len(wanted) > len(parts):
        return False
    last = len(wanted) - 1
    return all(wanted[i] == parts[i] for i in range(last)) and parts[last].startswith(wanted[last])


def select_experiments(experiments: Sequence[ExperimentEntry], selector: str | None) -> list[ExperimentEntry]:
    """All for None; an exact id wins; else whole segments match and the last may be a prefix."""
    if not experiments:
        raise UsageError("no experiments found: add a file under experiments/ defining Experiment(agent=...)")
    if selector is None:
        return list(experiments)
    exact = [entry for entry in experiments if entry.id == selector]
    if exact:
        return exact
    chosen = [entry for entry in experiments if _matches_selector(selector, entry.id)]
    if not chosen:
        from assay.core.format import did_you_mean

        ids = [entry.id for entry in experiments]
        hint = did_you_mean(selector, ids, form=" (did you mean {}?)")
        raise UsageError(f"no experiment matches {selector!r}{hint}; experiments: {', '.join(ids)}")
    return chosen


def select_evals(
    experiment: ExperimentEntry,
    evals: Sequence[EvalEntry],
    prefixes: Sequence[str] = (),
    tags: Sequence[str] = (),
) -> list[EvalEntry]:
    """The experiment's own selection, narrowed (never widened) by id prefixes and tags."""
    chosen = []
    for entry in evals:
        if prefixes and not any(entry.id.startswith(prefix) for prefix in prefixes):
            continue
        if tags and not any(tag in entry.eval.tags for tag in tags):
            continue
        try:
            selected = experiment.experiment.selects(entry.descriptor)
        except Exception as error:  # noqa: BLE001 - the experiment file's predicate is user code
            where = f"experiment {experiment.id}" + (f" ({experiment.path})" if experiment.path else "")
            fields = ""
            if isinstance(error, AttributeError) and isinstance(error.obj, EvalDescriptor):
                # `d.tag`: Python's own "Did you mean" is printed only with a traceback, which this error has not.
                from assay.core.format import did_you_mean

                known = [field.name for field in dataclasses.fields(EvalDescriptor)]
                fields = did_you_mean(error.name, known) + f" (an eval descriptor has {', '.join(known)})"
            raise ConfigError(f"{where}: its evals predicate raised {type(error).__name__}: {error}{fields}") from None
        if selected:
            chosen.append(entry)
    return chosen


__all__ = [
    "EVAL_ENTRY", "EVAL_FILE_PATTERNS", "EVAL_SUFFIX", "GROUP_SUFFIX", "EvalEntry", "GroupRef", "ExperimentEntry", "discover_evals",
    "discover_experiments", "experiment_ids", "select_evals", "select_experiments", "selects_an_experiment",
    "unmatched_eval_files",
    "warn_about_unmatched_eval_files",
]
