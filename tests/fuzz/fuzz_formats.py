"""Every user-written file format, a valid seed for it, hostile mutations, and the real command that reads it.

Shared by the Hypothesis tests (tests/fuzz/) and `benchmarks/fuzz.py`: a mutation takes a `random.Random`
(Hypothesis hands one out with `st.randoms()`), so both drive exactly the same operators.
"""

from __future__ import annotations

import functools
import os
import random
import re
import shutil
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import typer.main
from click.testing import CliRunner

from assay.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


# --- seeds -------------------------------------------------------------------------------------

VIDEO_CASE = b"""\
# A numbered clip: 6 s at 10 frames per second.
video: clip.mp4
description: Frame numbers, read back by the adapter.
sampling:
  every_s: 0.5
sample_defaults:
  field: value
workflow:
  targets:
    - id: number
      label: Number
      region: [0, 0, 32, 32]
targets:
  number:
    label: Frame number
    config: {mode: number, nested: {list: [1, 2.5, "three"], flag: true}}
    sample_defaults:
      compare: {mode: numeric, tolerance: 0.5}
    samples:
      - range: [0.0, 2.0]
        expect: &first 5
      - at: [2.5, 3.5]
        expect: *first
        comment: Same as the first block.
      - at: 4.0
        expect: {value: 40, tags: [a, b]}
        compare: {mode: exact}
      - at: 5.5
        ignore: Motion blur.
  parity:
    samples:
      - range: [0.0, 6.0]
        every_s: 1.0
        expect: even
        field: parity
thresholds:
  min_pass_rate: 0.5
  max_failures: 3
  per_target:
    number: {min_pass_rate: 0.25}
"""

VIDEO_CONFIG = b"""\
# Eval-wide gates and one cloud store (unused by the local case).
thresholds:
  min_pass_rate: 0.9
  max_failures: 2
  per_target:
    number:
      min_pass_rate: 0.5
video_stores:
  archive:
    type: s3
    bucket: recordings
    region: eu-west-1
    endpoint_url: https://s3.example.test
    public_base_url: https://cdn.example.test/videos/
    access_key_id_env: ARCHIVE_KEY
    secret_access_key_env: ARCHIVE_SECRET
"""

VIDEO_ADAPTER_CONFIG = b"""\
# Passed to create_evaluator as config.config.
model: frame-reader-v2
lamp_region: [20, 100, 50, 110]
thresholds: &limits {low: 0.25, high: 0.75}
retry: {attempts: 3, backoff_s: 1.5, limits: *limits}
labels:
  - red
  - green
endpoint: http://127.0.0.1:9/v1
enabled: true
"""

DOC_CONFIG = (EXAMPLES / "doc" / "evals" / "eval-kit.config.json").read_bytes()
DOC_MANIFEST = (EXAMPLES / "doc" / "evals" / "cases" / "release-notes-v1" / "case-manifest.json").read_bytes()
DOC_FIXTURE = (EXAMPLES / "doc" / "evals" / "cases" / "release-notes-v1" / "expected-items.json").read_bytes()

AGENT_PYPROJECT = b"""\
[project]
name = "shop"
version = "0.1.0"

[tool.assay]
name = "shop-assistant demo"
concurrency = 4
timeout = 30.5

[tool.assay.pricing]
"demo-model" = { input = 1.0, output = 4.0 }
"openai/*" = { input = 2.5, output = 10.0, cache_read = 1.25 }

[tool.assay.judge]
model = "judge-1"
base_url = "http://127.0.0.1:9/v1"
timeout = 20
reasoning_effort = "low"
"""

AGENT_DOTENV = b"""\
# Secrets for the demo agent.
export SHOP_API_KEY=sk-demo-123
SHOP_BASE_URL="http://127.0.0.1:9/v1"
SHOP_GREETING='hello world'
SHOP_MULTILINE="line one\\nline two"
SHOP_TIMEOUT=30 # seconds
EMPTY=
"""

AGENT_EXPERIMENT = b'''\
"""The one configuration this project runs."""

from agents.stub import agent

from assay.agent import Experiment

baseline = Experiment(
    agent=agent,
    model="demo-model",
    reasoning_effort="low",
    flags={"tone": "friendly", "limits": {"max_turns": 4, "ratio": 0.5}, "tags": ["a", "b"]},
    attempts=2,
    timeout=30.0,
    concurrency=2,
    budget=1.5,
    evals=["hello"],
    description="stub agent",
    labels=["demo", "fuzz"],
)
'''

