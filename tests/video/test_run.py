"""End-to-end `assay video run` on real videos: verdicts, gates, exit codes, reports, checkpoints."""

from __future__ import annotations

import json

import pytest
from video_evals import invoke, make_eval, number_eval, read_report, run_eval, write

NUMBERS_CASE = """
video: clip.mp4
targets:
  number:
    samples:
      - range: [0.0, 1.0]
        every_s: 0.2
        expect: 0   # wrong on purpose except at 0.0
      - at: [2.0, 1.5]
        expect: 20
"""


def test_run_reports_real_frame_numbers_and_writes_the_json_report(tmp_path):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE)
    report_path = tmp_path / "out" / "report.json"
    result = run_eval(eval_dir, "--output-json", report_path)
    # No threshold is configured: failed comparisons alone do not fail the run.
    assert result.exit_code == 0, result.output
    assert "Case clip (7 samples, video=clip.mp4)" in result.flat
    assert "target number: 7 samples" in result.flat
    assert "FAILED number @0.2s expected=0 observed=2 reason=numeric difference 2 exceeds tolerance 0" in result.flat
    assert "Samples: 7 evaluated, 2 passed, 5 failed, 0 errors, 0 ignored" in result.flat
    assert "Pass rate: 28.6%" in result.flat

    report = read_report(report_path)
    assert report["schema_version"] == 1
    assert report["report_type"] == "eval_run"
    assert report["eval_dir"] == str(eval_dir.resolve())
    assert report["cases"] == ["clip"]
    assert report["repeat_count"] == 1
    assert report["success"] is True
    assert report["gates"] == []
    assert report["checkpoint"]["resumed"] is False
    assert report["checkpoint"]["resumable_adapter_errors"] == 0
    trial = report["trials"][0]
    assert trial["gates"] == [{"name": "adapter_errors", "passed": True, "message": "no adapter/comparison errors"}]
    results = trial["results"]
    assert [r["timestamp_s"] for r in results] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.5, 2.0]
    assert [r["sample_index"] for r in results] == list(range(7))
    assert [r["observed"] for r in results] == [0, 2, 4, 6, 8, 15, 20]
    assert [r["status"] for r in results] == ["passed", "failed", "failed", "failed", "failed", "failed", "passed"]
    first = results[0]
    assert set(first) == {
        "case", "target", "target_label", "sample_index", "timestamp_s", "status", "expected", "observed",
        "observed_value", "compare_mode", "field", "reason", "source", "evaluation_duration_seconds",
        "evaluation_timing_mode", "artifact_image", "artifact_json",
    }
    # The report carries the declared mode: null when it was inferred.
    assert first["compare_mode"] is None
    assert first["source"] == "range [0, 1)"
    assert results[5]["source"] == "at"
    assert first["evaluation_timing_mode"] == "individual"
    assert set(report["summary"]) == {
        "trials", "successful_trials", "evaluated_samples", "ignored_samples", "evaluated_attempts",
        "passed_attempts", "failed_attempts", "error_attempts", "attempt_pass_rate", "minimum_trial_pass_rate",
        "mean_trial_pass_rate", "maximum_trial_pass_rate", "consistently_passed_samples",
        "consistently_failed_samples", "flaky_samples", "error_samples", "duration_seconds",
        "evaluation_timing_mode", "average_evaluation_seconds_per_attempt", "throughput_attempts_per_second",
    }
    assert report["stability"][1]["statuses"] == ["failed"]
    assert report_path.read_text().endswith("}\n")


def test_a_failing_pass_rate_gate_exits_1_and_is_listed(tmp_path):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE, config_yaml="thresholds:\n  min_pass_rate: 0.5\n")
    result = run_eval(eval_dir)
    assert result.exit_code == 1
    assert "Failed gates" in result.output
    assert "eval_min_pass_rate" in result.flat
    assert "28.6% pass rate (gate: >= 50.0%)" in result.flat


