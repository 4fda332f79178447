from xml.etree import ElementTree

from assay.core.report.junit import JUnitCase, JUnitSuite, render_junit, write_junit


def test_junit_counts_each_kind_of_case_and_escapes_text(tmp_path):
    suite = JUnitSuite("assay", [
        JUnitCase("ok", "exp", 0.5),
        JUnitCase('bad <"one">', "exp", 1.25, failure="expected & got", details="line 1\nline\x01 2"),
        JUnitCase("broken", "exp", error="timeout"),
        JUnitCase("later", "exp", skipped="not dispatched"),
    ], 2.0)
    path = tmp_path / "reports" / "junit.xml"
    write_junit(path, [suite])
    root = ElementTree.parse(path).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("4", "1", "1", "1")
    cases = root.find("testsuite").findall("testcase")
    assert cases[1].get("name") == 'bad <"one">' and cases[1].get("time") == "1.250"
    assert cases[1].find("failure").get("message") == "expected & got"
    assert cases[1].find("failure").text == "line 1\nline 2"
    assert cases[2].find("error").get("message") == "timeout"
    assert cases[3].find("skipped").get("message") == "not dispatched"
    assert render_junit([suite]) == path.read_text()


def test_an_agent_runs_score_eval_is_a_passing_case_with_its_score_and_only_skipped_attempts_count_skipped(tmp_path):
    import subprocess
    import sys
    import textwrap

    files = {
        "pyproject.toml": "[tool.assay]\n",
        "experiments/echo.py": """
            from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message

            async def send(turn_input, ctx):
                return Turn([message(f"echo {turn_input.text}")])

            echo = Experiment(agent=define_agent(name="echo", send=send, evidence_coverage=complete_evidence_coverage))
        """,
        "evals/graded_eval.py": """
            from assay.agent import define_score_eval, includes

            @define_score_eval
            async def test(t):
                await t.send("hi")
                t.check(t.reply, includes("hi")).score(2)
                t.score(0.5)
        """,
        "evals/plain_eval.py": """
            from assay.agent import define_eval

            @define_eval
            async def test(t):
                await t.send("hi")
                t.succeeded()
        """,
        "evals/later_eval.py": """
            from assay.agent import define_eval

            @define_eval
            async def test(t):
                t.skip("not today")
        """,
    }
    project = tmp_path / "project"
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(textwrap.dedent(text).lstrip())
    junit = tmp_path / "junit.xml"
    done = subprocess.run([sys.executable, "-m", "assay", "agent", "run", "--project", str(project), "--junit",
                           str(junit)], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "ASSAY_STORE": str(tmp_path / "store.db")})
    assert done.returncode == 0, done.stdout + done.stderr
    root = ElementTree.parse(junit).getroot()
    [suite] = root.findall("testsuite")
    for element in (root, suite):
        assert {key: element.get(key) for key in ("tests", "failures", "errors", "skipped")} == {
            "tests": "3", "failures": "0", "errors": "0", "skipped": "1",
        }
    cases = {case.get("classname"): case for case in suite.findall("testcase")}
    graded = cases["echo.graded"]
    assert graded.find("skipped") is None and graded.find("failure") is None and graded.find("error") is None
    assert [(p.get("name"), p.get("value")) for p in graded.find("properties")] == [("score", "2.5")]
    assert cases["echo.later"].find("skipped").get("message") == "skipped: not today"
    assert list(cases["echo.plain"]) == []


def test_a_junit_file_that_cannot_be_written_after_the_run_names_the_path_asked_for(tmp_path, capsys):
    """`--junit /proc/j.xml` said `… No such file or directory: '/proc/.j.xml.<hex>.tmp'`: the temporary file."""
    from assay.core.record import UnitResult
    from assay.core.report.junit import JUnitReport
    from assay.core.run_events import RunFinished

    (tmp_path / "a-file").write_text("x")
    target = tmp_path / "a-file" / "j.xml"  # its folder became a file by the time the report is written
    event = RunFinished("agent", "run-1", 0, build_units=lambda: [UnitResult("e#1", "passed")])
    JUnitReport(target).run_finished(event)
    assert event.exit_code == 2
    assert capsys.readouterr().err == f"Error: could not write JUnit report {target}: Not a directory\n"