STUB_AGENT = """
from assay.agent import Turn, complete_evidence_coverage, define_agent, message

async def send(turn_input, ctx):
    return Turn([message("ok")])

agent = define_agent(name="stub", send=send, evidence_coverage=complete_evidence_coverage)
"""

HELLO_EVAL = """
from assay.agent import define_eval

@define_eval(description="says hello", tags=["smoke"])
async def test(t):
    await t.send("hi")
"""


# --- hostile payloads, per syntax ------------------------------------------------------------------

HUGE_NUMBERS = {
    "yaml": ["9" * 4301, "-" + "7" * 9000, "1" + "0" * 400, "1e400", "-.inf", ".nan", "0x" + "f" * 5000,
             "1_" * 3000 + "1", "0o" + "7" * 4400, "190:20:30" + ":59" * 1500, "12345678901234567890"],
    "json": ["9" * 4301, "-" + "7" * 9000, "1" + "0" * 400, "1e400", "-1e400", "NaN", "Infinity",
             "0." + "1" * 5000, "12345678901234567890"],
    "toml": ["9" * 4301, "-" + "7" * 9000, "1" + "0" * 400, "1e400", "inf", "-nan", "0x" + "f" * 5000,
             "1_" * 3000 + "1", "12345678901234567890"],
    "python": ["10**40", "10**5000", "1e309", "float('inf')", "float('nan')", "2**63", "-1", "0",
               "9" * 4301],
    "dotenv": ["9" * 4301, "1e400"],
}

DATES = {
    "yaml": ["2026-01-01", "2026-13-45", "2026-02-30", "2001-12-14t21:59:43.10-05:00", "2026-01-01 25:61:61",
             "0000-01-01", "9999-12-31T23:59:59Z"],
    "json": ['"2026-01-01"', '"2026-13-45T99:99:99Z"'],
    "toml": ["2026-01-01", "1979-05-27T07:32:00Z", "2026-02-30", "07:32:00", "2026-13-01T00:00:00",
             "1979-05-27 07:32:00.999999-07:00", "24:00:00"],
    "python": ["__import__('datetime').date(2026, 1, 1)", "__import__('datetime').datetime(2026, 1, 1)"],
    "dotenv": ["2026-01-01"],
}

BAD_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\r",
             b"\x1b[31m", b"\t", b"\x85", b"\xe2\x80\xa8"]

PUNCTUATION = b"{}[]:,\"'&*!|>-#=\n ?%@`\\.0"


def deep_nesting(syntax: str, depth: int, rng: random.Random) -> str:
    if syntax == "yaml":
        shape = rng.choice(["flow-list", "flow-map", "block", "mixed"])
        if shape == "flow-list":
            return "[" * depth + "]" * depth
        if shape == "flow-map":
            return "{a: " * depth + "1" + "}" * depth
        if shape == "mixed":
            return "[{a: " * (depth // 2) + "1" + "}]" * (depth // 2)
        depth = min(depth, 400)  # block nesting costs depth² characters
        return "\n" + "".join("  " * (level + 2) + "k:\n" for level in range(depth)) + "  " * (depth + 2) + "v"
    if syntax == "json":
        return rng.choice(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth])
    if syntax == "toml":
        return rng.choice(["[" * depth + "]" * depth, "{a = " * depth + "1" + "}" * depth, "[{a = " * depth + "1}]" * depth])
    if syntax == "python":
        depth = min(depth, 300)
        return rng.choice(["[" * depth + "]" * depth, '{"a": ' * depth + "1" + "}" * depth])
    return "x" * depth


def alias_bomb(rng: random.Random) -> str:
    """A flow sequence whose n-th element holds ten aliases of the (n-1)-th: 10**levels nodes when expanded."""
    levels = rng.randint(4, 9)
    fan_out = rng.choice([2, 5, 10])
    parts = ["&a0 [lol, lol]"]
    for level in range(1, levels):
        parts.append(f"&a{level} [" + ", ".join(f"*a{level - 1}" for _ in range(fan_out)) + "]")
    if rng.random() < 0.3:
        parts.append("&r [*r]" if rng.random() < 0.5 else "&m {k: *m}")  # a recursive alias
    return "[" + ", ".join(parts) + "]"