def test_cli_gate_overrides_config_and_suppresses_case_gates(tmp_path):
    case = NUMBERS_CASE + "thresholds:\n  min_pass_rate: 0.99\n"
    eval_dir = make_eval(tmp_path, case)
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--min-pass-rate", "0.2", "--output-json", report_path)
    assert result.exit_code == 0, result.output
    names = [gate["name"] for gate in read_report(report_path)["trials"][0]["gates"]]
    assert names == ["adapter_errors", "eval_min_pass_rate"]


def test_adapter_exception_fails_fast_with_sample_context(tmp_path):
    eval_dir = number_eval(tmp_path, "{fail_at: [2]}")
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--output-json", report_path)
    assert result.exit_code == 2
    assert "Eval failed: adapter failed for clip/number sample 2 at 0.2s: model timed out on frame 2" in result.flat
    assert "Traceback" not in result.output
    assert not report_path.exists()  # no report on exit 2
    # Samples 0 and 1 completed before the failure, so the checkpoint is kept with a resume hint.
    assert "Resume with `assay video run --resume " in result.flat


def test_first_sample_failure_leaves_no_checkpoint_behind(tmp_path):
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          number:
            config: {fail_at: [0]}
            samples:
              - at: 0.0
                expect: 0
        """,
    )
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    assert "Resume with" not in result.output
    assert list((eval_dir / "runs" / "checkpoints").iterdir()) == []


def test_keep_going_records_adapter_errors_and_fails_the_error_gate(tmp_path):
    eval_dir = number_eval(tmp_path, "{fail_at: [1, 3]}")
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--keep-going", "--output-json", report_path)
    assert result.exit_code == 1
    report = read_report(report_path)
    statuses = [r["status"] for r in report["trials"][0]["results"]]
    assert statuses == ["passed", "error", "failed", "error", "failed"]
    error = report["trials"][0]["results"][1]
    assert error["reason"] == "adapter_error: adapter failed for clip/number sample 1 at 0.1s: model timed out on frame 1"
    assert error["observed"] is None
    gate = report["trials"][0]["gates"][0]
    assert gate == {"name": "adapter_errors", "passed": False, "message": "2 adapter/comparison errors"}
    assert report["checkpoint"]["resumable_adapter_errors"] == 2
    assert "2 adapter errors can be retried without rerunning completed samples." in result.flat
    assert "Resume with `assay video run --resume " in result.flat


def broken_at_1_and_3(tmp_path, flag, extra: str = ""):
    """Five samples whose adapter fails at samples 1 and 3 while `flag` exists (so a resume can fix them)."""
    flag.write_text("x")
    return number_eval(tmp_path, f'{{fail_at: [1, 3], fail_while_exists: "{flag}"{extra}}}')


def test_resume_retries_only_adapter_errors(tmp_path):
    calls = tmp_path / "calls.txt"
    flag = tmp_path / "still-broken"
    eval_dir = broken_at_1_and_3(tmp_path, flag, f', calls_file: "{calls}"')
    report_path = tmp_path / "r.json"
    first = run_eval(eval_dir, "--keep-going", "--output-json", report_path)
    assert first.exit_code == 1
    checkpoint = read_report(report_path)["checkpoint"]["path"]
    assert sorted(calls.read_text().split()) == [f"clip/number:{i}" for i in range(5)]
    flag.unlink()
    calls.write_text("")
    resumed = invoke("video", "run", "--resume", checkpoint)
    assert resumed.exit_code == 0, resumed.output
    assert sorted(calls.read_text().split()) == ["clip/number:1", "clip/number:3"]
    report = read_report(report_path)
    assert report["checkpoint"]["resumed"] is True
    assert [r["status"] for r in report["trials"][0]["results"]] == ["passed", "failed", "failed", "failed", "failed"]
    manifest = json.loads((tmp_path / checkpoint / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    # exactly GlassKit's run invocation keys (spec §14.2): assay's own `junit` only when --junit was given
    assert sorted(manifest["invocation"]) == sorted([
        "eval_dir", "adapter", "adapter_command", "case_filter", "target_filter", "at_times_s", "from_time_s",
        "until_time_s", "adapter_config", "concurrency", "repeat", "min_pass_rate", "min_target_pass_rate",
        "max_failures", "max_flaky_samples", "keep_going", "verbose", "output_json", "artifacts_dir", "save_failures",
        "allow_empty"])
    again = invoke("video", "run", "--resume", checkpoint)
    assert again.exit_code == 2
    assert f"Eval failed: checkpoint is already complete: {checkpoint}" in again.flat


def test_throughput_after_a_resume_counts_only_the_samples_this_run_evaluated(tmp_path):
    flag = tmp_path / "still-broken"
    eval_dir = broken_at_1_and_3(tmp_path, flag)
    report_path = tmp_path / "r.json"
    first = run_eval(eval_dir, "--keep-going", "--output-json", report_path)
    assert "Throughput: " in first.flat and "reused from the checkpoint" not in first.flat
    flag.unlink()
    resumed = invoke("video", "run", "--resume", read_report(report_path)["checkpoint"]["path"])
    assert resumed.exit_code == 0, resumed.output
    line = next(line for line in resumed.output.splitlines() if line.startswith("Throughput: "))
    assert line.endswith(" samples/s (2 evaluated in this run, 3 reused from the checkpoint)")
    summary = read_report(report_path)["summary"]
    rate = float(line.split()[1])
    assert rate == pytest.approx(2 / summary["duration_seconds"], rel=0.01, abs=0.01)


def test_a_broken_adapter_yaml_is_named_with_where_it_breaks(tmp_path):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE, adapter_yaml="lamp_region: [30, 90\n")
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    # The box may wrap the long path: its parts are compared (the exact message: test_loading.py).
    # As the real GlassKit 0.1.12 prints it: a bad value of no named option.
    assert "Error: Invalid value: invalid adapter config: " in result.flat
    assert "adapter.yaml: line 2, column 1: expected ',' or ']', but got '<stream end>'" in result.flat
    given = run_eval(eval_dir, "--adapter-config", eval_dir / "adapter.yaml")
    assert given.exit_code == 2
    assert "Error: Invalid value: invalid adapter config: " in given.flat


def test_json_errors_keep_the_did_you_mean_hint_of_the_console(tmp_path):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE)
    plain = run_eval(eval_dir, "--case", "clpi")
    assert "did you mean 'clip'?" in plain.flat
    streamed = run_eval(eval_dir, "--case", "clpi", "--json")
    assert streamed.exit_code == plain.exit_code == 2
    finished = json.loads(streamed.stdout.splitlines()[-1])
    assert finished["type"] == "run_finished"
    assert finished["error"].endswith("matching case 'clpi'; did you mean 'clip'?")


def test_what_a_python_adapter_prints_goes_to_stderr_and_json_stays_parseable(tmp_path):
    from video_evals import NUMBER_ADAPTER

    chatty = NUMBER_ADAPTER.replace(
        "def create_evaluator(config):\n", "def create_evaluator(config):\n    print('factory says hi')\n"
    ).replace(
        "    async def evaluate(self, sample, target):\n",
        "    async def evaluate(self, sample, target):\n        print('evaluate says hi')\n"
        "        import threading\n        worker = threading.Thread(target=print, args=('thread says hi',))\n"
        "        worker.start()\n        worker.join()\n",
    )
    eval_dir = make_eval(tmp_path, NUMBERS_CASE, adapter=chatty)
    result = run_eval(eval_dir, "--json", "--concurrency", "2")
    assert result.exit_code == 0, result.output  # no gate: the failed samples are only reported
    events = [json.loads(line) for line in result.stdout.splitlines()]  # every line is an event
    assert [event["type"] for event in events].count("unit") == 7 and events[-1]["type"] == "run_finished"
    for said in ("factory says hi", "evaluate says hi", "thread says hi"):
        assert said in result.stderr and said not in result.stdout


def test_resume_refuses_overrides_and_bad_references(tmp_path):
    result = invoke("video", "run", "--resume", "run-x", "--concurrency", "2")
    assert result.exit_code == 2
    assert "restores the original adapter and run options and cannot be combined with overrides" in result.flat
    missing = invoke("video", "run", "--resume", str(tmp_path / "nowhere"))
    assert missing.exit_code == 2
    assert "could not read checkpoint manifest" in missing.flat


def test_resume_refuses_a_changed_case_file(tmp_path):
    eval_dir = number_eval(tmp_path, "{fail_at: [1]}", until=0.3)
    report_path = tmp_path / "r.json"
    assert run_eval(eval_dir, "--keep-going", "--output-json", report_path).exit_code == 1
    checkpoint = read_report(report_path)["checkpoint"]["path"]
    case = eval_dir / "cases" / "clip.yaml"
    case.write_text(case.read_text() + "# edited\n")
    result = invoke("video", "run", "--resume", checkpoint)
    assert result.exit_code == 2
    assert "checkpoint inputs changed; start a new operation instead of resuming" in result.flat


def test_targets_share_one_decode_and_report_in_declaration_order(tmp_path):
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          late:
            label: Late target
            samples:
              - at: [2.5, 0.5]
                expect: -1
          early:
            samples:
              - range: [0.0, 1.0]
                every_s: 0.25
                expect: -1
        """,
    )
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--concurrency", "3", "--output-json", report_path)
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    late_header = lines.index("target Late target (late): 2 samples")
    early_header = lines.index("target early: 4 samples")
    assert late_header < early_header
    assert all(line.startswith("FAILED Late target (late)") for line in lines[late_header + 1 : late_header + 3])
    results = read_report(report_path)["trials"][0]["results"]
    assert [(r["target"], r["timestamp_s"], r["observed"]) for r in results] == [
        ("late", 0.5, 5), ("late", 2.5, 25),
        ("early", 0.0, 0), ("early", 0.25, 2), ("early", 0.5, 5), ("early", 0.75, 7),
    ]
    assert [r["sample_index"] for r in results] == [0, 1, 2, 3, 4, 5]


