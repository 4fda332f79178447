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
