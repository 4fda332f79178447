"""A pytest plugin (installed with assay, nothing to configure): a project's agent evals as pytest items.

In a folder with `evals/` and a `[tool.assay]` table in pyproject.toml, every eval file becomes a
collector with one item per eval × experiment × attempt. An item fails with the failing assertions
as its text, skips as skipped evals do, carries the eval's tags as markers (so `-m` and `-k`
select), and the whole session is recorded in the results store like `assay agent run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path
from typing import Any

import pytest

_STATE = pytest.StashKey["_Session"]()
_MARKER = re.compile(r"[^A-Za-z0-9_]")
_EVALS_DIR = "evals"  # assay.agent.project.EVALS_DIR, spelt here so an ordinary suite's files import none of assay


def _project_of(path: Path) -> Path | None:
    """The project folder an eval file belongs to: the parent of its `evals/`, with [tool.assay]."""
    if path.suffix != ".py" or _EVALS_DIR not in path.parent.parts:
        return None  # a file of an ordinary test suite: nothing of assay is imported for it
    from assay.agent.discovery import EVAL_ENTRY, EVAL_SUFFIX
    from assay.agent.project import EVALS_DIR

    name = path.name
    if not (name == EVAL_ENTRY or (name.endswith(EVAL_SUFFIX) and len(name) > len(EVAL_SUFFIX))):
        return None
    for folder in path.parents:
        if folder.name == EVALS_DIR:
            pyproject = folder.parent / "pyproject.toml"
            try:
                declared = "[tool.assay" in pyproject.read_text(encoding="utf-8")
            except OSError:
                return None
            return folder.parent if declared else None
    return None


class _Project:
    """One project's discovery, agents and judge, kept warm for every item of the session."""

    def __init__(self, root: Path, loop: asyncio.AbstractEventLoop) -> None:
        from assay.agent.discovery import discover_evals, discover_experiments, select_evals
        from assay.agent.identity import IdentityBuilder
        from assay.agent.judge_preflight import PreflightedJudge
        from assay.agent.judging import LLMJudge
        from assay.agent.project import load_dotenv, load_project_config
        from assay.agent.run_kind import project_judge_cache
        from assay.agent.run_options import RunOptions
        from assay.agent.runner import AgentRun

        self.root = root
        load_dotenv(root)
        config = load_project_config(root)
        self.evals = discover_evals(root)
        self.experiments = discover_experiments(root)
        self.selected = {entry.id: {e.id for e in select_evals(entry, self.evals)} for entry in self.experiments}
        self.project_judge = config.judge
        self.pricing = config.pricing
        # The judge `assay agent run` has: the project's judge cache (a second session pays for no judge call the
        # first one made), and the preflight's verdicts, given before the first attempt runs (`preflight`).
        self.judge = LLMJudge(cache=project_judge_cache(root))
        self.checked_judge = PreflightedJudge(self.judge, {})
        self.preflight_planned: dict[str, Any] | None = None  # the endpoints planned (EndpointUse each), once probed
        options = RunOptions(
            concurrency=1, config_timeout=config.timeout, pricing=config.pricing, project_judge=config.judge,
            judge=self.checked_judge,
        )
        self.run = AgentRun([], options)
        # Each attempt is recorded with the execution identity `assay agent run` gives it, so the next run
        # carries what the session ran instead of running it again as if recorded before carry existed.
        self.identities = IdentityBuilder(root, project_judge=config.judge, config_timeout=config.timeout)
        self.loop = loop
        self.results: list[Any] = []
        self.order: list[int] = []  # each result's item's place in the session's collection (xdist's workers share it)

    def evals_in(self, path: Path) -> list[Any]:
        return [entry for entry in self.evals if entry.path is not None and entry.path.resolve() == path.resolve()]

    def preflight(self, items: list[Any]) -> None:
        """Once, before this project's first attempt: one probe per judge endpoint its selected items call, as
        `assay agent run` does; an endpoint that fails it makes its judge assertions unavailable at once instead
        of each waiting out its retries."""
        if self.preflight_planned is not None:
            return
        from assay.agent.judge_preflight import PREFLIGHT_TIMEOUT_S, planned_endpoints, unreachable_endpoints
        from assay.agent.judging import merged_judge_config

        configs = [
            merged_judge_config(self.project_judge, item.planned.experiment.experiment.judge,
                                item.planned.eval.eval.judge)
            for item in items if isinstance(item, AssayEvalItem) and item.project is self
        ]
        endpoints = planned_endpoints(config for config in configs if config is not None)
        self.preflight_planned = endpoints
        if endpoints:
            unreachable = self.loop.run_until_complete(unreachable_endpoints(endpoints, PREFLIGHT_TIMEOUT_S))
            self.checked_judge.unreachable.update(unreachable)