def test_out_of_order_blocks_get_the_right_frames(tmp_path):
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          number:
            samples:
              - at: 2.0
                expect: 20
              - at: 0.5
                expect: 5
              - range: [1.0, 1.3]
                every_s: 0.1
                expect: 10
        """,
    )
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--output-json", report_path)
    assert result.exit_code == 0
    results = read_report(report_path)["trials"][0]["results"]
    assert [r["observed"] for r in results] == [20, 5, 10, 11, 12]


def test_ignored_samples_are_reported_but_never_evaluated(tmp_path):
    calls = tmp_path / "calls.txt"
    eval_dir = make_eval(
        tmp_path,
        f"""
        video: clip.mp4
        targets:
          number:
            config: {{calls_file: "{calls}"}}
            samples:
              - at: 0.0
                expect: 0
              - at: 1.0
                ignore: glare on the lens
        """,
    )
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--output-json", report_path)
    assert result.exit_code == 0
    assert "IGNORED number @1s expected=None observed=None reason=glare on the lens" in result.flat
    assert calls.read_text().split() == ["clip/number:0"]
    ignored = read_report(report_path)["trials"][0]["results"][1]
    assert ignored["status"] == "ignored"
    assert ignored["reason"] == "glare on the lens"
    assert ignored["evaluation_duration_seconds"] is None


def test_non_json_observation_is_an_adapter_error(tmp_path):
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          number:
            config: {mode: nan}
            samples:
              - at: 0.0
                expect: 0
        """,
    )
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    assert "adapter returned non-JSON observation for clip/number sample 0: observation must be finite" in result.flat


