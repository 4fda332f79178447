"""`assay agent …`: init a project, list evals and experiments, run them, show recorded results.

Exit codes: 0 all passed (or scored/skipped), 1 a failed or errored attempt or an incomplete run,
2 a usage, config or internal error, 130 interrupted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, NoReturn, Optional

import typer

from assay.cli import common
from assay.cli.agent_sandbox import sandbox_app
from assay.errors import AssayError, ConfigError, UsageError

agent_app = typer.Typer(
    rich_markup_mode=None,  # plain help: flags shown as flags, options as `--name <type>`
    help="Agent evals (NiceEval's model): evals drive an agent and assert on its event stream.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PROJECT_HELP = "Project folder (holds evals/, experiments/, pyproject.toml); default: the current folder."
_MINIMAL_CONFIG = "[tool.assay]\n# concurrency = 10   # attempts in flight across experiments\n# timeout = 300      # seconds per attempt\n"


def _project(project: Optional[Path]) -> Path:
    path = (project or Path.cwd()).expanduser().resolve()
    if not path.is_dir():
        raise UsageError(f"project folder does not exist: {path}", "--project")
    return path


def _fail(error: BaseException) -> NoReturn:
    """One line on stderr (results alone go to stdout), the error's exit code."""
    common.fail("Error", error, stderr=True, internal="internal error: ")


@agent_app.command("init")
def init_command(
    directory: Path = typer.Argument(Path("."), help="Folder to set up (created if missing)."),
) -> None:
    """Set up a project: evals/, experiments/, a [tool.assay] table in pyproject.toml and, in a new
    project, a starter agent, eval and experiment that run offline. Existing files are never changed
    (only the [tool.assay] table is appended to a pyproject.toml that lacks one).

    Example: assay agent init my-project && assay agent run --project my-project
    """
    import shlex

    from assay.agent.starter import write_starter_files

    console = common.stdout_console()
    root = directory.expanduser().resolve()
    made = []
    try:
        # The starter goes only into a project that has neither folder yet: an example eval added
        # to a suite that exists would run against its experiments.
        is_new = not (root / "evals").exists() and not (root / "experiments").exists()
        for name in ("evals", "experiments"):
            folder = root / name
            if not folder.exists():
                folder.mkdir(parents=True)
                made.append(f"{name}/")
        if is_new:
            made.extend(write_starter_files(root))
        pyproject = root / "pyproject.toml"
        if not pyproject.exists():
            pyproject.write_text(_MINIMAL_CONFIG, encoding="utf-8")
            made.append("pyproject.toml")
        else:
            text = pyproject.read_text(encoding="utf-8")
            if "[tool.assay]" not in text:
                from assay.core.fsutil import write_atomically

                separator = "" if text.endswith("\n") or not text else "\n"
                write_atomically(pyproject, text + separator + "\n" + _MINIMAL_CONFIG)  # the user's file: never half-written
                made.append("[tool.assay] in pyproject.toml")
        from assay.agent.project import load_project_config

        load_project_config(root)  # a [tool.assay] already there that `run` would refuse: say so now
    except OSError as error:
        _fail(ConfigError(f"could not set up {root}: {error}"))
    except AssayError as error:
        _fail(error)
    run = "assay agent run" if root == Path.cwd().resolve() else f"assay agent run --project {shlex.quote(str(directory))}"
    if "evals/weather_eval.py" in made:
        after = f"Next: {run}  (then replace agents/weather.py with your app and write your own evals)"
    else:
        after = f"Next: write evals/<name>_eval.py and experiments/<name>.py, then run `{run}`."
    console.print(
        f"Initialized {root}: " + (", ".join(made) if made else "nothing to do (already set up)"),
        markup=False, highlight=False,
    )
    console.print(after, markup=False, highlight=False)


