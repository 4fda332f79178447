"""`assay runs export` and `runs import` as a new user meets them: a URL off by one letter, a collector on a
real server on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import time

import pytest
from servers.otlp_receiver import receiver

from assay.core.record import RunManifest, UnitResult, utc_timestamp
from assay.core.results_store import publish_run

pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install 'assay[otel]'")


pytestmark = pytest.mark.usefixtures("own_store")  # the session's store may hold the same bytes


def _assay(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # (requests lets $REQUESTS_CA_BUNDLE or $CURL_CA_BUNDLE win over the certificate the SDK is given)
    inherited = {name: value for name, value in os.environ.items() if name not in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")}
    return subprocess.run([sys.executable, "-m", "assay", *arguments], capture_output=True, text=True, timeout=120,
                          check=False, env={**inherited, **(env or {})})


def _run(run_id: str) -> None:
    manifest = RunManifest(run_id=run_id, kind="agent", created_at=utc_timestamp(), title="checkout")
    publish_run(manifest, [UnitResult("checkout/refund#1", "passed", group="checkout/refund")])


def test_an_https_url_of_a_collector_that_speaks_plain_http_fails_at_once_saying_so():
    """A collector's OTLP/HTTP port serves http:// unless TLS is set up: the SDK retried the failed handshake for
    ~16 s and then printed its retries ("Transient error HTTPSConnectionPool … SSLError … retrying in 1.18s")."""
    _run("agent-20261206T100000Z-5eca0001")
    with receiver() as (url, received):
        port = url.rsplit(":", 1)[1]
        started = time.monotonic()
        done = _assay("runs", "export", "agent-20261206T100000Z-5eca0001", "--otlp", f"https://127.0.0.1:{port}")
        took = time.monotonic() - started
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"Error: exporting agent-20261206T100000Z-5eca0001 to https://127.0.0.1:{port} failed: "
                                  f"127.0.0.1:{port} does not answer TLS (")
    assert done.stderr.endswith(f"give http://127.0.0.1:{port}\n")
    assert len(done.stderr.splitlines()) == 1 and "Transient" not in done.stderr and "Traceback" not in done.stderr
    assert took < 8, took
    assert received.paths == []


def test_an_https_collector_is_still_exported_to(tmp_path):
    """The TLS check asks only whether TLS is spoken: a collector with its own certificate, given to the SDK in
    OTEL_EXPORTER_OTLP_CERTIFICATE, takes the export."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (it makes the test collector's certificate)")
    key, certificate = tmp_path / "key.pem", tmp_path / "cert.pem"
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                           str(certificate), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                          capture_output=True, text=True, timeout=60, check=False)
    if made.returncode != 0:
        pytest.skip(f"openssl could not make a certificate: {made.stderr[-300:]}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    _run("agent-20261206T100000Z-5eca0002")
    with receiver(tls=context) as (url, received):
        done = _assay("runs", "export", "agent-20261206T100000Z-5eca0002", "--otlp", url,
                      env={"OTEL_EXPORTER_OTLP_CERTIFICATE": str(certificate)})
    assert done.returncode == 0, done.stderr
    assert sorted(received.paths) == ["/v1/logs", "/v1/traces"]



def test_a_log_whose_file_name_holds_a_colon_stays_in_its_series(tmp_path):
    """The series an import belongs to is its title without the file's name: `nightly: rerun.xml` was cut at its
    own `: `, so it made a series of its own and `trend`, `flaky` and `compare latest` left it out."""
    for day, name in enumerate(("nightly.xml", "nightly: rerun.xml", "nightly 3.xml"), 1):
        failure = '<failure message="wrong"/>' if day == 2 else ""
        (tmp_path / name).write_text(f'<testsuite name="shop" tests="2" timestamp="2026-12-0{day}T10:00:00">'
                                     f'<testcase name="a"/><testcase name="b">{failure}</testcase></testsuite>\n')
    env = {"ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    names = [str(tmp_path / name) for name in ("nightly.xml", "nightly: rerun.xml", "nightly 3.xml")]
    assert _assay("runs", "import", *names, env=env).returncode == 0
    trend = _assay("runs", "trend", env=env)
    assert trend.returncode == 0, trend.stderr
    assert trend.stdout.splitlines()[0] == "imported (all units): pass rate over 3 run(s), oldest first (95% Wilson interval)"
    assert "50.0%" in trend.stdout
    flaky = _assay("runs", "flaky", env=env)
    assert "1 flaky unit(s) over the last 3 run(s)" in flaky.stdout
    assert "  b  pass rate 67% [21, 94] (2 passed, 1 failed over 3 run(s))" in flaky.stdout


def test_a_password_in_the_collectors_url_is_sent_but_never_printed(tmp_path):
    """`https://user:KEY@host` is how some collectors take basic authentication (the SDK sends it): the export's
    line, its --json, its errors and a run's warning printed the key into the CI log."""
    import base64
    import json
    import socket

    _run("agent-20261206T100000Z-5eca0003")
    with receiver() as (url, received):
        port = url.rsplit(":", 1)[1]
        done = _assay("runs", "export", "agent-20261206T100000Z-5eca0003", "--otlp", f"http://evals:s3cret@127.0.0.1:{port}")
        as_json = _assay("runs", "export", "agent-20261206T100000Z-5eca0003", "--otlp", f"http://evals:s3cret@127.0.0.1:{port}",
                         "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Exported agent-20261206T100000Z-5eca0003 to http://evals:***@127.0.0.1:{port}: 1 span")
    assert json.loads(as_json.stdout)["endpoint"] == f"http://evals:***@127.0.0.1:{port}"
    assert {headers.get("authorization") for headers in received.headers} == {"Basic " + base64.b64encode(b"evals:s3cret").decode()}  # still sent
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    for url, expected in (
        (f"http://evals:s3cret@127.0.0.1:{closed}", f"to http://evals:***@127.0.0.1:{closed} failed: cannot connect"),
        (f"http://evals:s3cret@127.0.0.1:{closed}/v1/logs", f"give the collector's base URL (http://evals:***@127.0.0.1:{closed})"),
        ("http://evals:s3cret@127.0.0.1:99999", "'http://evals:***@127.0.0.1:99999': the port must be a number"),
    ):
        failed = _assay("runs", "export", "agent-20261206T100000Z-5eca0003", "--otlp", url)
        assert failed.returncode == 2 and expected in failed.stderr, failed.stderr
        assert "s3cret" not in failed.stdout + failed.stderr
    (tmp_path / "junit.xml").write_text('<testsuite name="s" tests="1"><testcase name="a"/></testsuite>\n')
    imported = _assay("runs", "import", str(tmp_path / "junit.xml"),
                      env={"ASSAY_OTLP_EXPORT": f"http://evals:s3cret@127.0.0.1:{closed}"})
    assert imported.returncode == 0, imported.stderr
    assert "Warning: run not exported: exporting imported-" in imported.stderr
    assert f"to http://evals:***@127.0.0.1:{closed} failed" in imported.stderr and "s3cret" not in imported.stderr


def test_an_inspect_json_log_cut_short_before_its_samples_says_so(inspect_logs, tmp_path):
    """A partial copy of a `.json` log that ends in its header said only what the JSON parser saw there
    (`not valid JSON: Expecting ',' delimiter (at character 2700)`, `expected an object key (at character 1)`),
    where every other cut log says it is cut short and what to do."""
    text = inspect_logs["json"].path.read_text(encoding="utf-8")
    header = text.index('"samples"')
    cuts = sorted({1, 2, header // 7, header // 3, header // 2, header - 40, header - 3, *range(10, 60, 7)})
    env = {"ASSAY_STORE": str(tmp_path / "store" / "assay.db")}
    for cut in cuts:
        log = tmp_path / f"cut-{cut}.json"
        log.write_text(text[:cut], encoding="utf-8")
        for given in ((), ("--format", "inspect")):
            done = _assay("runs", "import", str(log), *given, env=env)
            assert done.returncode == 2, (cut, done.stdout, done.stderr)
            assert len(done.stderr.splitlines()) == 1, (cut, done.stderr)
            if "Which tool wrote it cannot be told" not in done.stderr:  # (a head too short to tell the format by)
                assert done.stderr.endswith(": the file is cut short (a copy or download that did not finish?); import "
                                            "the whole file\n"), (cut, done.stderr)
    # a log damaged inside, not cut short, is not said to be
    damaged = tmp_path / "damaged.json"
    damaged.write_text(text[:1] + "x" + text[1:], encoding="utf-8")
    done = _assay("runs", "import", str(damaged), "--format", "inspect", env=env)
    assert done.returncode == 2 and "cut short" not in done.stderr, done.stderr


def test_promptfoos_other_outputs_are_named_with_the_one_to_give(tmp_path, promptfoo_eval):
    """promptfoo writes --output as JSON, JSON Lines, YAML, CSV or HTML, by the file's extension. The JSON Lines
    file read as "a file cut short?", and every one of them asked for a --format that could not read it."""
    promptfoo_eval(tmp_path, ["results.jsonl", "results.yaml", "results.csv"])
    give = "assay reads a tool's JSON report (promptfoo's is `promptfoo eval --output results.json`)\n"
    for name, why in (("results.jsonl", "not one JSON document but several, one a line (JSON Lines: unexpected content "
                                        "after document: line 2 column 1"),
                      ("results.yaml", "this is promptfoo's YAML or CSV output, which assay does not read"),
                      ("results.csv", "this is promptfoo's YAML or CSV output, which assay does not read")):
        done = _assay("runs", "import", str(tmp_path / name))
        assert done.returncode == 2, done.stdout
        assert done.stderr.startswith(f"Error: {tmp_path / name}: {why}") and done.stderr.endswith(give), done.stderr
        assert "cut short" not in done.stderr and "--format" not in done.stderr
    told = _assay("runs", "import", str(tmp_path / "results.jsonl"), "--format", "promptfoo")
    assert told.returncode == 2
    assert told.stderr.endswith(": the file holds several JSON documents, one a line (JSON Lines); give the tool's JSON "
                                "report, such as promptfoo's `promptfoo eval --output results.json`\n"), told.stderr
    # a JSON report cut short is still said to be
    cut = tmp_path / "cut.json"
    cut.write_text('{"results": {"version": 3, "results": [', encoding="utf-8")
    assert "a file cut short? Which tool wrote it cannot be told" in _assay("runs", "import", str(cut)).stderr


def test_a_junit_file_cut_short_says_so_and_a_malformed_one_does_not(tmp_path):
    """A JUnit report copied in part read only "not well-formed XML: no element found" (or "unclosed token")."""
    whole = ('<testsuites><testsuite name="s" tests="2"><testcase name="a"/><testcase name="b">'
             '<failure message="x">boom</failure></testcase></testsuite></testsuites>\n')
    for name, text in (("at-a-tag.xml", whole[:whole.index("<testcase name=\"b\">")]),
                       ("in-a-tag.xml", whole[:whole.index("<failure") + 5])):
        (tmp_path / name).write_text(text, encoding="utf-8")
        done = _assay("runs", "import", str(tmp_path / name))
        assert done.returncode == 2, done.stdout
        assert done.stderr.strip().endswith(
            "the file is cut short (a copy or download that did not finish?); import the whole file"), done.stderr
    (tmp_path / "mismatched.xml").write_text(whole.replace("</testcase></testsuite>", "</testsuite></testcase>"),
                                             encoding="utf-8")
    done = _assay("runs", "import", str(tmp_path / "mismatched.xml"))
    assert done.returncode == 2 and "mismatched tag" in done.stderr and "cut short" not in done.stderr, done.stderr


def test_a_collector_that_does_not_answer_in_time_is_said_so_with_the_fix():
    """A collector slower than --timeout failed as "the endpoint did not accept the export (Failed to export logs batch
    due to timeout, max retries or shutdown.; …)": it had not refused anything, and nothing said to give it longer."""
    _run("agent-20261206T100000Z-5eca0004")
    with receiver(delay=3) as (url, received):
        done = _assay("runs", "export", "agent-20261206T100000Z-5eca0004", "--otlp", url, "--timeout", "1")
    assert done.returncode == 2, done.stdout
    assert done.stderr == (f"Error: exporting agent-20261206T100000Z-5eca0004 to {url} failed: the collector did not answer "
                           f"within 1 s; when it is only slow, give it longer: assay runs export agent-20261206T100000Z-5eca0004 "
                           f"--otlp {url} --timeout 60\n")
    assert received.requests >= 1  # it was reached, and did not answer in time
    with receiver(status=503) as (url, _):  # a collector that answers, busy: its answer is what is said
        busy = _assay("runs", "export", "agent-20261206T100000Z-5eca0004", "--otlp", url, "--timeout", "2")
    assert busy.returncode == 2 and "Service Unavailable" in busy.stderr and "did not answer" not in busy.stderr, busy.stderr