class _Session:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.projects: dict[Path, _Project] = {}
        self.broken: dict[Path, Exception] = {}  # a project that cannot load fails each of its files the same way
        self.tags: set[str] = set()  # the markers the collected evals' tags became
        self.marked: set[str] = set()  # every marker of every collected item, selected or not
        self.keywords: set[str] = set()  # what `-k` matches of every collected item (case folded), selected or not
        self.eval_ids: set[str] = set()  # the collected evals' ids
        # Under xdist, on the controller: each worker's share of a project's attempts (`_worker_share`), by project.
        self.shares: dict[str, list[dict[str, Any]]] = {}
        self.order: dict[str, int] | None = None  # item node id -> its place in the collection, made on first use

    def project(self, root: Path) -> _Project:
        from assay.errors import AssayError

        if root in self.broken:
            raise self.broken[root]
        if root not in self.projects:
            try:
                self.projects[root] = _Project(root, self.loop)
            except AssayError as error:
                self.broken[root] = error
                raise
        return self.projects[root]


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = _Session()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    root = _project_of(file_path)
    if root is None:
        return None
    return AssayEvalFile.from_parent(parent, path=file_path)


class AssayEvalFile(pytest.File):
    """An eval file of an assay project: one item per eval it defines × experiment × attempt."""

    def collect(self) -> Any:
        from assay.agent.plan import PlannedAttempt, link_plan
        from assay.errors import AssayError

        root = _project_of(self.path)
        assert root is not None
        try:
            project = self.config.stash[_STATE].project(root)
        except AssayError as error:
            # The message says what to fix (a file that does not import, a bad [tool.assay] value), as
            # `assay agent run` says it; assay's own frames above it would only bury it.
            raise self.CollectError(f"assay project {root}: {error}") from None
        for entry in project.evals_in(self.path):
            for experiment in project.experiments:
                if entry.id not in project.selected[experiment.id]:
                    continue
                count = experiment.experiment.attempts
                for ordinal in range(count):
                    name = f"{entry.id}[{experiment.id}]" + (f"#{ordinal + 1}" if count > 1 else "")
                    [planned] = link_plan([PlannedAttempt(0, experiment, entry, ordinal)])  # a sandbox, if any
                    item = AssayEvalItem.from_parent(self, name=name, project=project, planned=planned)
                    self.config.stash[_STATE].eval_ids.add(entry.id)
                    for tag in entry.eval.tags:
                        marker = _MARKER.sub("_", tag)
                        self.config.stash[_STATE].tags.add(marker)
                        self.config.addinivalue_line("markers", f"{marker}: assay eval tag {tag!r}")
                        item.add_marker(marker)
                    yield item


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Note every marker of what was collected, before `-m` deselects any of it."""
    state: _Session | None = config.stash.get(_STATE, None)
    if state is not None:
        state.marked.update(marker.name for item in items for marker in item.iter_markers())
        state.keywords.update(str(name).casefold() for item in items for name in item.keywords)


def pytest_collection_finish(session: pytest.Session) -> None:
    """`-m ordrs` deselected every eval in silence: a word of `-m` that is no marker of anything collected, where
    evals were, names the tag meant (as `assay agent run --tag ordrs` does); a word of `-k` that is part of no
    collected name names the eval id meant."""
    state: _Session | None = session.config.stash.get(_STATE, None)
    if state is None or not state.eval_ids:  # no eval was collected (every tag is an eval's)
        return
    from assay.core.format import did_you_mean, join_first

    keyword = session.config.getoption("keyword", "") or ""
    if keyword and state.eval_ids:
        # `-k refnd` deselected every eval in silence too: a word that is part of no collected name says which
        # eval id (or part of one) was meant.
        parts = sorted(state.eval_ids | {part for eval_id in state.eval_ids for part in eval_id.split("/") if part})
        for word in dict.fromkeys(re.findall(r"[\w:+\-.\[\]\\/]+", keyword)):
            if word in ("and", "or", "not") or any(word.casefold() in name for name in state.keywords):
                continue
            evals = join_first(sorted(state.eval_ids), separator=", ")
            _say(session, f"assay: -k {keyword!r}: no eval id or test name contains {word!r}"
                          f"{did_you_mean(word, parts)} (the evals: {evals})")
    expression = session.config.getoption("markexpr", "") or ""
    if not state.tags or not expression:
        return

    registered = {line.split(":")[0].split("(")[0].strip() for line in session.config.getini("markers")}
    for word in dict.fromkeys(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expression)):
        if word in ("and", "or", "not") or word in state.marked or word in registered:
            continue
        known = ", ".join(sorted(state.tags))
        _say(session, f"assay: -m {expression!r}: no eval has the tag {word!r}"
                      f"{did_you_mean(word, sorted(state.tags))} (the evals' tags: {known})")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist's controller: gather each worker's share of the attempts, recorded as one run at the end."""
    state: _Session | None = node.config.stash.get(_STATE, None)
    output = getattr(node, "workeroutput", None) or {}
    if state is not None:
        for root, share in output.get("assay_shares", {}).items():
            state.shares.setdefault(root, []).append(share)


