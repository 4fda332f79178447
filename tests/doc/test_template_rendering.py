"""Prompt templates print their values as promptfoo does, checked against the real Nunjucks promptfoo renders with
(the copy `.ci/run` installs with promptfoo), under node: lists were JSON (`["a", "b"]` where eval-kit's model saw
`a,b`), integral floats kept Python's `.0`, and small or huge numbers Python's exponent form (`1e-07`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.judge.templates import render_template

NUNJUCKS = Path.home() / ".cache" / "assay-tests" / "promptfoo" / "node_modules" / "nunjucks"

# What promptfoo's renderPrompt does before Nunjucks: one trailing newline off each string variable; then
# `renderString` with autoescape off.
RENDER = """
const nunjucks = require(process.argv[2]);
const env = new nunjucks.Environment(null, {autoescape: false});
let input = '';
process.stdin.on('data', (d) => { input += d; }).on('end', () => {
  const {template, cases} = JSON.parse(input);
  process.stdout.write(JSON.stringify(cases.map((vars) => {
    for (const key of Object.keys(vars)) if (typeof vars[key] === 'string') vars[key] = vars[key].replace(/\\n$/, '');
    return env.renderString(template, vars);
  })));
});
"""
TEMPLATE = "<{{ value }}> and <{{ absent }}>"


def nunjucks_renders(tmp_path: Path, values: list) -> list[str]:
    if not NUNJUCKS.is_dir() or shutil.which("node") is None:
        pytest.skip(f"Nunjucks comes with promptfoo: npm install --prefix {NUNJUCKS.parents[1]} promptfoo (as .ci/run does)")
    script = tmp_path / "render.js"
    script.write_text(RENDER)
    request = json.dumps({"template": TEMPLATE, "cases": [{"value": value} for value in values]})
    done = subprocess.run(["node", str(script), str(NUNJUCKS)], input=request, capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(done.stdout)


FIXED = [
    "plain", "two lines\n", "kept\n\n", "<b>&amp;</b>", "", True, False, None, 0, -7, 3.0, -0.0, 0.5, 0.1 + 0.2,
    1e-6, 1e-7, 1.25e-10, 1e20, 1e21, 2.5e22, 123456789012345680000.0, ["a", "b"], [1, [2, [3, None]], "x"],
    [None, True, 1.5], [], [[]], ["line\n"],
]


def test_fixed_values_print_as_promptfoo_prints_them(tmp_path):
    expected = nunjucks_renders(tmp_path, FIXED)
    assert [render_template(TEMPLATE, {"value": value}) for value in FIXED] == expected


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=12),
    st.floats(allow_nan=False, allow_infinity=False),
)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4), max_leaves=10)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(_values, min_size=150, max_size=150))
def test_generated_values_print_as_promptfoo_prints_them(tmp_path_factory, batch):
    """150 generated values a node process (one per value would be slow); six batches."""
    expected = nunjucks_renders(tmp_path_factory.mktemp("nunjucks"), batch)
    for value, nunjucks in zip(batch, expected):
        assert render_template(TEMPLATE, {"value": value}) == nunjucks, value


def test_an_object_is_its_json_where_nunjucks_would_write_object_object():
    assert render_template("{{ v }}", {"v": {"a": [1, 2]}}) == '{"a": [1, 2]}'
    assert render_template("{{ v }}", {"v": [{"a": 1}, "b"]}) == '{"a": 1},b'
    # and a value's own braces are never rendered again
    assert render_template("{{ v }}", {"v": "{{ w }}", "w": "no"}) == "{{ w }}"
