"""What an attempt's stored error keeps of a `SendFailure`: an adapter's explained failure is its message
(assay's own frames are noise in the store and in `agent show`); a failure raised in the author's code keeps
the traceback and the line that raised it."""

from __future__ import annotations

import socket

from agent_helpers import run_one, scripted_agent
from assay.agent import SendFailure, complete_evidence_coverage
from assay.agent.adapters import http_agent


def _closed_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]  # closed again when the block ends: nothing listens there


async def _send_once(t):
    await t.send("hi")


def test_an_official_adapters_refused_connection_is_stored_without_assays_traceback():
    agent = http_agent(f"http://127.0.0.1:{_closed_port()}/chat", evidence_coverage=complete_evidence_coverage,
                       max_attempts=2, backoff=0.01)
    result = run_one(agent, _send_once)
    assert result.verdict == "errored"
    assert "refused the connection" in result.error["message"]
    # The message is the whole story: the frames were assay's adapter and the stdlib's.
    assert "traceback" not in result.error and "where" not in result.error, result.error


def test_a_send_failure_raised_in_the_authors_send_keeps_its_traceback_and_line():
    def refuse(turn_input, ctx):
        raise SendFailure("the booking service said no", acceptance="started")  # this line is `where`

    agent, _ = scripted_agent(refuse)
    result = run_one(agent, _send_once)
    assert result.verdict == "errored"
    assert "the booking service said no" in result.error["message"]
    assert "SendFailure: the booking service said no" in result.error["traceback"]
    assert result.error["where"].startswith(__file__ + ":")
    line = int(result.error["where"].rsplit(":", 1)[1])
    assert "raise SendFailure" in open(__file__).read().splitlines()[line - 1]
