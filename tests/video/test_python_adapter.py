import asyncio
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from assay.errors import AdapterError
from assay.video.adapters import AdapterConfig, FrameSample, TargetContext
from assay.video.python_adapter import create_python_evaluator


@pytest.fixture
def config(tmp_path):
    return AdapterConfig(eval_dir=tmp_path, config={"model": "m1"}, artifacts_dir=None, verbose=True)


SAMPLE = FrameSample(image="IMAGE", timestamp_s=1.5, frame_index=45, sample_index=3, video_path="/v.mp4", case_name="c")
TARGET = TargetContext(id="step_1", index=0, label=None, config={"prompt": "p"})


def adapter_file(tmp_path, body):
    path = tmp_path / "adapter.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return f"{path}:create_evaluator"


def build(target, config, executor=None):
    async def go():
        evaluator = await create_python_evaluator(target, config, executor=executor)
        if evaluator.batch:
            result = await evaluator.evaluate_many([SAMPLE], TARGET)
        else:
            result = await evaluator.evaluate(SAMPLE, TARGET)
        await evaluator.close()
        return evaluator, result

    return asyncio.run(go())


def test_factory_with_config_and_async_evaluate(tmp_path, config):
    target = adapter_file(
        tmp_path,
        """
        def create_evaluator(config):
            return Evaluator(config)

        class Evaluator:
            def __init__(self, config):
                self.config = config
            async def evaluate(self, sample, target):
                return [self.config.config["model"], self.config.verbose, sample.timestamp_s, target.config["prompt"]]
        """,
    )
    evaluator, result = build(target, config)
    assert evaluator.batch is False
    assert result == ["m1", True, 1.5, "p"]


def test_no_argument_factory_is_called_without_config(tmp_path, config):
    target = adapter_file(
        tmp_path,
        """
        class create_evaluator:
            def __init__(self):
                pass
            def evaluate(self, sample, target):
                return "class factory"
        """,
    )
    assert build(target, config)[1] == "class factory"


def test_async_factory_result_is_awaited(tmp_path, config):
    target = adapter_file(
        tmp_path,
        """
        async def create_evaluator(config):
            class E:
                def evaluate(self, sample, target):
                    return sample.frame_index
            return E()
        """,
    )
    assert build(target, config)[1] == 45


def test_keyword_only_config_factory_receives_the_config(tmp_path, config):
    target = adapter_file(
        tmp_path,
        """
        def create_evaluator(*, config):
            class E:
                def evaluate(self, sample, target):
                    return config.config["model"]
            return E()
        """,
    )
    assert build(target, config)[1] == "m1"


def test_evaluate_many_takes_precedence(tmp_path, config):
    target = adapter_file(
        tmp_path,
        """
        def create_evaluator(config):
            class E:
                def evaluate(self, sample, target):
                    return "single"
                def evaluate_many(self, samples, target):
                    return ["batch" for _ in samples]
            return E()
        """,
    )
    evaluator, result = build(target, config)
    assert evaluator.batch is True
    assert result == ["batch"]


@pytest.mark.parametrize(
    ("signature", "expected"),
    [("image, target_id", ["IMAGE", "step_1"]), ("sample, target", [3, "step_1"])],
)
def test_frame_functions_are_used_directly(tmp_path, config, signature, expected):
    first = "image" if signature.startswith("image") else "sample.sample_index"
    second = "target_id" if "target_id" in signature else "target.id"
    target = adapter_file(tmp_path, f"def create_evaluator({signature}, extra=None):\n    return [{first}, {second}]\n")
    assert build(target, config)[1] == expected


def test_factory_may_return_a_frame_function(tmp_path, config):
    target = adapter_file(
        tmp_path,
        """
        def create_evaluator(config):
            def check(image, target_id):
                return target_id.upper()
            return check
        """,
    )
    assert build(target, config)[1] == "STEP_1"


def test_factory_failure_names_the_adapter(tmp_path, config):
    target = adapter_file(tmp_path, "def create_evaluator(config):\n    raise KeyError('MODEL_API_KEY')\n")
    with pytest.raises(AdapterError, match=r"adapter factory '.*adapter.py:create_evaluator' failed: 'MODEL_API_KEY'"):
        build(target, config)


def test_factory_returning_something_unusable_is_explained(tmp_path, config):
    target = adapter_file(tmp_path, "def create_evaluator(config):\n    return 42\n")
    with pytest.raises(AdapterError, match=r"must return an object with evaluate\(\.\.\.\) or evaluate_many\(\.\.\.\)"):
        build(target, config)


def test_close_is_called_sync_or_async(tmp_path, config):
    marker = tmp_path / "closed.txt"
    target = adapter_file(
        tmp_path,
        f"""
        def create_evaluator(config):
            class E:
                def evaluate(self, sample, target):
                    return 1
                async def close(self):
                    open({str(marker)!r}, "w").write("closed")
            return E()
        """,
    )
    build(target, config)
    assert marker.read_text() == "closed"


def test_sync_evaluate_runs_in_the_executor_so_calls_overlap(tmp_path, config):
    target = adapter_file(
        tmp_path,
        """
        import threading, time
        def create_evaluator(config):
            class E:
                def evaluate(self, sample, target):
                    time.sleep(0.5)
                    return threading.current_thread().name
            return E()
        """,
    )

    async def go(executor):
        evaluator = await create_python_evaluator(target, config, executor=executor)
        started = time.perf_counter()
        names = await asyncio.gather(*(evaluator.evaluate(SAMPLE, TARGET) for _ in range(4)))
        return names, time.perf_counter() - started

    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="adapter-test") as executor:
        names, elapsed = asyncio.run(go(executor))
    assert all(name.startswith("adapter-test") for name in names)
    assert elapsed < 1.5  # four 0.5 s calls in parallel, not 2 s in a row
    assert threading.current_thread().name == "MainThread"


def test_sync_evaluate_returning_an_awaitable_is_awaited(tmp_path, config):
    target = adapter_file(
        tmp_path,
        """
        import asyncio
        def create_evaluator(config):
            class E:
                def evaluate(self, sample, target):
                    async def later():
                        return "awaited"
                    return later()
            return E()
        """,
    )
    assert build(target, config)[1] == "awaited"
