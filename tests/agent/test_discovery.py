import re
import textwrap
from pathlib import Path

import pytest

from assay.agent.discovery import discover_evals, discover_experiments, select_evals, select_experiments
from assay.agent.project import load_dotenv, load_project_config, parse_dotenv
from assay.errors import ConfigError, UsageError

AGENT = """
from assay.agent import Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    return Turn([message("ok")])

agent = define_agent(name="stub", send=send, evidence_coverage=complete_evidence_coverage)
"""
ONE_EVAL = """
from assay.agent import define_eval

@define_eval(description="{description}", tags={tags!r})
async def test(t):
    await t.send("hi")
"""


def write(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def make_project(root):
    write(root, "agents/stub.py", AGENT)
    write(root, "evals/weather/brooklyn_eval.py", ONE_EVAL.format(description="Brooklyn", tags=["weather"]))
    write(root, "evals/foo/eval.py", ONE_EVAL.format(description="foo", tags=[]))
    write(root, "evals/_lib/helpers.py", "VALUE = 1\n")
    write(root, "evals/_lib/ignored_eval.py", "raise RuntimeError('never imported')\n")
    write(root, "evals/notes.py", "raise RuntimeError('not an eval file')\n")
    write(root, "evals/cities_eval.py", """
        from assay.agent import define_eval
        from evals._lib.helpers import VALUE

        def make(city):
            async def test(t):
                await t.send(city)
            return define_eval(test, tags=["cities"])

        EVALS = [make("Paris"), make("Rome")]
    """)
    write(root, "evals/langs_eval.py", """
        from assay.agent import define_eval

        async def test(t):
            pass

        by_language = {"zh": define_eval(test), "en": define_eval(test)}
    """)
    write(root, "experiments/baseline.py", """
        from agents.stub import agent
        from assay.agent import Experiment
        experiment = Experiment(agent=agent, model="m1")
    """)
    write(root, "experiments/models/openai/gpt.py", """
        from agents.stub import agent
        from assay.agent import Experiment
        experiment = Experiment(agent=agent, model="gpt", evals=["weather/"])
    """)
    write(root, "experiments/_shared.py", "raise RuntimeError('shared code is not an experiment')\n")
    return root


def test_eval_ids_come_from_paths_with_list_and_dict_fan_out(tmp_path):
    entries = discover_evals(make_project(tmp_path))
    assert [entry.id for entry in entries] == [
        "cities/0000", "cities/0001", "foo", "langs/en", "langs/zh", "weather/brooklyn",
    ]
    brooklyn = entries[-1]
    assert brooklyn.eval.description == "Brooklyn" and brooklyn.eval.tags == ("weather",)
    assert brooklyn.directory == tmp_path.resolve() / "evals" / "weather"
    assert len(brooklyn.digest) == 64


def test_experiment_ids_come_from_paths_and_shared_files_are_skipped(tmp_path):
    experiments = discover_experiments(make_project(tmp_path))
    assert [entry.id for entry in experiments] == ["baseline", "models/openai/gpt"]
    assert experiments[1].group == "models"


def test_selection_by_experiment_prefix_eval_prefix_and_tag(tmp_path):
    root = make_project(tmp_path)
    evals = discover_evals(root)
    experiments = discover_experiments(root)
    assert [e.id for e in select_experiments(experiments, "models")] == ["models/openai/gpt"]
    assert [e.id for e in select_experiments(experiments, "models/open")] == ["models/openai/gpt"]
    assert [e.id for e in select_experiments(experiments, "experiments/baseline.py")] == ["baseline"]
    with pytest.raises(UsageError, match="no experiment matches 'nope'; experiments: baseline, models/openai/gpt"):
        select_experiments(experiments, "nope")
    with pytest.raises(UsageError, match="no experiment matches 'basline' [(]did you mean 'baseline'[?][)]; experiments: "):
        select_experiments(experiments, "basline")
    baseline, gpt = experiments
    assert [e.id for e in select_evals(gpt, evals)] == ["weather/brooklyn"]
    assert [e.id for e in select_evals(gpt, evals, ["cities"])] == []  # prefixes narrow, never widen
    assert [e.id for e in select_evals(baseline, evals, ["cities/", "foo"])] == ["cities/0000", "cities/0001", "foo"]
    assert [e.id for e in select_evals(baseline, evals, tags=["cities", "weather"])] == [
        "cities/0000", "cities/0001", "weather/brooklyn"]


@pytest.mark.parametrize("relative, text, message", [
    ("evals/a_eval.py", "x = 1\n", "defines no eval"),
    ("evals/b_eval.py", ONE_EVAL.format(description="x", tags=[]) + "\nother = test\n", "defines several evals (test, other)"),
    ("evals/c_eval.py", "from assay.agent import define_eval\nEVALS = {'a/b': define_eval(lambda t: None)}\n",
     "must be one non-empty path segment"),
    ("evals/d_eval.py", "raise ImportError('missing sdk')\n", "could not import"),
    # the line of the file the error passed through: the misspelt keyword is found without a traceback
    ("evals/f_eval.py", "from assay.agent import define_eval\n\nasync def t(t):\n    pass\n\nEVALS = {'x': define_eval(t, tag=['a'])}\n",
     "f_eval.py (line 6): TypeError: define_eval() got an unexpected keyword argument 'tag'; did you mean 'tags'?"),
    # a misspelt keyword of any public callable gets the name meant; a stranger's function gets no guess
    ("evals/g_eval.py", "from assay.agent import define_eval, local_sandbox\n\nasync def t(t):\n    pass\n\n"
                        "EVALS = {'x': define_eval(t, sandbox=local_sandbox(isolaton='none'))}\n",
     "TypeError: local_sandbox() got an unexpected keyword argument 'isolaton'; did you mean 'isolation'?"),
    # other tools name an eval by hand: assay takes the id from the file, and says so
    ("evals/i_eval.py", "from assay.agent import define_eval\n\nasync def t(t):\n    pass\n\nrefund = define_eval(t, id='refund')\n",
     "TypeError: define_eval() got an unexpected keyword argument 'id'; an eval's id is not given but comes from its "
     "file's path: `evals/orders/refund_eval.py` is 'orders/refund' (rename the file"),
    ("evals/h_eval.py", "def mine(*, limit=1):\n    pass\n\nmine(limt=2)\n",
     "h_eval.py (line 4): TypeError: mine() got an unexpected keyword argument 'limt'"),
    ("evals/eval.py", ONE_EVAL.format(description="x", tags=[]), "must be inside a folder"),
])
def test_bad_eval_files_are_config_errors_naming_the_file(tmp_path, relative, text, message):
    path = write(tmp_path, relative, text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")) as raised:
        discover_evals(tmp_path)
    assert str(path.name) in str(raised.value) or "folder" in message
    if relative == "evals/h_eval.py":
        assert str(raised.value).endswith("'limt'")


def test_an_evals_export_wins_over_the_decorated_functions_it_gathers(tmp_path):
    write(tmp_path, "evals/pair_eval.py", """
        from assay.agent import define_eval

        @define_eval
        async def first(t):
            await t.send("one")

        @define_eval
        async def second(t):
            await t.send("two")

        evals = {"first": first, "second": second}
    """)
    assert [entry.id for entry in discover_evals(tmp_path)] == ["pair/first", "pair/second"]


def test_several_evals_name_the_evals_export_that_settles_it_and_a_wrong_one_is_named(tmp_path):
    path = write(tmp_path, "evals/pair_eval.py", ONE_EVAL.format(description="x", tags=[]) + "\nother = test\n")
    with pytest.raises(ConfigError, match=r"defines several evals \(test, other\).*`evals = \{\.\.\.\}`.*wins"):
        discover_evals(tmp_path)
    path.write_text(path.read_text() + "evals = ['test']\n")
    with pytest.raises(ConfigError, match="`evals` must be an eval or a non-empty list or dict of evals"):
        discover_evals(tmp_path)


def test_a_module_spreading_thousands_of_evals_into_its_names_is_told_so_in_a_line_a_person_reads(tmp_path):
    write(tmp_path, "evals/many_eval.py", """
        from assay.agent import define_eval

        def make(index):
            async def test(t):
                await t.send("hi")
            return define_eval(test)

        EVALS = {f"e{index:05d}": make(index) for index in range(20000)}
        globals().update(EVALS)
    """)
    with pytest.raises(ConfigError) as raised:
        discover_evals(tmp_path)
    message = str(raised.value)  # every one of the 20,001 names made a line of 200 KB
    assert "defines several evals (EVALS, e00000, e00001, " in message and "e00008, and 19,991 more); export" in message
    assert len(message) < 600


def test_two_files_with_one_id_are_an_error(tmp_path):
    write(tmp_path, "evals/x_eval.py", ONE_EVAL.format(description="a", tags=[]))
    write(tmp_path, "evals/x/eval.py", ONE_EVAL.format(description="b", tags=[]))
    with pytest.raises(ConfigError, match="eval id 'x' is defined twice"):
        discover_evals(tmp_path)


def test_an_experiment_must_bind_an_agent_with_evidence_coverage(tmp_path):
    write(tmp_path, "experiments/bad.py", """
        from assay.agent import Experiment

        class Lazy:
            name = "lazy"
            async def send(self, turn_input, ctx):
                pass

        experiment = Experiment(agent=Lazy())
    """)
    with pytest.raises(ConfigError, match="agent 'lazy' must declare `evidence_coverage`"):
        discover_experiments(tmp_path)


def test_an_evidence_coverage_of_the_wrong_type_is_shown_with_what_to_write():
    """`evidence_coverage="complete"` read "must declare `evidence_coverage`", as if none had been given."""
    from assay.agent import define_agent

    async def send(turn_input, ctx):
        pass

    with pytest.raises(ConfigError, match=r"must declare `evidence_coverage` \(an EvidenceCoverage; use "
                                          r"complete_evidence_coverage only if every channel really is complete\), got "
                                          r"str 'complete': write evidence_coverage=complete_evidence_coverage"):
        define_agent(name="chat", send=send, evidence_coverage="complete")
    with pytest.raises(ConfigError, match=r"really is complete\), got dict \"\{'events': 'complete'\}\"$"):
        define_agent(name="chat", send=send, evidence_coverage={"events": "complete"})


@pytest.mark.parametrize("agent, message", [
    # A factory passed uncalled was "the agent must have a non-empty string `name`", which a function has not
    # and the author never wrote.
    ("make_agent", r"agent=make_agent is the function, not an agent: call it \(agent=make_agent\(...\)\)"),
    ("'shop'", r"the agent must be one made by define_agent\(...\) or an official factory .* got str 'shop'"),
    ("None", r"the agent must be one made by define_agent\(...\) .* got None$"),
])
def test_an_experiment_given_no_agent_says_what_to_write(tmp_path, agent, message):
    write(tmp_path, "experiments/bad.py", f"""
        from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent


        def make_agent():
            async def send(turn_input, ctx):
                return Turn()
            return define_agent(name="shop", send=send, evidence_coverage=complete_evidence_coverage)


        experiment = Experiment(agent={agent})
    """)
    with pytest.raises(ConfigError, match=message):
        discover_experiments(tmp_path)


@pytest.mark.parametrize("hook", ["setup", "teardown", "close"])
def test_define_agent_refuses_a_hook_that_is_no_function(hook):
    # setup=3 was accepted, then errored every attempt with "TypeError: the first argument must be callable".
    from assay.agent import Turn, complete_evidence_coverage, define_agent

    async def send(turn_input, ctx):
        return Turn()

    with pytest.raises(ConfigError, match=f"define_agent: agent 'shop' {hook} must be a function \\(or None\\), got int"):
        define_agent(name="shop", send=send, evidence_coverage=complete_evidence_coverage, **{hook: 3})


@pytest.mark.parametrize("fields, message", [
    ({"attempts": 0}, "attempts must be an integer >= 1"),
    ({"flags": {"x": float("nan")}}, "must be finite"),
    ({"timeout": -1}, "timeout must be > 0"),
    ({"evals": "weather"}, 'evals must be "\\*"'),
    # Judge settings are checked when the file is read, as [tool.assay.judge] is: before, a typo made every judge
    # assertion unavailable at run time, and judge=3 was an internal error (TypeError) at the first judged attempt.
    ({"judge": {"modle": "m"}}, r"Experiment judge: unknown setting 'modle' \(did you mean 'model'\?\)"),
    ({"judge": 3}, "Experiment judge must be a mapping of judge settings"),
    ({"judge": {"model": 3}}, "Experiment judge: model must be a string, got 3"),
    ({"judge": {"model": "m", "timeout": "60"}}, "Experiment judge: timeout must be a positive number of seconds"),
    # a base URL that is no URL errored every judged attempt at run time (exit 1) instead of exit 2 here
    ({"judge": {"model": "m", "base_url": "htp://127.0.0.1:8000/v1"}},
     "Experiment judge: base_url htp://127.0.0.1:8000/v1 is not an http\\(s\\) URL; give one like http://127.0.0.1:8000/v1"),
    ({"judge": {"model": "m", "base_url": "http://127.0.0.1:187310/v1"}},
     "Experiment judge: base_url http://127.0.0.1:187310/v1 is not a valid URL \\(Port out of range 0-65535\\)"),
])
def test_experiment_fields_are_validated(fields, message):
    from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent

    agent = define_agent(name="a", send=lambda i, c: Turn(), evidence_coverage=complete_evidence_coverage)
    with pytest.raises(ConfigError, match=message):
        Experiment(agent=agent, **fields)


def test_eval_judge_settings_are_checked_when_the_eval_is_defined():
    from assay.agent import define_eval

    with pytest.raises(ConfigError, match=r"eval judge: unknown setting 'modle' \(did you mean 'model'\?\)"):
        define_eval(lambda t: None, judge={"modle": "m"})
    with pytest.raises(ConfigError, match="eval judge: model must be a string, got 3"):
        define_eval(lambda t: None, judge={"model": 3})
    assert define_eval(lambda t: None, judge={"model": "m", "reasoning_effort": None}).judge["model"] == "m"


def test_an_experiment_evals_prefix_that_matches_no_eval_is_named_with_its_file(tmp_path):
    # Before, that experiment quietly ran none of the evals it names while the others ran (or, alone,
    # "no evals selected" without saying which experiment or prefix).
    from assay.agent.plan import plan_for
    from assay.agent.request import AgentRunRequest

    root = make_project(tmp_path)
    write(root, "experiments/models/openai/gpt.py", """
        from agents.stub import agent
        from assay.agent import Experiment
        experiment = Experiment(agent=agent, model="gpt", evals=["wether/"])
    """)
    path = root / "experiments" / "models" / "openai" / "gpt.py"
    with pytest.raises(ConfigError, match=re.escape(
        f"experiment models/openai/gpt ({path}): evals prefix 'wether/' matches no eval id; did you mean 'weather/'?"
    )):
        plan_for(root, AgentRunRequest(project=root))
    assert {planned.experiment.id for planned in plan_for(root, AgentRunRequest(project=root, experiment="baseline"))} == {
        "baseline"}
    from assay.agent.listing import list_project

    with pytest.raises(ConfigError, match="evals prefix 'wether/' matches no eval id"):  # `list` refuses what `run` does
        list_project(root)
    # With no close id, the message names the ids there are (it pointed at `assay agent list`, which refuses too).
    write(root, "experiments/models/openai/gpt.py", """
        from agents.stub import agent
        from assay.agent import Experiment
        experiment = Experiment(agent=agent, model="gpt", evals=["nosuch/"])
    """)
    with pytest.raises(ConfigError) as refused:
        plan_for(root, AgentRunRequest(project=root))
    assert str(refused.value).endswith(
        "evals prefix 'nosuch/' matches no eval id (eval ids start with cities/, foo, langs/, weather/)")


def test_project_config_reads_tool_assay(tmp_path):
    write(tmp_path, "pyproject.toml", """
        [project]
        name = "x"

        [tool.assay]
        concurrency = 7
        timeout = 12.5

        [tool.assay.pricing]
        "gpt-x" = { input = 2.0, output = 8.0 }

        [tool.assay.video]
        anything = "belongs to another kind"
    """)
    config = load_project_config(tmp_path)
    assert (config.concurrency, config.timeout) == (7, 12.5)
    assert config.pricing == {"gpt-x": {"input": 2.0, "output": 8.0}}


@pytest.mark.parametrize("body, message", [
    ("concurency = 3", r"unknown key 'concurency' \(did you mean 'concurrency'\?\); agent evals read .* and the telemetry and "
                       "export tables"),
    # The telemetry and export tables are checked with the rest, so `list` and `run --dry` refuse them as `run` does.
    ("[tool.assay.telemetry]\nprot = 4318", r"\[tool.assay.telemetry\]: unknown key 'prot' \(did you mean 'port'\?\)"),
    ("[tool.assay.telemetry]\nscope = 'attempts'", r"\[tool.assay.telemetry\]: scope must be one of run, attempt"),
    ("telemetry = 5", r"\[tool.assay.telemetry\] must be a table"),
    ("[tool.assay.telemtry]\nport = 1", r"unknown key 'telemtry' \(did you mean 'telemetry'\?\)"),
    ("[tool.assay.export]\notlp = 5", r"\[tool.assay.export\]: otlp must be a URL string"),
    ("[tool.assay.judge]\nmodle = 'm'", r"\[tool.assay.judge\]: unknown setting 'modle' \(did you mean 'model'\?\)"),
    # A wrong type was accepted and only showed at a judged attempt, as the wrong reason ("no judge model is configured").
    ("[tool.assay.judge]\nmodel = 3", r"\[tool.assay.judge\]: model must be a string, got 3"),
    ("[tool.assay.judge]\ntimeout = 'x'", r"\[tool.assay.judge\]: timeout must be a positive number of seconds, got 'x'"),
    ("concurrency = 0", "concurrency must be an integer >= 1, got the number 0"),
    # A quoted number is named as given: "must be an integer" beside `"4"` looked like a bug in assay.
    ("concurrency = '4'", "concurrency must be an integer >= 1, got the text '4'"),
    ("timeout = '30'", "timeout must be a positive number of seconds, got the text '30'"),
    ("[tool.assay.pricing]\nm = { inputs = 1 }", "m.inputs is unknown"),
])
def test_bad_project_config_is_a_config_error(tmp_path, body, message):
    write(tmp_path, "pyproject.toml", "[tool.assay]\n" + body + "\n")
    with pytest.raises(ConfigError, match=message):
        load_project_config(tmp_path)


def test_dotenv_is_loaded_without_overriding_the_environment(tmp_path):
    write(tmp_path, ".env", """
        # comment
        export API_KEY="from file"
        ALREADY=file
        PLAIN=value # trailing comment
        QUOTED='a # b'
    """)
    environ = {"ALREADY": "environment"}
    loaded = load_dotenv(tmp_path, environ)
    assert environ == {"ALREADY": "environment", "API_KEY": "from file", "PLAIN": "value", "QUOTED": "a # b"}
    assert sorted(loaded) == ["API_KEY", "PLAIN", "QUOTED"]
    assert parse_dotenv('MULTI="a\\nb"') == {"MULTI": "a\nb"}


def test_a_quoted_dotenv_value_may_be_followed_by_a_comment_as_the_docs_write_it():
    """docs/agent/projects.md's own line kept its quotes (`"http://…"`, a URL no client can use)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "agent" / "projects.md").read_text(encoding="utf-8")
    line = next(line for line in page.splitlines() if line.startswith("SHOP_API_URL="))
    assert parse_dotenv(line) == {"SHOP_API_URL": "http://127.0.0.1:8080"}
    assert parse_dotenv('A="x \\" y"  # why\nB=\'a # b\'   # c\nC="a"b\nD="open') == {
        "A": 'x " y', "B": "a # b", "C": '"a"b', "D": '"open'}


# --- hostile and damaged project files -----------------------------------------------------------


@pytest.mark.parametrize("body, message", [
    ("concurrency = 100000000", "concurrency must be at most 10,000"),
    ("timeout = " + "9" * 400, "timeout must be a positive number of seconds"),
    ("timeout = inf", "timeout must be a positive number of seconds"),
    ("name = 2026-01-01", 'name must be a string, got a date (2026-01-01); quote it ("2026-01-01") to keep it as text'),
    ("[tool.assay.pricing]\nm = { input = 1e400 }", "m.input must be at most 1,000,000 (USD per million tokens)"),
    ("[tool.assay.pricing]\nm = { input = " + "9" * 400 + " }", "m.input must be at most 1,000,000"),
    ("[tool.assay.pricing]\nm = { input = nan }", "m.input must be a non-negative number"),
])
def test_out_of_range_project_values_are_config_errors(tmp_path, body, message):
    write(tmp_path, "pyproject.toml", "[tool.assay]\n" + body + "\n")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_project_config(tmp_path)


@pytest.mark.parametrize("text, message", [
    ("[tool.assay]\njudge = { options = " + "[" * 10_000 + "]" * 10_000 + " }\n",
     "pyproject.toml: line 2, column 84: nested more than 64 levels deep"),
    ("[tool.assay]\nconcurrency = " + "9" * 5000 + "\n",
     "pyproject.toml: line 2, column 15: an integer with more than 4,300 digits"),
    ("tool = 1\n", "pyproject.toml: `tool` must be a table (it holds [tool.assay]), got the number 1"),
])
def test_a_hostile_pyproject_is_one_config_error_naming_it(tmp_path, text, message):
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_project_config(tmp_path)


def test_a_pyproject_that_is_not_utf8_names_the_line(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.assay]\nname = \"caf\xe9\"\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml: line 2, column 12: byte 0xe9 is not valid UTF-8"):
        load_project_config(tmp_path)


def test_a_nul_in_dotenv_is_refused_with_its_line_not_a_value_error(tmp_path):
    (tmp_path / ".env").write_bytes(b"A=1\nSECRET=abc\x00def\n")
    with pytest.raises(ConfigError, match=r"\.env: line 2: the value of SECRET contains a NUL character"):
        load_dotenv(tmp_path, {})


def test_a_dotenv_with_100000_lines_is_refused_at_once(tmp_path):
    import time

    (tmp_path / ".env").write_text("".join(f"KEY_{index}=value {index}\n" for index in range(100_000)))
    started = time.perf_counter()
    with pytest.raises(ConfigError, match=r"\.env: the file is larger than 1,048,576 bytes"):
        load_dotenv(tmp_path, {})
    many = "".join(f"K{index}=v\n" for index in range(10_001))
    with pytest.raises(ConfigError, match=r"more than 10,000 variables"):
        parse_dotenv(many)
    assert len(parse_dotenv(many[: many.index("K10000=")])) == 10_000
    assert time.perf_counter() - started < 1


def test_experiment_counts_and_numbers_have_sane_bounds():
    from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent

    agent = define_agent(name="a", send=lambda i, c: Turn(), evidence_coverage=complete_evidence_coverage)
    for fields, message in [
        ({"attempts": 10**30}, "Experiment attempts must be at most 10,000"),
        ({"concurrency": 10**9}, "Experiment concurrency must be at most 10,000"),
        ({"budget": 10**400}, "Experiment budget must be a number"),
        # a duration typed as text says the unit the number is in
        ({"sandbox_reuse": True, "lifetime": "10m"}, "Experiment lifetime must be a number of seconds, like "
                                                      "lifetime=1800; got '10m'"),
        ({"timeout": "2 minutes"}, "Experiment timeout must be a number of seconds, like timeout=120; got '2 minutes'"),
        ({"model": "gpt-\ud800"}, "Experiment model must be valid Unicode text"),
        ({"labels": ["ok", "\udcff"]}, "Experiment labels must be valid Unicode text"),
        ({"description": "x" * 20_000}, "Experiment description must be at most 10,000 characters long"),
        ({"flags": {"n": 10**5000}}, "Experiment flags: n: an integer with more than 4,300 digits"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            Experiment(agent=agent, **fields)
    deep: dict = {}
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(ConfigError, match="Experiment flags: a.a.a...: nested more than 64 levels deep"):
        Experiment(agent=agent, flags=deep)


def test_a_file_defining_evals_that_no_pattern_matches_is_named_once_on_stderr(tmp_path, capsys):
    from assay.agent import discovery

    write(tmp_path, "evals/checkout.py", ONE_EVAL.format(description="checkout", tags=[]))
    write(tmp_path, "evals/orders/refund.py", """
        from assay.agent import define_eval

        async def test(t):
            pass

        EVALS = [define_eval(test)]
    """)
    write(tmp_path, "evals/lib/factory.py", """
        from assay.agent import define_eval

        def make(text):  # builds evals for eval files: not an eval itself
            async def test(t):
                await t.send(text)
            return define_eval(test)
    """)
    write(tmp_path, "evals/_shared/hidden.py", ONE_EVAL.format(description="shared", tags=[]))
    write(tmp_path, "evals/good_eval.py", ONE_EVAL.format(description="good", tags=[]))
    write(tmp_path, "evals/notes.py", "from assay.agent import define_eval  # imported, never called\n")

    assert [path.relative_to(tmp_path).as_posix() for path in discovery.unmatched_eval_files(tmp_path)] == [
        "evals/checkout.py", "evals/orders/refund.py",
    ]
    discovery._warned_unmatched.clear()
    assert [entry.id for entry in discover_evals(tmp_path)] == ["good"]
    discover_evals(tmp_path)  # a second discovery in the same run (plan, then workers) says nothing new
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "warning: evals/checkout.py defines an eval but is skipped: eval files are evals/**/*_eval.py or "
        "evals/<folder>/eval.py (rename it checkout_eval.py)",
        "warning: evals/orders/refund.py defines an eval but is skipped: eval files are evals/**/*_eval.py or "
        "evals/<folder>/eval.py (rename it refund_eval.py)",
    ]


def test_a_group_file_named_otherwise_is_warned_about_not_silently_skipped(tmp_path, capsys):
    from assay.agent import discovery

    make_project(tmp_path)
    group = 'from assay.agent import define_eval_group\n\nflow = define_eval_group(["foo", "weather/brooklyn"])\n'
    write(tmp_path, "evals/flow_grop.py", group)  # a typo of flow_group.py: never read, the evals ran apart
    write(tmp_path, "evals/checkout_group.py", group)  # a group file as named: read, not warned about
    discovery._warned_unmatched.clear()
    discover_evals(tmp_path)
    assert capsys.readouterr().err.splitlines() == [
        "warning: evals/flow_grop.py defines an eval group but is skipped: a group's file is <group id>_group.py "
        "(evals/flow_group.py for the group 'flow'); rename it so",
    ]


def test_agent_list_and_run_warn_about_an_unmatched_eval_file(tmp_path):
    import subprocess
    import sys

    make_project(tmp_path)
    write(tmp_path, "evals/checkout.py", ONE_EVAL.format(description="checkout", tags=[]))
    for command in (["list"], ["run", "baseline", "foo", "--quiet"]):
        completed = subprocess.run(
            [sys.executable, "-m", "assay", "agent", *command, "--project", str(tmp_path)],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
        warnings = [line for line in completed.stderr.splitlines() if line.startswith("warning:")]
        assert warnings == [
            "warning: evals/checkout.py defines an eval but is skipped: eval files are evals/**/*_eval.py or "
            "evals/<folder>/eval.py (rename it checkout_eval.py)"
        ], (command, completed.stdout, completed.stderr)


@pytest.mark.parametrize("diff, message", [
    ({"ignroe": ["logs/**"]}, "eval diff has an unknown key 'ignroe'; did you mean 'ignore'? (it takes \"include\" and/or "
                              "\"ignore\" lists of glob patterns)"),
    (["logs/**"], 'eval diff must be a mapping with "include" and/or "ignore" lists of glob patterns'),
    ({"ignore": "logs/**"}, "eval diff 'ignore' must be a list of non-empty glob patterns"),
])
def test_a_bad_diff_rule_says_what_is_wrong_and_which_key_was_meant(diff, message):
    from assay.agent import define_eval

    async def test(t):
        pass

    with pytest.raises(ConfigError) as raised:
        define_eval(test, diff=diff)
    assert str(raised.value) == message


def test_a_non_ascii_name_in_an_ascii_locale_is_indexed_or_named_with_the_fix(tmp_path):
    """Where the file system's encoding is ASCII (the C locale, without Python's UTF-8 coercion), a name's
    non-ASCII bytes reach Python as lone surrogates, which the results store (UTF-8) refused: a project in
    such a folder ran but was never indexed, and an eval file so named was an internal error."""
    import json
    import os
    import subprocess
    import sys

    project = make_project(tmp_path / "projet-été")
    environment = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0",
                   "ASSAY_STORE": str(tmp_path / "store" / "assay.db")}

    def assay(*arguments):
        return subprocess.run([sys.executable, "-m", "assay", *arguments], cwd=project, env=environment,
                              capture_output=True, text=True, errors="replace", timeout=120)

    encoding = subprocess.run([sys.executable, "-c", "import sys; print(sys.getfilesystemencoding())"],
                              env=environment, capture_output=True, text=True).stdout.strip()
    assert encoding == "ascii"  # the locale this test is about
    ran = assay("agent", "run", "baseline", "foo")
    assert ran.returncode == 0 and "not indexed" not in ran.stderr, ran.stdout + ran.stderr
    [run] = json.loads(assay("runs", "list", "--json").stdout)["runs"]
    shown = assay("runs", "show", run["run_id"])  # the record is found again through its stored path
    assert shown.returncode == 0 and "foo" in shown.stdout, shown.stdout + shown.stderr

    write(project, "evals/météo_eval.py", ONE_EVAL.format(description="weather", tags=[]))
    refused = assay("agent", "run")
    assert refused.returncode == 2
    # (stderr in an ASCII locale writes what it cannot encode as `\xe9`)
    assert ("evals/m\\xe9t\\xe9o_eval.py: this locale's file-system encoding (ascii) cannot read the "
            "file's name, which makes its id; run assay in a UTF-8 locale (LC_ALL=C.UTF-8) or rename the file"
            ) in refused.stdout + refused.stderr