def non_string_key(syntax: str, rng: random.Random) -> str:
    if syntax == "yaml":
        return rng.choice(["{1: one}", "{null: none}", "{true: yes}", "{2026-01-01: date}", "{? [a, b] : pair}",
                           "{.inf: big}", "{1.5: x, 1: y}", "{[1, 2]: z}", "{? {a: 1} : m}"])
    if syntax == "json":
        return rng.choice(['{"": 1}', '{"a": 1, "a": 2}', '{"\\u0000": 1}', '{"\\ud800": 1}'])
    if syntax == "toml":
        return rng.choice(['{ "" = 1 }', "{ 1 = 2 }", '{ "\\u0000" = 1 }', "{ a.b.c = 1 }"])
    if syntax == "python":
        return rng.choice(["{1: 2}", "{None: 3}", "{(1, 2): 4}", "{'\\ud800': 1}", "{'a': object()}"])
    return "1"


# --- where a payload goes ----------------------------------------------------------------------------

_VALUE_SLOTS = {
    "yaml": re.compile(rb"(?<=: )[^\n#]+|(?<=- )[^\n#]+"),
    "json": re.compile(rb'(?<=": )(?:"[^"\\\n]*(?:\\.[^"\\\n]*)*"|[^,\n}\]]+)'),
    "toml": re.compile(rb"(?<== )[^\n]+"),
    "python": re.compile(rb"(?<==)[^,\n)]+(?=,\n)"),
    "dotenv": re.compile(rb"(?<==)[^\n]*"),
}


def _replace_value(data: bytes, syntax: str, payload: str, rng: random.Random) -> bytes:
    slots = list(_VALUE_SLOTS[syntax].finditer(data))
    if not slots:
        return data + payload.encode("utf-8", "surrogatepass")
    slot = rng.choice(slots)
    return data[: slot.start()] + payload.encode("utf-8", "surrogatepass") + data[slot.end():]


def _insert(data: bytes, chunk: bytes, rng: random.Random) -> bytes:
    at = rng.randint(0, len(data))
    return data[:at] + chunk + data[at:]


# --- mutation operators ----------------------------------------------------------------------------

def flip_bytes(data: bytes, syntax: str, rng: random.Random) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if buffer:
            buffer[rng.randrange(len(buffer))] ^= 1 << rng.randrange(8)
    return bytes(buffer)


def splice_punctuation(data: bytes, syntax: str, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.5 and data:
            start = rng.randrange(len(data))
            data = data[:start] + data[start + rng.randint(1, 12):]
        else:
            data = _insert(data, bytes([rng.choice(PUNCTUATION)]) * rng.randint(1, 3), rng)
    return data


def duplicate_span(data: bytes, syntax: str, rng: random.Random) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    span = data[start: start + rng.randint(1, 200)]
    return _insert(data, span * rng.randint(1, 20), rng)


def truncate(data: bytes, syntax: str, rng: random.Random) -> bytes:
    return data[: rng.randint(0, len(data))]


def nest_deeply(data: bytes, syntax: str, rng: random.Random) -> bytes:
    depth = rng.choice([63, 64, 65, 100, 500, 1000, 5000, 100_000])
    return _replace_value(data, syntax, deep_nesting(syntax, depth, rng), rng)


def bomb_aliases(data: bytes, syntax: str, rng: random.Random) -> bytes:
    if syntax != "yaml":
        return nest_deeply(data, syntax, rng)
    return _replace_value(data, syntax, alias_bomb(rng), rng)


def huge_number(data: bytes, syntax: str, rng: random.Random) -> bytes:
    return _replace_value(data, syntax, rng.choice(HUGE_NUMBERS[syntax]), rng)


def put_date(data: bytes, syntax: str, rng: random.Random) -> bytes:
    return _replace_value(data, syntax, rng.choice(DATES[syntax]), rng)


def put_non_string_key(data: bytes, syntax: str, rng: random.Random) -> bytes:
    if syntax == "yaml" and rng.random() < 0.5:
        key = rng.choice(["1", "null", "true", "2026-01-01", "? [a, b]\n", ".inf", "~", "0x10"])
        line = f"{key}: value\n".encode()
        starts = [0] + [match.end() for match in re.finditer(rb"\n", data)]
        at = rng.choice(starts)
        indent = re.match(rb" *", data[at:]).group(0)
        return data[:at] + indent + line + data[at:]
    return _replace_value(data, syntax, non_string_key(syntax, rng), rng)


def break_encoding(data: bytes, syntax: str, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 3)):
        data = _insert(data, rng.choice(BAD_BYTES), rng)
    return data


