"""`runs import` of logs as a stranger's disk or editor leaves them: an Inspect log damaged inside (a byte changed in a
member, an entry of its zip directory), a JSON report saved with a byte-order mark, in UTF-16 or with a byte that is not
UTF-8, a JUnit report in UTF-16. Each is imported, or refused in one line that says what is wrong, exit 2."""

from __future__ import annotations

import json
import subprocess

import pytest
from assay_cli import assay_cli

from assay.core.interop.zipstream import find_members


pytestmark = pytest.mark.usefixtures("own_store")


_assay = assay_cli


def _refused(done: subprocess.CompletedProcess[str]) -> str:
    """The one `Error:` line of a refused import."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


def test_an_eval_log_whose_header_member_is_damaged_is_named_not_a_traceback(inspect_logs, tmp_path):
    """A byte changed in a zstd member read whole (header.json) raised zstandard's `ZstdError` out of `runs import`: a
    traceback, exit 1. The summaries, inflated a piece at a time, already said `member summaries.json: …`."""
    source = inspect_logs["eval"].path
    header = find_members(source, {"header.json"})["header.json"]
    assert header.method == 93  # zstd, Inspect's default
    data = bytearray(source.read_bytes())
    local_names = int.from_bytes(data[header.offset + 26 : header.offset + 28], "little")
    local_extra = int.from_bytes(data[header.offset + 28 : header.offset + 30], "little")
    start = header.offset + 30 + local_names + local_extra
    data[start : start + 4] = b"\x00\x00\x00\x00"  # the zstd frame's magic number
    damaged = tmp_path / "damaged.eval"
    damaged.write_bytes(bytes(data))
    stderr = _refused(_assay("runs", "import", str(damaged)))
    assert stderr.startswith(f"Error: {damaged}: member header.json: "), stderr


def test_an_eval_log_whose_zip_directory_is_damaged_is_not_called_unfinished(inspect_logs, tmp_path):
    """A directory entry that no longer parses hid header.json, and the journal's entry was still found: the log was
    "not finished (it has no header.json yet) … import it then", of an eval that had ended long before."""
    source = inspect_logs["eval"].path
    data = bytearray(source.read_bytes())
    entry = data.rindex(b"header.json") - 46  # its central directory entry, which begins with PK\x01\x02
    assert data[entry : entry + 4] == b"PK\x01\x02"
    data[entry : entry + 4] = b"PK\x00\x00"
    damaged = tmp_path / "damaged.eval"
    damaged.write_bytes(bytes(data))
    stderr = _refused(_assay("runs", "import", str(damaged)))
    assert stderr == f"Error: {damaged}: the zip central directory is damaged\n"


def test_a_json_report_saved_with_a_byte_order_mark_is_imported(pydantic_evals_report, tmp_path):
    """Detection reads past a UTF-8 byte-order mark (Notepad, PowerShell's Set-Content -Encoding utf8), and then the
    report was refused: `not valid JSON (UTF-8 byte order mark (BOM) is not supported: line 1 column 1 (char 0))`."""
    marked = tmp_path / "report-bom.json"
    marked.write_bytes(b"\xef\xbb\xbf" + pydantic_evals_report.path.read_bytes())
    plain = _assay("runs", "import", str(pydantic_evals_report.path), "--json")
    for given in ((), ("--format", "pydantic-evals")):
        done = _assay("runs", "import", str(marked), *given, "--json")
        assert done.returncode == 0, done.stderr
        (imported,) = json.loads(done.stdout)["imported"]
        assert imported["format"] == "pydantic-evals"
        assert imported["counts"] == json.loads(plain.stdout)["imported"][0]["counts"]


def test_a_json_report_that_is_not_utf8_says_so_and_where(pydantic_evals_report, tmp_path):
    """A byte that is not UTF-8 read as `not valid JSON (str is not valid UTF-8: surrogates not allowed: line 1 column
    1 (char 0))`, wherever the byte was, and a UTF-16 file (PowerShell's `>`) the same with --format, or "cannot tell
    which tool wrote this file; give --format" without, which no --format could read."""
    text = pydantic_evals_report.path.read_bytes()
    at = text.index(b'"cases"')
    latin = tmp_path / "latin-1.json"
    latin.write_bytes(text[:at] + b'"note": "caf\xe9", ' + text[at:])
    byte = at + len(b'"note": "caf')
    for given in ((), ("--format", "pydantic-evals")):
        stderr = _refused(_assay("runs", "import", str(latin), *given))
        assert f"latin-1.json: not JSON text: its bytes are not UTF-8 (invalid continuation byte at byte {byte})" in stderr
        assert "surrogates" not in stderr and "--format" not in stderr, stderr
    wide = tmp_path / "utf-16.json"
    wide.write_text(text.decode("utf-8"), encoding="utf-16")
    for given in ((), ("--format", "pydantic-evals")):
        stderr = _refused(_assay("runs", "import", str(wide), *given))
        assert "utf-16.json: the file is UTF-16 text (as Windows PowerShell's `>` and Out-File write it), and assay reads " \
               "a JSON report as UTF-8: save it as UTF-8 (iconv -f UTF-16 -t UTF-8 FILE > NEW" in stderr, stderr
        assert "surrogates" not in stderr and "--format" not in stderr, stderr


def test_a_junit_report_in_utf16_is_told_junit_as_with_format(tmp_path):
    """The XML parser reads UTF-16 (its byte-order mark first), so `--format junit` imported it; without --format it was
    "cannot tell which tool wrote this file"."""
    report = tmp_path / "junit.xml"
    report.write_text('<?xml version="1.0" encoding="UTF-16"?>\n<testsuites><testsuite name="shop" tests="2" failures="1">'
                      '<testcase classname="cart" name="adds"/><testcase classname="cart" name="pays">'
                      '<failure message="declined"/></testcase></testsuite></testsuites>\n', encoding="utf-16")
    done = _assay("runs", "import", str(report), "--json")
    assert done.returncode == 0, done.stderr
    (imported,) = json.loads(done.stdout)["imported"]
    assert imported["format"] == "junit" and imported["counts"]["passed"] == imported["counts"]["failed"] == 1