def test_field_extraction_and_declared_modes(tmp_path):
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        sample_defaults:
          field: result.frame
        targets:
          number:
            config: {mode: dict}
            samples:
              - at: 1.0
                expect: 11
                compare: {mode: numeric, tolerance: 1}
              - at: 1.0
                ignore: duplicate times are rejected, so this block is ignored
          parity:
            config: {mode: dict}
            samples:
              - at: 1.0
                field: result.even
                expect: true
              - at: 2.0
                field: result.missing
                expect: true
        """,
    )
    result = run_eval(eval_dir, "--output-json", tmp_path / "r.json")
    assert result.exit_code == 2  # duplicate time within one target is rejected while loading
    assert "sample 2 duplicates sample 1" in result.flat
    case = eval_dir / "cases" / "clip.yaml"
    case.write_text(case.read_text().replace("      - at: 1.0\n        ignore", "      - at: 2.9\n        ignore"))
    result = run_eval(eval_dir, "--output-json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    results = read_report(tmp_path / "r.json")["trials"][0]["results"]
    assert results[0]["status"] == "passed"
    assert results[0]["compare_mode"] == "numeric"
    assert results[0]["observed_value"] == 10
    assert results[2]["status"] == "passed"
    assert results[3]["reason"] == "adapter observation is missing configured field: result.missing"
    assert results[3]["observed_value"] is None


def test_repeat_builds_a_fresh_evaluator_per_trial_and_counts_flaky_samples(tmp_path):
    marker = tmp_path / "built.txt"
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          number:
            samples:
              - at: [0.0, 1.0]
                expect: 0
        """,
        adapter_yaml=f"factory_marker: {marker}\n",
    )
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--repeat", "3", "--max-flaky-samples", "0", "--output-json", report_path)
    assert result.exit_code == 0, result.output
    assert marker.read_text().split() == ["built", "built", "built"]
    assert "Trial 1/3" in result.output and "Trial 3/3" in result.output
    assert "[2/3]" in result.output
    report = read_report(report_path)
    assert report["repeat_count"] == 3
    assert [t["trial"] for t in report["trials"]] == [1, 2, 3]
    assert report["gates"] == [{"name": "max_flaky_samples", "passed": True, "message": "0 flaky samples (gate: <= 0)"}]
    assert report["summary"]["consistently_failed_samples"] == 1
    assert report["summary"]["consistently_passed_samples"] == 1
    assert "Trials: 3 total, 3 passed gates, 0 failed gates" in result.flat


