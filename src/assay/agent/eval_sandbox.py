"""`t.sandbox`: the attempt's sandbox as an eval sees it, plus the post-run assertions over what the agent
changed. Imported when an eval first reads `t.sandbox` (a direct agent's run never does)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from assay.agent import assertions
from assay.agent.assertion_entry import AssertionEntry, AssertionHandle
from assay.agent.control import AuthoringError
from assay.agent.outcome import Matcher
from assay.agent.sandbox.handle import Sandbox
from assay.core.format import did_you_mean

if TYPE_CHECKING:
    from assay.agent.attempt_state import AttemptRuntime


class SandboxAssertionHandle(AssertionHandle):
    """A sandbox assertion's handle: decided after the test, so it has no `or_stop`."""

    __slots__ = ()

    def or_stop(self) -> Any:  # raised at the call, awaited or not
        raise AuthoringError(
            "sandbox assertions are decided after the test ends, so they have no or_stop(); to stop on a "
            "workspace condition, read the file with t.sandbox.read_text(...) and check it with t.check(...)"
        )


_CONTENT_SIDES = ("added", "removed", "both")


def _as_matcher(value: Any, name: str) -> Matcher | None:
    if value is None or isinstance(value, Matcher):
        return value
    if isinstance(value, str):
        from assay.agent.matchers import equals

        return equals(value)
    raise AuthoringError(f"file_changed {name}= takes a matcher or the exact text, got {type(value).__name__}")


class EvalSandbox(Sandbox):
    """`t.sandbox`: the attempt's sandbox, plus the post-run assertions over what the agent changed."""

    __slots__ = ("_attempt",)

    def __init__(self, core: Any, runtime: AttemptRuntime) -> None:
        super().__init__(core)
        self._attempt = runtime

    def _relative(self, path: str) -> str:
        text = str(path)
        workdir = self.workdir.rstrip("/") + "/"
        if text.startswith(workdir):
            text = text[len(workdir):]
        text = posixpath.normpath(text)
        if text.startswith("../") or text == ".." or text.startswith("/"):
            # An absolute path elsewhere (/etc/passwd) used to be an assertion that simply failed.
            raise AuthoringError(f"{path!r} is outside the sandbox workdir ({self.workdir}); give a path relative to it")
        return text

    def _post_run(self, assertion: assertions.Assertion) -> SandboxAssertionHandle:
        runtime = self._attempt
        entry = AssertionEntry(len(runtime.entries), assertion.kind, "t.sandbox", assertion.describe())
        entry.pending = runtime.sandbox_stage.evaluate_later(assertion)
        runtime.entries.append(entry)
        return SandboxAssertionHandle(entry, runtime.score_eval)

    def changed_paths(self, paths: Sequence[str]) -> SandboxAssertionHandle:
        """The agent changed exactly these paths (relative to the workdir), in any send window."""
        if isinstance(paths, str):
            raise AuthoringError(f"changed_paths takes a list of paths, like changed_paths([{paths!r}]); got the string "
                                 f"{paths!r}")
        return self._post_run(assertions.ChangedPaths(tuple(self._relative(path) for path in paths)))

    def no_changes(self) -> SandboxAssertionHandle:
        return self._post_run(assertions.NoChanges())

    def file_changed(
        self, path: str, *, status: str | None = None, before: Matcher | str | None = None,
        after: Matcher | str | None = None,
    ) -> SandboxAssertionHandle:
        """Some send window changed `path` with this `status` (added, modified, deleted) and content
        matching `before` / `after` (matchers, or exact text); elided content makes it unavailable."""
        from assay.agent.sandbox.changes import STATUSES

        if status is not None and status not in STATUSES:
            raise AuthoringError(f"file_changed status must be one of {', '.join(STATUSES)}, got {status!r}"
                                 + did_you_mean(status, STATUSES))
        return self._post_run(assertions.FileChanged(
            self._relative(path), status, _as_matcher(before, "before"), _as_matcher(after, "after"),
        ))

    def file_deleted(self, path: str) -> SandboxAssertionHandle:
        return self._post_run(assertions.FileDeleted(self._relative(path)))

    def not_in_diff(self, pattern: str | re.Pattern[str], *, content: str = "both") -> SandboxAssertionHandle:
        """`pattern` (a regular expression) is in no changed path and no added/removed line."""
        if content not in _CONTENT_SIDES:
            raise AuthoringError(f"not_in_diff content must be one of {', '.join(_CONTENT_SIDES)}, got {content!r}"
                                 + did_you_mean(content, _CONTENT_SIDES))
        try:
            compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        except re.error as error:
            raise AuthoringError(f"not_in_diff: invalid regular expression {pattern!r}: {error}") from None
        if not isinstance(compiled, re.Pattern):
            raise AuthoringError("not_in_diff takes a regular expression")
        return self._post_run(assertions.NotInDiff(compiled, content))


__all__ = ["EvalSandbox", "SandboxAssertionHandle"]
