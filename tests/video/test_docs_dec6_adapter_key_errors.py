"""docs/video/python-adapters.md's adapter reads `config.config["lamp_region"]` from adapter.yaml. With the key
misspelt in adapter.yaml, the factory's KeyError said only `'lamp_region'`: it is named as a missing key, with
the keys adapter.yaml does hold. A KeyError in `evaluate` is named the same way."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from media import make_numbered_video

ADAPTER = textwrap.dedent('''
    def create_evaluator(config):
        return Reader(config.config["lamp_region"])


    class Reader:
        def __init__(self, region):
            self.region = region

        def evaluate(self, sample, target):
            return {"number": 0}[target.config.get("key", "number")]
''')


def _run(tmp_path, monkeypatch, adapter_yaml: str, target_config: str = "{}") -> subprocess.CompletedProcess[str]:
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))
    eval_dir = tmp_path / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    make_numbered_video(eval_dir / "cases" / "lamp.mp4", 10, fps=10)
    (eval_dir / "cases" / "lamp.yaml").write_text(
        f"video: lamp.mp4\ntargets:\n  t:\n    config: {target_config}\n    samples:\n      - at: 0.5\n        expect: 0\n",
        encoding="utf-8")
    (eval_dir / "adapter.py").write_text(ADAPTER, encoding="utf-8")
    (eval_dir / "adapter.yaml").write_text(adapter_yaml, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "assay", "video", "run", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_a_misspelt_adapter_yaml_key_is_named_with_the_keys_it_holds(tmp_path, monkeypatch):
    done = _run(tmp_path, monkeypatch, "lamp_regoin: [30, 90, 50, 110]\n")
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("Eval failed: adapter factory 'eval/adapter.py:create_evaluator' failed: 'lamp_region' (KeyError: a key "
            "that is not there; the adapter config, config.config, has 'lamp_regoin')") in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_an_empty_adapter_yaml_is_said_to_have_no_keys(tmp_path, monkeypatch):
    done = _run(tmp_path, monkeypatch, "")
    assert done.returncode == 2
    assert "failed: 'lamp_region' (KeyError: a key that is not there; the adapter config, config.config, has no keys)" \
        in done.stdout


def test_a_key_error_in_evaluate_is_named_as_one(tmp_path, monkeypatch):
    done = _run(tmp_path, monkeypatch, "lamp_region: [1, 2, 3, 4]\n", target_config="{key: colour}")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Eval failed: adapter failed for lamp/t sample 0 at 0.5s: 'colour' (KeyError: a key that is not there)" \
        in done.stdout


SERVED = textwrap.dedent('''
    from assay.video.serve import serve


    class Reader:
        def __init__(self, config):
            self.region = config.config["lamp_region"]

        def evaluate(self, sample, target):
            return 0


    serve(Reader)
''')


def test_a_key_error_in_a_served_python_adapter_is_named_as_one(tmp_path, monkeypatch):
    # docs/video/process-adapters.md: the same adapter served as a process (assay.video.serve)
    done = _run(tmp_path, monkeypatch, "lamp_regoin: [30, 90, 50, 110]\n")  # writes the eval
    (tmp_path / "eval" / "serve_adapter.py").write_text(SERVED, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "assay", "video", "run", "--quiet", "--adapter-command",
                           f"{sys.executable} eval/serve_adapter.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "adapter command initialize failed: 'lamp_region' (KeyError: a key that is not there)" in done.stdout