def test_max_flaky_samples_needs_repeat(tmp_path):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE)
    result = run_eval(eval_dir, "--max-flaky-samples", "1")
    assert result.exit_code == 2
    assert "Eval failed: --max-flaky-samples requires --repeat to be at least 2" in result.flat


def test_batch_adapters_get_all_samples_of_a_target_at_once(tmp_path):
    adapter = """
    import numpy as np
    from media import read_frame_number

    def create_evaluator(config):
        return Batch()

    class Batch:
        def evaluate(self, sample, target):
            raise AssertionError("evaluate_many takes precedence")
        def evaluate_many(self, samples, target):
            if target.id == "short":
                return [0]
            return [read_frame_number(np.asarray(s.image)) for s in samples]
    """
    case = """
    video: clip.mp4
    targets:
      number:
        samples:
          - at: [0.0, 0.5, 1.0]
            expect: 5
    """
    eval_dir = make_eval(tmp_path, case, adapter=adapter)
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--output-json", report_path)
    assert result.exit_code == 0, result.output
    results = read_report(report_path)["trials"][0]["results"]
    assert [r["observed"] for r in results] == [0, 5, 10]
    assert {r["evaluation_timing_mode"] for r in results} == {"batch_amortized"}
    assert "Avg amortized batch time" in result.output
    write(eval_dir / "cases" / "clip.yaml", case.replace("number:", "short:"))
    result = run_eval(eval_dir, "--keep-going", "--output-json", report_path)
    assert result.exit_code == 1
    reasons = {r["reason"] for r in read_report(report_path)["trials"][0]["results"]}
    assert reasons == {"adapter_error: adapter returned 1 observations for 3 samples in target 'short'"}


