"""`assay agent init`: a project's folders and `[tool.assay]` table, and in a new project the starter —
an offline agent, an eval and an experiment that pass as written, to be replaced by the user's own.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from assay.errors import ConfigError, UsageError

__all__ = ["STARTER_FILES", "init_project", "write_starter_files"]

_MINIMAL_CONFIG = "[tool.assay]\n# concurrency = 10   # attempts in flight across experiments\n# timeout = 300      # seconds per attempt\n"

AGENTS_INIT = '''\
"""Your adapters: each wraps the app under test behind `send` (see weather.py)."""
'''

WEATHER_AGENT = '''\
"""A stand-in agent that answers weather questions offline, so the starter runs without keys.

Replace `send` with a call to your app: pass it the user's text (and ctx.model, ctx.flags), then
report what it did as events: its tool calls and results, and its reply.
"""

from __future__ import annotations

import re

from assay.agent import Turn, Usage, complete_evidence_coverage, define_agent, message, tool_call, tool_result

FORECASTS = {"paris": {"sky": "sunny", "celsius": 21}, "oslo": {"sky": "snowing", "celsius": -3}}


async def send(turn_input, ctx):
    asked = re.search(r"\\bin ([A-Za-z]+)", turn_input.text)
    if asked is None:
        reply = "Which city would you like the weather for?"
        return Turn([message(reply)], "completed", usage=Usage(input_tokens=12, output_tokens=len(reply.split())))
    city = asked.group(1)
    forecast = FORECASTS.get(city.lower(), {"sky": "cloudy", "celsius": 15})
    reply = f"It is {forecast['sky']} in {city}, {forecast['celsius']} °C."
    events = [
        tool_call("call-1", "get_weather", {"city": city}),
        tool_result("call-1", forecast),
        message(reply),
    ]
    return Turn(events, "completed", usage=Usage(input_tokens=12, output_tokens=len(reply.split())))


def weather_agent():
    # Evidence coverage says what this adapter reports: everything, so "not called" means not called.
    return define_agent(name="weather-stub", send=send, evidence_coverage=complete_evidence_coverage)
'''

WEATHER_EVAL = '''\
"""Asks for the weather and checks the tool call and the reply. The eval never names its agent:
the experiment in experiments/ binds one. Its id is the path without `_eval.py`: `weather`."""

from assay.agent import define_eval, includes, tool_match


@define_eval(description="looks up the weather for the city it is asked about", tags=["starter"], timeout=30)
async def test(t):
    turn = await t.send("What is the weather in Paris?")
    t.succeeded()
    turn.called_tool(tool_match("get_weather", input={"city": "Paris"}), count=1)
    t.check(t.reply, includes("sunny"))
'''

STARTER_EXPERIMENT = '''\
"""The configuration the evals run against: one agent and one model. To compare two, add another
file here that differs in that one line; `assay agent run` runs every experiment."""

from agents.weather import weather_agent

from assay.agent import Experiment

starter = Experiment(agent=weather_agent(), model="offline-stub", description="the starter's offline agent")
'''

STARTER_FILES = {
    "agents/__init__.py": AGENTS_INIT,
    "agents/weather.py": WEATHER_AGENT,
    "evals/weather_eval.py": WEATHER_EVAL,
    "experiments/starter.py": STARTER_EXPERIMENT,
}


def write_starter_files(root: Path) -> list[str]:
    """Write the starter into `root`, or nothing at all if any of its files is already there
    (a half-written starter would import the user's own file of the same name)."""
    if any((root / name).exists() for name in STARTER_FILES):
        return []
    for name, text in STARTER_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(STARTER_FILES)


def _declares_tool_assay(text: str) -> bool:
    """Whether the (already checked) TOML has a [tool.assay] table in any spelling: `[ tool.assay ]`, an inline
    `assay = {...}` under [tool], dotted keys or a sub-table. Appending a second one would make the file unreadable."""
    import tomllib

    tool = tomllib.loads(text).get("tool")
    return isinstance(tool, dict) and "assay" in tool


def init_project(directory: Path) -> list[str]:
    """Set up the project `directory` names (created if missing) and say what was made and what to do
    next. Existing files are never changed: only the [tool.assay] table is appended to a
    pyproject.toml that lacks one. A project `run` would refuse is refused here (ConfigError)."""
    root = directory.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} is a file, not a folder; give the project's folder")
    made = []
    try:
        from assay.agent.project import load_project_config

        if (root / "pyproject.toml").exists():  # one `run` would refuse: said before anything is written
            load_project_config(root)
        if (root / "pyproject.toml").exists() and not (root / "pyproject.toml").is_file():  # before anything is written
            raise ConfigError(f"{root / 'pyproject.toml'} is a folder, not a file: move it away and run `assay agent "
                              "init` again (the project's settings live in the pyproject.toml file)")
        # The starter goes only into a project that has neither folder yet: an example eval added
        # to a suite that exists would run against its experiments.
        for name in ("evals", "experiments"):
            if (root / name).exists() and not (root / name).is_dir():
                raise ConfigError(f"{root / name} is a file, not a folder: move it away and run `assay agent init` "
                                  f"again (the project's {name} live in the {name}/ folder)")
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
            if not _declares_tool_assay(text):
                from assay.core.fsutil import write_atomically

                separator = "" if text.endswith("\n") or not text else "\n"
                write_atomically(pyproject, text + separator + "\n" + _MINIMAL_CONFIG)  # the user's file: never half-written
                made.append("[tool.assay] in pyproject.toml")
        load_project_config(root)
    except OSError as error:
        raise ConfigError(f"could not set up {root}: {error}") from None
    run = "assay agent run" if root == Path.cwd().resolve() else f"assay agent run --project {shlex.quote(str(directory))}"
    if "evals/weather_eval.py" in made:
        after = f"Next: {run}  (then replace agents/weather.py with your app and write your own evals)"
    else:
        after = f"Next: write evals/<name>_eval.py and experiments/<name>.py, then run `{run}`."
    return [f"Initialized {root}: " + (", ".join(made) if made else "nothing to do (already set up)"), after]