@agent_app.command("list")
def list_command(
    project: Optional[Path] = typer.Option(None, "--project", help=PROJECT_HELP),
    tag: Optional[List[str]] = typer.Option(None, "--tag", help="Only evals with this tag (repeatable: any of)."),
    output_json: bool = typer.Option(False, "--json", help="Print a JSON document instead of tables."),
) -> None:
    """List evals (id, tags, description) and experiments; runs nothing."""
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # a closed reader leaves no finished results to speak of
    from assay.agent.discovery import discover_evals, discover_experiments, select_evals
    from assay.agent.project import EXPERIMENTS_DIR, load_dotenv, load_project_config
    from assay.core.report.table import render_table

    try:
        root = _project(project)
        load_project_config(root)  # what `run` would refuse, `list` refuses too
        load_dotenv(root)
        evals = [entry for entry in discover_evals(root) if not tag or any(t in entry.eval.tags for t in tag)]
        experiments = discover_experiments(root) if (root / EXPERIMENTS_DIR).is_dir() else []
        selected = {entry.id: [e.id for e in select_evals(entry, evals)] for entry in experiments}
    except AssayError as error:
        _fail(error)
    if output_json:
        document = {
            "evals": [
                {"id": e.id, "kind": e.eval.kind, "tags": list(e.eval.tags), "description": e.eval.description}
                for e in evals
            ],
            "experiments": [
                {
                    "id": x.id, "agent": x.experiment.agent.name, "model": x.experiment.model,
                    "attempts": x.experiment.attempts, "description": x.experiment.description,
                    "labels": list(x.experiment.labels), "selectedEvalIds": selected[x.id],
                }
                for x in experiments
            ],
        }
        print(json.dumps(document, indent=2))
        return
    console = common.stdout_console()
    rows = [[e.id, e.eval.kind, ", ".join(e.eval.tags), e.eval.description or ""] for e in evals]
    console.print(render_table("Evals", ["eval", "kind", "tags", "description"], rows), markup=False, highlight=False)
    if experiments:
        rows = [
            [x.id, x.experiment.agent.name, x.experiment.model or "-", str(x.experiment.attempts),
             str(len(selected[x.id])), x.experiment.description or ""]
            for x in experiments
        ]
        headers = ["experiment", "agent", "model", "attempts", "evals", "description"]
        console.print(render_table("Experiments", headers, rows), markup=False, highlight=False)


def _positive(option: str, value: Any, *, allow_zero: bool = False, maximum: int | None = None) -> None:
    if value is None:
        return
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{option} must be {'>= 0' if allow_zero else '> 0'}", option)
    if maximum is not None and value > maximum:
        raise UsageError(f"{option} must be at most {maximum:,}", option)