def test_save_failures_writes_the_frame_and_the_result(tmp_path):
    eval_dir = make_eval(
        tmp_path,
        """
        video: clip.mp4
        targets:
          "step:one":
            samples:
              - at: 0.3
                expect: 0
        """,
    )
    artifacts = tmp_path / "artifacts"
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--save-failures", "--artifacts-dir", artifacts, "--output-json", report_path)
    assert result.exit_code == 0, result.output
    directory = artifacts / "failures" / "trial-001"
    files = sorted(path.name for path in directory.iterdir())
    assert len(files) == 2
    stem = files[0].rsplit(".", 1)[0]
    assert stem.startswith("clip_step_one_") and stem.endswith("_00000_0.300s")
    record = json.loads((directory / f"{stem}.json").read_text())
    assert record["trial"] == 1
    assert record["compare_mode"] == "numeric"  # the artifact carries the effective mode
    assert record["artifact_image"] is None
    reported = read_report(report_path)["trials"][0]["results"][0]
    assert reported["artifact_image"] == str(directory / f"{stem}.jpg")
    assert reported["artifact_json"] == str(directory / f"{stem}.json")


@pytest.mark.parametrize(
    ("case_text", "message"),
    [
        ("video: clip.mp4\ntargets: [unclosed\n", "invalid YAML"),
        ("video: clip.mp4\ntargets:\n  t:\n    samples:\n      - at: 1\n        expect: 1\n        colour: red\n",
         "invalid schema: targets.t.samples.0.colour: Extra inputs are not permitted"),
        ("video: missing.mp4\ntargets:\n  t:\n    samples:\n      - at: 1\n        expect: 1\n", "video file does not exist"),
        ("video: clip.mp4\ntargets:\n  t:\n    samples:\n      - at: 9\n        expect: 1\n",
         "clip/t sample 0 at 9s exceeds video duration 3s"),
    ],
)
def test_bad_input_gets_one_message_and_exit_2(tmp_path, case_text, message):
    eval_dir = make_eval(tmp_path, "video: clip.mp4\ntargets: {}\n")
    (eval_dir / "cases" / "clip.yaml").write_text(case_text)
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    assert message in result.flat
    assert result.flat.strip().startswith("Eval failed:")
    assert "Traceback" not in result.output


def test_adapter_import_error_is_reported_without_traceback(tmp_path):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE, adapter="import not_a_real_module_xyz\n")
    result = run_eval(eval_dir)
    assert result.exit_code == 2
    assert "adapter import failed for" in result.flat
    assert "No module named 'not_a_real_module_xyz'" in result.flat
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--at", "1"], "Invalid value for --at: requires --case"),
        (["--until", "1"], "Invalid value for --until: requires --case"),
        (["--case", "clip", "--at", "1", "--from", "0"], "Invalid value for --at: cannot be combined with --from or --until"),
        (["--case", "clip", "--at", "nan"], "Invalid value for '--at': Input should be greater than or equal to 0"),
        (["--case", "clip", "--at", "inf"], "Invalid value for --at: must be a finite, nonnegative number"),
        (["--case", "clip", "--from", "2", "--until", "1"], "Invalid value for --until: must be greater than --from"),
        (["--adapter-command", "node x.js"], "Invalid value for --adapter-command: cannot be used with --adapter"),
        (["--concurrency", "0"], "Invalid value for '--concurrency': Input should be greater than or equal to 1"),
    ],
)
def test_option_errors_are_usage_errors(tmp_path, args, message):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE)
    result = run_eval(eval_dir, *args)
    assert result.exit_code == 2
    assert message in result.flat