def oversize(data: bytes, syntax: str, rng: random.Random) -> bytes:
    """A long string or many repeated lines: the size cap, and loaders that must stay linear."""
    if syntax == "dotenv":
        lines = rng.choice([10_000, 100_000])
        return data + b"".join(b"KEY_%d=value %d\n" % (index, index) for index in range(lines))
    size = rng.choice([100_000, 1_000_000, 20_000_000])  # the last is over every format's size cap
    quote = b"" if syntax == "yaml" else b'"'
    slots = [(slot.start(), slot.end()) for slot in _VALUE_SLOTS[syntax].finditer(data)] or [(len(data), len(data))]
    start, end = rng.choice(slots)
    # Built as bytes in one go: a 20 MB str and its encoded copy would dominate the worker's memory figure.
    return b"".join((data[:start], quote, b"x" * size, quote, data[end:]))


def dotenv_hostile(data: bytes, syntax: str, rng: random.Random) -> bytes:
    """Lines `.env` readers stumble on: NUL bytes, unterminated quotes, odd keys, control characters."""
    line = rng.choice([
        b"KEY=\x00value", b"NUL\x00KEY=1", b'QUOTED="unterminated', b"='no key'", b"=", b"export", b"export =1",
        b"1KEY=digit first", b"K\xc3\xa9Y=accented", b"KEY=" + b"v" * 200_000, b"SPACED KEY=1", b'ESC="\\x1b[2J"',
        b"KEY='a' 'b'", b'"KEY"=quoted key', b"KEY=\"\\\\\\\"\"", b"\xef\xbb\xbfBOM=1", b"A=1\rB=2", b"KEY=\\",
    ])
    return _insert(data, b"\n" + line + b"\n", rng)


OPERATORS: dict[str, Callable[[bytes, str, random.Random], bytes]] = {
    "flip_bytes": flip_bytes,
    "splice_punctuation": splice_punctuation,
    "duplicate_span": duplicate_span,
    "truncate": truncate,
    "nest_deeply": nest_deeply,
    "bomb_aliases": bomb_aliases,
    "huge_number": huge_number,
    "put_date": put_date,
    "put_non_string_key": put_non_string_key,
    "break_encoding": break_encoding,
    "oversize": oversize,
    "dotenv_hostile": dotenv_hostile,
}


def operators_for(syntax: str) -> list[str]:
    names = [name for name in OPERATORS if name != "dotenv_hostile" or syntax == "dotenv"]
    if syntax != "yaml":
        names.remove("bomb_aliases")
    return names


def mutate(seed: bytes, syntax: str, rng: random.Random, first: str | None = None) -> tuple[bytes, list[str]]:
    """One variant of `seed`: `first` (or a random operator), then up to two more with decreasing odds."""
    names = operators_for(syntax)
    # The oversize operator is slow to run; keep it rare so 10,000 variants stay affordable.
    weights = [0.15 if name == "oversize" else 1.0 for name in names]
    chosen = [first or rng.choices(names, weights)[0]]
    while len(chosen) < 3 and rng.random() < 0.35:
        chosen.append(rng.choices(names, weights)[0])
    # Grown once and last, so no other operator searches the megabytes (that would measure the
    # harness's regex memory, not assay's).
    if "oversize" in chosen:
        chosen = [name for name in chosen if name != "oversize"] + ["oversize"]
    data = seed
    for name in chosen:
        data = OPERATORS[name](data, syntax, rng)
    return data, chosen


# --- running a variant through the real command ----------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    exit_code: int | None
    output: str
    exception: BaseException | None
    seconds: float