class _RunCommand(typer.core.TyperCommand):
    """`--rerun` takes an optional value (NiceEval's bare `--rerun` means failed), which click cannot
    parse on its own: a bare one is given its default before parsing."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _with_rerun_value(args))


def _with_rerun_value(args: list[str]) -> list[str]:
    from assay.core.format import did_you_mean

    cut = args.index("--") if "--" in args else len(args)  # after `--` everything is an argument
    head, given = args[:cut], []
    for position, argument in enumerate(head):
        given.append(argument)
        following = head[position + 1] if position + 1 < len(head) else None
        if argument == "--rerun" and following not in ("failed", "all"):
            hint = did_you_mean(following or "", ("failed", "all"))
            if hint:  # `--rerun faild`: a misspelt value, not an experiment named like one
                _fail(UsageError(f"--rerun takes failed or all, got {following!r}{hint}", "--rerun"))
            given.append("failed")
    return given + list(args[cut:])


@agent_app.command("run", cls=_RunCommand)
def run_command(
    experiment: Optional[str] = typer.Argument(None, help="Experiment id, folder or prefix; default: all."),
    evals: Optional[List[str]] = typer.Argument(None, help="Eval id prefixes that narrow the experiment's evals."),
    project: Optional[Path] = typer.Option(None, "--project", help=PROJECT_HELP),
    attempts: Optional[int] = typer.Option(None, "--attempts", help="Attempts per eval (overrides experiments)."),
    concurrency: Optional[int] = typer.Option(
        None, "--concurrency", "--max-concurrency", help="Attempts in flight overall (default: config, else 10)."
    ),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Seconds per attempt (wins over every file)."),
    budget: Optional[float] = typer.Option(None, "--budget", help="USD of estimated cost per experiment."),
    tag: Optional[List[str]] = typer.Option(None, "--tag", help="Only evals with this tag (repeatable: any of)."),
    output_json: bool = typer.Option(False, "--json", help="NDJSON on stdout; the last line is the receipt."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Also write a JUnit XML report here."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Checkpoint folder or id to resume."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="List every attempt in the results."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr (results and errors still print)."),
    shard: Optional[str] = typer.Option(None, "--shard", help="Run only shard i of n (e.g. 2/4); combine with `assay runs merge`."),
    executor: str = typer.Option("local", "--executor", help="Where attempts run: local (default) or ray."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Ray cluster to join (default: start a local one)."),
    keep_sandbox: Optional[str] = typer.Option(
        None, "--keep-sandbox", help="Keep sandboxes after their attempts: all, or failed (failed and errored ones)."
    ),
    sandbox: Optional[str] = typer.Option(
        None, "--sandbox", metavar="[local|docker:IMAGE]",
        help="Run every sandbox eval in this provider instead of the one its eval or experiment names "
             "(prepare steps and hooks stay); part of each attempt's execution identity.",
    ),
    telemetry_host: Optional[str] = typer.Option(
        None, "--telemetry-host",
        help="Address the OTLP trace receiver listens on (default 127.0.0.1; another one exposes it, with a "
             "warning). Starts the receiver even without [tool.assay.telemetry].",
    ),
    rerun: Optional[str] = typer.Option(
        None, "--rerun", metavar="[failed|all]",
        help="Run again what earlier runs published: bare or `failed` reruns failed (and errored) attempts, "
             "carrying only passed ones; `all` carries nothing. Default: passed and failed attempts whose "
             "execution identity is unchanged are carried, not sent to the agent.",
    ),
    early_exit: Optional[bool] = typer.Option(
        None, "--early-exit/--no-early-exit",
        help="Stop dispatching an eval's attempts once one passes (the rest are not dispatched); wins over "
             "the experiment and the eval.",
    ),
    dry: bool = typer.Option(
        False, "--dry", help="Print the plan (every slot carried or run, with the reason) and run or write nothing."
    ),
    agent: Optional[str] = typer.Option(None, "--agent", hidden=True),
    model: Optional[str] = typer.Option(None, "--model", hidden=True),
) -> None:
    """Run experiments × evals × attempts, journaled so an interrupted run can be resumed."""
    try:
        if agent is not None or model is not None:
            flag = "--agent" if agent is not None else "--model"
            raise UsageError(
                f"{flag} is not an option: an experiment file binds the agent and model. To compare "
                "configurations, add a new file under experiments/ that differs in that one line.", flag,
            )
        _positive("--attempts", attempts, maximum=common.MAX_REPEAT)
        _positive("--concurrency", concurrency, maximum=common.MAX_CONCURRENCY)
        _positive("--timeout", timeout)
        _positive("--budget", budget, allow_zero=True)
        from assay.core.run.request import Execution, Outputs

        execution = Execution(executor, ray_address)
        if shard is not None:
            from assay.core.shard import parse_shard

            parse_shard(shard)
        from assay.agent.carry import check_rerun

        check_rerun(rerun)
        from assay.agent.sandbox.linking import sandbox_override

        sandbox_override(sandbox)  # a misspelt --sandbox is a usage error before anything is planned
        if dry and resume is not None:
            raise UsageError("--dry plans a new invocation; a --resume continues its checkpoint's plan", "--dry")
        from assay.agent.run_kind import AGENT, AgentRunRequest

        # NDJSON: stderr carries only errors from before the invocation exists (NiceEval).
        outputs = Outputs(json=output_json, junit=str(junit) if junit is not None else None, quiet=quiet, verbose=verbose)
        request = AgentRunRequest(
            project=_project(project), experiment=experiment, evals=tuple(evals or ()), tags=tuple(tag or ()),
            attempts=attempts, timeout=timeout, budget=budget, shard=shard, concurrency=concurrency,
            keep_sandbox=keep_sandbox, telemetry_host=telemetry_host, rerun=rerun, early_exit=early_exit, sandbox=sandbox,
        )
        resumed = None
        if resume is not None:
            from assay.core.run.resume import restore

            restored = restore(AGENT, resume, request, outputs)
            request, outputs, resumed = restored.request, restored.outputs, restored.resume
        if dry:
            _print_dry_run(request, outputs.json)
            return
    except AssayError as error:
        _fail(error)
    common.run_and_exit(AGENT, request, outputs, resume=resumed, execution=execution)


def _print_dry_run(request: Any, as_json: bool) -> None:
    from assay.agent.run_kind import dry_run
    from assay.agent.sandbox.linking import check_keep

    check_keep(request.keep_sandbox)
    planned = dry_run(request)
    if as_json:
        print(json.dumps(planned.document(), ensure_ascii=False, separators=(",", ":")))
        return
    console = common.stdout_console()
    for line in planned.lines():
        console.print(line, markup=False, highlight=False, soft_wrap=True)


@agent_app.command("show")
def show_command(
    locator: Optional[str] = typer.Argument(None, help="An attempt locator (@XXXX…, a unique prefix is enough)."),
    project: Optional[Path] = typer.Option(None, "--project", help=PROJECT_HELP),
    run: Optional[str] = typer.Option(None, "--run", help="Checkpoint id or folder; default: the latest run."),
    output_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    timing: bool = typer.Option(
        False, "--timing", help="The attempt's phase tree (eval.run, agent.setup, each agent.send, judge calls)."
    ),
) -> None:
    """Show the results of the latest (or a given) run, or one attempt in detail."""
    from assay.cli.stdout_guard import nothing_to_keep

    nothing_to_keep()  # a closed reader leaves no finished results to speak of
    from assay.agent.checkpoint import list_checkpoints, read_results
    from assay.agent.project import checkpoints_base
    from assay.core.journal import resolve_checkpoint_ref

    try:
        root = _project(project)
        if run is not None:
            path = resolve_checkpoint_ref(run, checkpoints_base(root), Path.cwd())
            if not path.is_dir():
                raise UsageError(f"no run {run!r} in {root}", "--run")
        else:
            found = list_checkpoints(root)
            if not found:
                raise UsageError(f"no agent runs recorded in {root}; run `assay agent run` first")
            path = found[-1][0]
        if timing and locator is None:
            raise UsageError("--timing shows one attempt: give its locator (assay agent show @XXXX --timing)", "--timing")
        results = read_results(path)
        if locator is not None:
            wanted = (locator if locator.startswith("@") else "@" + locator).upper()
            matching = [result for result in results if result.locator.startswith(wanted)]
            if not matching and run is None:
                # A locator printed by an earlier run (a carried line names its origin's): the
                # newest other run that holds it.
                for other, _ in reversed(found[:-1]):
                    matching = [result for result in read_results(other) if result.locator.startswith(wanted)]
                    if matching:
                        path = other
                        break
            if not matching:
                where = f"run {path.name}" if run is not None else f"any run of {root}"
                raise UsageError(f"no attempt {locator} in {where}")
            if len(matching) > 1:
                raise UsageError(f"attempt locator {locator} is ambiguous ({len(matching)} attempts); give more characters")
            from assay.agent.carry import adopted_attempt

            results = [adopted_attempt(root, matching[0])]
    except AssayError as error:
        _fail(error)
    if timing:
        _show_timing(results[0], output_json)
        return
    if output_json:
        documents = []
        for result in results:
            document = result.to_json()
            document["locator"] = result.locator
            documents.append(document)
        print(json.dumps({"run": path.name, "attempts": documents}, indent=2, ensure_ascii=False))
        return
    console = common.stdout_console()

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False)

    if locator is not None:
        _show_attempt(say, results[0])
        return
    from assay.agent.report import attempt_title, experiment_rows, failure_lines, verdict_label
    from assay.core.report.table import render_table

    say(f"Run {path.name}")
    rows = [[result.locator, verdict_label(result), attempt_title(result)] for result in results]
    say(render_table(None, ["locator", "verdict", "attempt"], rows))
    for result in results:
        if result.verdict in ("failed", "errored"):
            say(f"{result.locator} {verdict_label(result).upper()}  {attempt_title(result)}")
            for line in failure_lines(result):
                say(f"    {line}")
    headers = ["experiment", "agent/model", "passed", "failed", "errored", "skipped", "not run", "mean", "tokens"]
    say(render_table(None, headers, experiment_rows(results)))


def _show_timing(result: Any, output_json: bool) -> None:
    from assay.agent.timing import timing_lines

    if output_json:
        document = {"locator": result.locator, "attempt_id": result.attempt_id, "timing": result.timing or []}
        print(json.dumps(document, indent=2, ensure_ascii=False))
        return
    console = common.stdout_console()
    console.print(f"{result.locator}  timing of {result.experiment_id}/{result.eval_id} attempt {result.ordinal + 1}",
                  markup=False, highlight=False)
    if not result.timing:
        console.print("  no timing recorded (an attempt from before assay recorded its phases, or one never run)",
                      markup=False, highlight=False)
        return
    for line in timing_lines(result.timing):
        console.print(f"  {line}", markup=False, highlight=False)


def _show_attempt(say: Any, result: Any) -> None:
    from assay.agent.report import attempt_title, failure_lines, verdict_label

    say(f"{result.locator}  {verdict_label(result).upper()}  {attempt_title(result)}")
    say(f"experiment {result.experiment_id} · attempt {result.ordinal + 1} · {result.duration_seconds:.3f}s")
    origin = getattr(result, "carried_from", None)
    if origin:
        say(f"carried from run {origin['run_id']} (unit {origin['unit_id']}): not sent to the agent in this run")
    decision = getattr(result, "decision", None)
    if decision and decision.get("action") == "execute":
        say(f"executed: {decision.get('message')}")
    for line in failure_lines(result):
        say(f"  {line}")
    if result.assertions:
        say("Assertions:")
        for assertion in result.assertions:
            reason = f" — {assertion['reason']}" if assertion.get("reason") else ""
            say(f"  {assertion['status']:<11} {assertion['description']} [{assertion['scope']}]{reason}")
    if result.turns:
        say("Conversation:")
        for turn in result.turns:
            prefix = "" if turn["session"] == 0 else f"session {turn['session']} "
            say(f"  {prefix}turn {turn['turn']} ({turn['status']}) user: {turn['input']}")
            for event in turn["events"]:
                say(f"    {_event_line(event)}")
    if result.coverage:
        partial = {k: v for k, v in result.coverage.items() if v != "complete"}
        if partial:
            say(f"Evidence coverage: {json.dumps(partial)}")
    if result.usage:
        say(f"Usage: {json.dumps(result.usage)}")
    for diagnostic in result.diagnostics:
        say(f"{diagnostic['level']} [{diagnostic['code']}]: {diagnostic['message']}")
    if result.error and result.error.get("traceback"):
        say("Traceback:")
        say(result.error["traceback"].rstrip())


def _event_line(event: dict[str, Any]) -> str:
    kind = event["type"]
    if kind == "message":
        return f"{event['role']}: {event['text']}"
    if kind == "operation.started":
        operation = event["operation"]
        return f"→ {operation['kind']} {operation['name']} #{event['operation_id']} {json.dumps(operation.get('input'))}"
    if kind == "operation.finished":
        output = f" {json.dumps(event['output'])}" if "output" in event else ""
        return f"← #{event['operation_id']} {event['status']}{output}"
    if kind == "input.requested":
        request = event["request"]
        options = ", ".join(option["id"] for option in request.get("options", []))
        return f"? input requested {request.get('id', '')}: {request.get('prompt', '')} [{options}]"
    return json.dumps(event, ensure_ascii=False)


agent_app.add_typer(sandbox_app, name="sandbox")

__all__ = ["agent_app"]
