#!/usr/bin/env python3
"""A stand-in for the Claude Code CLI in print mode, for the edge cases the real one will not play (tests only).

`--version` says a fake version. Otherwise the prompt (after `--`) says what to do: `args` replies with the
argv it got and the files `--settings` and `--mcp-config` name, as JSON; `crash` prints the init line and
exits 3 with no result; `silent` prints nothing and exits 2; `noise` prints a non-JSON line among the frames.
Its result says the session's cost so far (`total_cost_usd`, a cent a run, counted in `$HOME/.fake-claude`) and,
as older CLIs, nothing of the run's own.
"""

import json
import os
import sys
from pathlib import Path


def emit(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def main(argv):
    if argv[:1] == ["--version"]:
        print("9.9.9 (Claude Code, fake)")
        return 0
    prompt = argv[argv.index("--") + 1] if "--" in argv else ""
    session = argv[argv.index("--resume") + 1] if "--resume" in argv else "fake-session-1"
    runs = Path(os.environ["HOME"]) / ".fake-claude" / session
    runs.parent.mkdir(parents=True, exist_ok=True)
    count = int(runs.read_text()) + 1 if runs.exists() else 1
    runs.write_text(str(count))
    if prompt == "silent":
        print("fake claude: refused to start", file=sys.stderr)
        return 2
    emit({"type": "system", "subtype": "init", "session_id": session, "tools": ["Bash"]})
    if prompt == "crash":
        print("fake claude: crashed", file=sys.stderr)
        return 3
    if prompt == "noise":
        print("a stray line that is not JSON")
    text = "ok"
    if prompt == "args":
        files = {}
        for flag in ("--settings", "--mcp-config"):
            if flag in argv:
                with open(argv[argv.index(flag) + 1], encoding="utf-8") as file:
                    files[flag] = json.load(file)
        text = json.dumps({"argv": argv, "files": files})
    emit({"type": "assistant", "session_id": session, "parent_tool_use_id": None,
          "message": {"id": "msg_1", "content": [{"type": "text", "text": text}]}})
    emit({"type": "result", "subtype": "success", "is_error": False, "session_id": session, "result": text,
          "total_cost_usd": round(0.01 * count, 6), "usage": {"input_tokens": 5, "output_tokens": 3}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