@functools.cache
def _cli() -> click.Command:
    # Typer rebuilds its click tree on every CliRunner.invoke (~0.1 s); the variants share one.
    return typer.main.get_command(app)


def _invoke(args: list[str]) -> Outcome:
    started = time.perf_counter()
    result = CliRunner().invoke(_cli(), args)
    seconds = time.perf_counter() - started
    exception = result.exception if result.exception is not None and not isinstance(result.exception, SystemExit) else None
    return Outcome(result.exit_code, result.output, exception, seconds)


@dataclass(frozen=True)
class FuzzFormat:
    """One file format: its seed, where a variant is written, and the command that reads it."""

    name: str
    syntax: str
    seed: bytes
    relative_path: str
    prepare: Callable[[Path], None]
    command: Callable[[Path], list[str]]
    names: tuple[str, ...]  # an error message must contain one of these (the file, or its kind)
    exit_codes: tuple[int, ...] = (0, 2)
    check: Callable[[Path], None] | None = None  # extra in-process check after the command

    def write_variant(self, work: Path, data: bytes) -> Path:
        path = work / self.relative_path
        path.write_bytes(data)
        return path

    def run(self, work: Path, data: bytes) -> Outcome:
        self.write_variant(work, data)
        with preserved_environment():
            outcome = _invoke(self.command(work))
            if outcome.exception is None and self.check is not None:
                started = time.perf_counter()
                try:
                    self.check(work)
                except Exception as error:  # noqa: BLE001 - reported as a problem below
                    return Outcome(outcome.exit_code, outcome.output, error, outcome.seconds)
                outcome = Outcome(outcome.exit_code, outcome.output, None, outcome.seconds + time.perf_counter() - started)
        return outcome


def problem_with(fmt: FuzzFormat, work: Path, outcome: Outcome) -> str | None:
    """None when the command behaved: no traceback, a documented exit code, a failure that names its file."""
    if outcome.exception is not None:
        error = outcome.exception
        return f"traceback: {type(error).__name__}: {str(error)[:300]}"
    if "Traceback (most recent call last)" in outcome.output:
        return "traceback printed: " + outcome.output[-300:]
    if outcome.exit_code not in fmt.exit_codes:
        return f"exit code {outcome.exit_code} (expected one of {fmt.exit_codes}): {outcome.output[-300:]}"
    if outcome.exit_code != 0:
        message = error_text(outcome.output)
        if not any(name in message for name in (*fmt.names, str(work))):
            return f"the message names no file: {message[-300:]}"
    return None


def error_text(output: str) -> str:
    """The failure part of a command's output, on one line: progress lines (`ok - ...`) dropped, and
    rich's box drawing and line wrapping undone so a wrapped path reads whole again."""
    lines = [line for line in output.splitlines() if not line.startswith("ok - ")]
    text = re.sub(r"[│╭╮╰╯─]", " ", "\n".join(lines))
    return re.sub(r"\s*\n\s*", "", re.sub(r"[ \t]+", " ", text)).strip()


class preserved_environment:
    """`.env` loading writes os.environ; each variant starts from the same environment."""

    def __enter__(self) -> None:
        self.saved = dict(os.environ)

    def __exit__(self, *exc: object) -> None:
        for key in [key for key in os.environ if key not in self.saved]:
            del os.environ[key]
        for key, value in self.saved.items():
            if os.environ.get(key) != value:
                os.environ[key] = value


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def _prepare_video(work: Path) -> None:
    from media import make_numbered_video

    eval_dir = work / "eval"
    (eval_dir / "cases").mkdir(parents=True, exist_ok=True)
    make_numbered_video(eval_dir / "cases" / "clip.mp4", 60, fps=10)
    _write(eval_dir / "cases" / "clip.yaml", VIDEO_CASE)
    _write(eval_dir / "config.yaml", VIDEO_CONFIG)
    _write(eval_dir / "adapter.yaml", VIDEO_ADAPTER_CONFIG)


def _video_validate(work: Path) -> list[str]:
    return ["video", "validate", "--eval-dir", str(work / "eval")]


