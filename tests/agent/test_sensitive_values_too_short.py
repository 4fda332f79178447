"""`sensitive_values=["abc"]` (shorter than the 4 characters a value must have to be redacted) was dropped in
silence, so the value was stored as it was while its author believed it redacted. It is refused, naming the rule
and never the value; so is a value that is not a string."""

from __future__ import annotations

import asyncio

import pytest

from assay.agent.sandbox import SandboxError
from assay.agent.sandbox.commands import REDACTED
from assay.agent.sandbox.handle import Sandbox, SandboxCore
from assay.agent.sandbox.interface import CreateRequest
from assay.agent.sandbox.local import LocalProvider


def _run_with(tmp_path, values):
    async def body():
        backend = await LocalProvider(isolation="none", base_dir=str(tmp_path / "boxes")).create(CreateRequest("short"))
        sandbox = Sandbox(SandboxCore(backend))
        try:
            with pytest.raises(SandboxError) as refused:
                await sandbox.run_command("echo", "pin 417", sensitive_values=values)
            kept = await sandbox.run_command("echo", "pin 4170", sensitive_values=["4170"])
            return str(refused.value), kept
        finally:
            await sandbox.stop()

    return asyncio.run(body())


def test_a_value_too_short_to_redact_is_refused_without_showing_it(tmp_path):
    message, kept = _run_with(tmp_path, ["417"])
    assert message == ("sensitive_values holds a value of 3 character(s), too short to redact: it would be replaced "
                       "wherever those characters appear; give each secret whole (4 characters or more)")
    assert "417" not in message and kept.stdout == f"pin {REDACTED}\n"


def test_a_value_that_is_not_a_string_is_refused(tmp_path):
    message, _ = _run_with(tmp_path, [41700])
    assert message == "sensitive_values holds a int; give each secret as a string"