class AssayEvalFailed(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class AssayEvalItem(pytest.Item):
    def __init__(self, *, project: _Project, planned: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.project = project
        self.planned = planned

    def runtest(self) -> None:
        from assay.agent.report import failure_lines, verdict_label
        from assay.agent.slot_result import slot_result

        self.project.preflight(self.session.items)
        result = self.project.loop.run_until_complete(self.project.run.run_one(self.planned))
        if result is None:
            pytest.skip("interrupted before it started")
        result = slot_result(result, identity=self.project.identities.of(self.planned).to_json())
        result.position = len(self.project.results)
        self.project.results.append(result)
        state = self.config.stash[_STATE]
        if state.order is None:
            state.order = {item.nodeid: index for index, item in enumerate(self.session.items)}
        self.project.order.append(state.order.get(self.nodeid, len(state.order)))
        if result.verdict in ("failed", "errored"):
            # The first line is what `pytest -q`'s short summary shows after the item's id: the first reason.
            lines = failure_lines(result) or [f"{verdict_label(result)}: {self.name}"]
            raise AssayEvalFailed("\n".join(lines))
        if result.verdict == "skipped":
            pytest.skip("; ".join(result.failing) or "skipped by the eval")

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, AssayEvalFailed):
            return excinfo.value.text
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"assay eval {self.name}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close every project's agents and judge, then record what ran (one run per project)."""
    state: _Session | None = session.config.stash.get(_STATE, None)
    if state is None:
        return
    if not state.projects:  # an ordinary test suite, or xdist's controller: nothing of assay's to close
        state.loop.close()
        for root, shares in sorted(state.shares.items()):
            _record_shares(session, Path(root), shares, exitstatus)
        return
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    try:
        # Ctrl-C leaves the attempt it stopped as a pending task: cancel it before its agent is closed.
        pending = asyncio.all_tasks(state.loop)
        for task in pending:
            task.cancel()
        if pending:
            state.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        for project in state.projects.values():
            state.loop.run_until_complete(project.run.close())
            state.loop.run_until_complete(project.judge.aclose())
            _warn_unreachable_judges(session, project)
            if not project.results:
                continue
            if interrupted:
                # As `assay agent run` after Ctrl-C: a cut-short session is no run to compare with.
                _say(session, f"assay: the session was interrupted, so its {len(project.results)} finished "
                              f"attempt(s) of {project.root} are not recorded in the results store")
                continue
            selected = sum(1 for item in session.items if isinstance(item, AssayEvalItem) and item.project is project)
            workeroutput = getattr(session.config, "workeroutput", None)
            if workeroutput is not None:
                # An xdist worker ran only its share of the session: it hands it to the controller, which records
                # every worker's share as one run (`_record_shares`), not one part-run per worker.
                workeroutput.setdefault("assay_shares", {})[str(project.root)] = _worker_share(project, selected)
                continue
            stopped = session.shouldfail or session.shouldstop
            if stopped and len(project.results) < selected:
                # `-x` / `--maxfail` stopped it before the rest of what was selected ran: as cut short as Ctrl-C.
                _say(session, f"assay: the session stopped early ({stopped}), so its {len(project.results)} "
                              f"finished attempt(s) of {project.root} are not recorded in the results store "
                              f"({selected - len(project.results)} selected attempt(s) did not run)")
                continue
            _record(project.root, list(project.results), project.judge.retries, project.judge.usage, project.pricing)
    finally:
        state.loop.close()


def _record(root: Path, results: list[Any], retries: dict[str, int], usage: dict[str, Any], pricing: Any) -> None:
    """The session's attempts of one project, recorded as one run, as `assay agent run` records its run."""
    from assay.agent.judging import judge_spend
    from assay.agent.run_outcome import RunOutcome
    from assay.agent.units import agent_run_manifest, agent_run_units
    from assay.core.run import pipeline
    from assay.core.run_events import RunFinished

    outcome = RunOutcome(results, False, [], sum(r.duration_seconds for r in results), retries,
                         judge_spend(usage, pricing or {}))
    pipeline.record(RunFinished(
        "agent", "", outcome.exit_code, outcome, home=root, build_units=lambda: agent_run_units(outcome),
        build_manifest=lambda code: agent_run_manifest(outcome, {"pytest": True}, root, code),
    ))


def _worker_share(project: _Project, selected: int) -> dict[str, Any]:
    """An xdist worker's attempts of one project, for the controller: written to a file (a share can be large, and
    xdist sends a worker's output in one message), with the judge's retries and usage to add up."""
    import json
    import os
    import tempfile

    descriptor, path = tempfile.mkstemp(prefix="assay-pytest-share-", suffix=".jsonl")
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        for place, result in zip(project.order, project.results, strict=True):
            file.write(json.dumps({"place": place, "result": result.to_json()}, ensure_ascii=False) + "\n")
    usage = {model: dict(counts) for model, counts in project.judge.usage.items()}
    return {"path": path, "selected": selected, "retries": dict(project.judge.retries), "usage": usage}


def _record_shares(session: pytest.Session, root: Path, shares: list[dict[str, Any]], exitstatus: int) -> None:
    """xdist's controller: the workers' shares of a project's attempts, recorded as one run in collection order;
    a session cut short (Ctrl-C, `-x`, a worker lost) is not recorded, as without xdist."""
    import json
    import os

    from assay.agent.slot_result import SlotResult

    placed: list[tuple[int, Any]] = []
    try:
        for share in shares:
            with open(share["path"], encoding="utf-8") as file:
                placed += [(line["place"], SlotResult.from_json(line["result"])) for line in map(json.loads, file)]
    finally:
        for share in shares:
            with contextlib.suppress(OSError):
                os.unlink(share["path"])
    selected = max(share["selected"] for share in shares)
    stopped = session.shouldfail or session.shouldstop
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        _say(session, f"assay: the session was interrupted, so its {len(placed)} finished "
                      f"attempt(s) of {root} are not recorded in the results store")
        return
    if len(placed) < selected:
        why = f"the session stopped early ({stopped})" if stopped else "not every selected attempt finished"
        _say(session, f"assay: {why}, so its {len(placed)} finished attempt(s) of {root} are not recorded in the "
                      f"results store ({selected - len(placed)} selected attempt(s) did not run)")
        return
    placed.sort(key=lambda pair: pair[0])
    results = [result for _, result in placed]
    for position, result in enumerate(results):
        result.position = position
    from assay.agent.evidence import sum_counts
    from assay.agent.project import load_project_config
    from assay.judge.usage import merged_usage

    retries = sum_counts(share["retries"] for share in shares)
    usage = merged_usage(share["usage"] for share in shares)
    _record(root, results, retries, usage, load_project_config(root).pricing)


def _warn_unreachable_judges(session: pytest.Session, project: _Project) -> None:
    """One line per judge endpoint that failed the preflight, as `assay agent run` warns once for it."""
    from assay.agent.judge_preflight import PRECHECK_FAILED, unreachable_warnings

    warnings = unreachable_warnings(project.results, project.preflight_planned or {}, project.checked_judge.unreachable)
    for message, _ in warnings:
        _say(session, f"assay: warning [{PRECHECK_FAILED}]: {message}")


def _say(session: pytest.Session, line: str) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()  # after a file's results
        if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):  # after `-q`'s progress dots
            reporter.write("\n")
        reporter.write_line(line)
    else:
        import sys

        print(line, file=sys.stderr)