def _adapter_config_as_run_reads_it(work: Path) -> None:
    """What `video run` does with an accepted adapter config: it is stored, as JSON, in the checkpoint."""
    from assay.core.jsonvalue import canonical_json
    from assay.errors import AssayError
    from assay.video.loading import load_adapter_config

    try:
        config = load_adapter_config(work / "eval", None)
    except AssayError:
        return
    canonical_json(config)


def _prepare_doc(work: Path) -> None:
    repo = work / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLES / "doc" / "evals", repo / "evals", ignore=shutil.ignore_patterns("results", "__pycache__"))
    (repo / "evals" / "results").mkdir(exist_ok=True)


def _doc_doctor(work: Path) -> list[str]:
    return ["doc", "doctor", "--config", str(work / "repo" / "evals" / "eval-kit.config.json")]


def _prepare_agent(work: Path) -> None:
    project = work / "project"
    _write(project / "agents" / "stub.py", STUB_AGENT)
    _write(project / "evals" / "hello_eval.py", HELLO_EVAL)
    _write(project / "experiments" / "baseline.py", AGENT_EXPERIMENT)
    _write(project / "pyproject.toml", AGENT_PYPROJECT)
    _write(project / ".env", AGENT_DOTENV)


def _prepare_agent_config_only(work: Path) -> None:
    # No experiments/: `agent run` reads .env and pyproject.toml, then stops with a usage error.
    project = work / "project"
    _write(project / "evals" / "hello_eval.py", HELLO_EVAL)
    _write(project / "pyproject.toml", AGENT_PYPROJECT)


def _agent_list(work: Path) -> list[str]:
    return ["agent", "list", "--project", str(work / "project")]


def _agent_run_without_experiments(work: Path) -> list[str]:
    return ["agent", "run", "--project", str(work / "project")]


def _project_config_in_process(work: Path) -> None:
    from assay.agent.project import load_project_config
    from assay.errors import ConfigError

    try:
        load_project_config(work / "project")
    except ConfigError:
        pass


FORMATS: dict[str, FuzzFormat] = {
    fmt.name: fmt
    for fmt in [
        FuzzFormat("video-case", "yaml", VIDEO_CASE, "eval/cases/clip.yaml", _prepare_video, _video_validate,
                   ("clip.yaml", "clip.mp4"), exit_codes=(0, 1, 2)),
        FuzzFormat("video-config", "yaml", VIDEO_CONFIG, "eval/config.yaml", _prepare_video, _video_validate,
                   ("config.yaml",), exit_codes=(0, 1, 2)),
        FuzzFormat("video-adapter-config", "yaml", VIDEO_ADAPTER_CONFIG, "eval/adapter.yaml", _prepare_video,
                   _video_validate, ("adapter.yaml", "adapter config"), exit_codes=(0, 1, 2),
                   check=_adapter_config_as_run_reads_it),
        FuzzFormat("doc-config", "json", DOC_CONFIG, "repo/evals/eval-kit.config.json", _prepare_doc, _doc_doctor,
                   ("eval-kit.config.json", "eval-kit config", "evals/")),
        FuzzFormat("doc-manifest", "json", DOC_MANIFEST, "repo/evals/cases/release-notes-v1/case-manifest.json",
                   _prepare_doc, _doc_doctor, ("case-manifest.json", "release-notes-v1")),
        FuzzFormat("doc-fixture", "json", DOC_FIXTURE, "repo/evals/cases/release-notes-v1/expected-items.json",
                   _prepare_doc, _doc_doctor, ("expected-items.json",)),
        FuzzFormat("agent-pyproject", "toml", AGENT_PYPROJECT, "project/pyproject.toml", _prepare_agent_config_only,
                   _agent_run_without_experiments, ("pyproject.toml", "experiments/"),
                   check=_project_config_in_process),
        FuzzFormat("agent-dotenv", "dotenv", AGENT_DOTENV, "project/.env", _prepare_agent, _agent_list, (".env",)),
        FuzzFormat("agent-experiment", "python", AGENT_EXPERIMENT, "project/experiments/baseline.py", _prepare_agent,
                   _agent_list, ("baseline.py",)),
    ]
}


def prepare(fmt: FuzzFormat, work: Path) -> Path:
    """A fresh work folder holding every seed file of `fmt`'s kind."""
    work.mkdir(parents=True, exist_ok=True)
    fmt.prepare(work)
    return work