def test_time_filters_select_samples_and_keep_indices(tmp_path):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE)
    report_path = tmp_path / "r.json"
    result = run_eval(eval_dir, "--case", "clip", "--from", "0.4", "--until", "1.6", "--output-json", report_path)
    assert result.exit_code == 0, result.output
    results = read_report(report_path)["trials"][0]["results"]
    assert [(r["sample_index"], r["timestamp_s"]) for r in results] == [(2, 0.4), (3, 0.6), (4, 0.8), (5, 1.5)]
    missing = run_eval(eval_dir, "--case", "clip", "--at", "0.3")
    assert missing.exit_code == 2
    assert "no eval samples found at requested time: 0.3 seconds; nearest available sample times:" in missing.flat


def test_validate_list_samples_and_export_frames(tmp_path):
    eval_dir = make_eval(tmp_path, NUMBERS_CASE)
    validated = invoke("video", "validate", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/adapter.py:create_evaluator")
    assert validated.exit_code == 0, validated.output
    assert f"Validation passed: {eval_dir.resolve()} (7 samples)" in validated.flat
    listed = invoke("video", "list-samples", "--eval-dir", eval_dir)
    assert listed.exit_code == 0
    assert "range [0, 1)" in listed.flat and "1.5s" in listed.flat
    exported = invoke("video", "export-frames", "--eval-dir", eval_dir, "--case", "clip", "--at", "1.5", "--at", "0")
    assert exported.exit_code == 0, exported.output
    paths = exported.output.split()
    assert [p.rsplit("/", 1)[1] for p in paths] == ["at-1.5s.png", "at-0.0s.png"]
    broken = invoke("video", "validate", "--eval-dir", eval_dir, "--adapter", f"{eval_dir}/nope.py:make")
    assert broken.exit_code == 1
    assert "Validation failed" in broken.output
    assert "- adapter validation failed: adapter file does not exist:" in broken.flat


@pytest.mark.parametrize("command", ["run", "validate", "seed"])
def test_an_empty_adapter_option_is_refused_not_read_as_absent(tmp_path, command):
    # `--adapter "$ADAPTER"` with the variable unset: `run` used to ask for an adapter option it was given,
    # and `validate` passed without checking any adapter.
    eval_dir = make_eval(tmp_path, NUMBERS_CASE)
    empty = invoke("video", command, "--eval-dir", eval_dir, "--adapter", "")
    assert empty.exit_code == 2, empty.output
    assert "Invalid value for '--adapter': adapter must be '<module-or-file>:<callable>', got ''" in empty.flat
    empty_command = invoke("video", command, "--eval-dir", eval_dir, "--adapter-command", "")
    assert empty_command.exit_code == 2, empty_command.output
    assert "Invalid value for '--adapter-command': adapter command must not be empty" in empty_command.flat
    assert "Validation passed" not in empty.flat + empty_command.flat


def test_the_journal_lets_the_runs_concurrent_results_share_an_fsync(tmp_path, monkeypatch):
    """Up to --concurrency results wait a few milliseconds for each other and are fsynced together."""
    from assay.core import journal as journal_module
    from assay.video import checkpoint as checkpoint_module

    writers = []
    batches = []
    real_writer, real_append = checkpoint_module.JournalWriter, journal_module.Journal.append_lines

    def recording_writer(journal, **options):
        writers.append(options)
        return real_writer(journal, **options)

    def recording_append(self, data):
        real_append(self, data)
        batches.append(data.count(b"\n"))  # one line per result, one call per fsync

    monkeypatch.setattr(checkpoint_module, "JournalWriter", recording_writer)
    monkeypatch.setattr(journal_module.Journal, "append_lines", recording_append)
    monkeypatch.setattr(checkpoint_module, "GROUP_COMMIT_WINDOW_S", 0.5)  # generous: a slow CI still batches
    eval_dir = make_eval(tmp_path, NUMBERS_CASE)
    result = run_eval(eval_dir, "--concurrency", "4")
    assert result.exit_code == 0, result.output
    assert writers == [{"batch_hint": 4, "batch_window_s": 0.5}]
    assert sum(batches) == 7 and len(batches) < 7
