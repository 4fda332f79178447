#!/usr/bin/env python3
"""A stand-in for the Codex CLI that speaks `codex exec --json` and really edits files (tests only).

Each prompt line is an instruction: `write PATH: TEXT`, `append PATH: TEXT`, `delete PATH`, `run COMMAND`,
`say TEXT`, `remember` (says the earlier prompts of this thread: resume works), `fail` (turn.failed) and
`crash` (exit 3 mid-turn). It refuses to run without CODEX_API_KEY, as the real CLI would.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path


def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main(argv):
    if argv[:1] == ["--version"]:
        print("codex-cli 0.42.0-fake")
        return 0
    if argv[:2] != ["exec", "--json"]:
        print(f"fake codex: unexpected arguments {argv}", file=sys.stderr)
        return 2
    args = argv[2:]
    options = {"config": []}
    resume = None
    prompt = ""
    position = 0
    while position < len(args):
        arg = args[position]
        if arg == "--":
            prompt = " ".join(args[position + 1:])
            break
        if arg in ("-m", "-C", "--output-schema", "-i"):
            options[arg] = args[position + 1]
            position += 2
            continue
        if arg == "-c":
            options["config"].append(args[position + 1])
            position += 2
            continue
        if arg == "resume":
            resume = args[position + 1]
            position += 2
            continue
        position += 1
    if not os.environ.get("CODEX_API_KEY"):
        emit({"type": "error", "message": "CODEX_API_KEY is not set"})
        return 1
    workdir = Path(options.get("-C") or os.getcwd())
    state_dir = Path(os.environ["HOME"]) / ".fake-codex"
    state_dir.mkdir(parents=True, exist_ok=True)
    thread = resume or "thread-" + hashlib.sha256(prompt.encode()).hexdigest()[:12]
    state_file = state_dir / f"{thread}.json"
    history = json.loads(state_file.read_text()) if state_file.exists() else []
    if resume is None:
        emit({"type": "thread.started", "thread_id": thread})
    emit({"type": "turn.started"})
    emit({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Reading the request**"}})
    counter = 1
    for line in prompt.splitlines():
        line = line.strip()
        item_id = f"item_{counter}"
        counter += 1
        if line.startswith(("write ", "append ")):
            verb, rest = line.split(" ", 1)
            path, text = rest.split(": ", 1)
            target = workdir / path
            existed = target.exists()
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "a" if verb == "append" else "w", encoding="utf-8") as file:
                file.write(text.replace("\\n", "\n") + ("\n" if verb == "append" else ""))
            kind = "update" if existed else "add"
            emit({"type": "item.completed", "item": {"id": item_id, "type": "file_change",
                                                     "changes": [{"path": str(target), "kind": kind}], "status": "completed"}})
        elif line.startswith("delete "):
            target = workdir / line[len("delete "):]
            target.unlink()
            emit({"type": "item.completed", "item": {"id": item_id, "type": "file_change",
                                                     "changes": [{"path": str(target), "kind": "delete"}], "status": "completed"}})
        elif line.startswith("run "):
            command = line[len("run "):]
            emit({"type": "item.started", "item": {"id": item_id, "type": "command_execution", "command": command,
                                                   "aggregated_output": "", "exit_code": None, "status": "in_progress"}})
            done = subprocess.run(["bash", "-lc", command], cwd=workdir, capture_output=True, text=True)
            emit({"type": "item.completed", "item": {
                "id": item_id, "type": "command_execution", "command": command,
                "aggregated_output": done.stdout + done.stderr, "exit_code": done.returncode,
                "status": "completed" if done.returncode == 0 else "failed"}})
        elif line.startswith("say "):
            emit({"type": "item.completed", "item": {"id": item_id, "type": "agent_message", "text": line[4:]}})
        elif line == "remember":
            emit({"type": "item.completed", "item": {"id": item_id, "type": "agent_message",
                                                     "text": "earlier: " + " | ".join(history)}})
        elif line == "model":
            effort = [value for value in options["config"] if value.startswith("model_reasoning_effort=")]
            emit({"type": "item.completed", "item": {"id": item_id, "type": "agent_message",
                                                     "text": f"model={options.get('-m')} {' '.join(effort)}"}})
        elif line == "fail":
            emit({"type": "turn.failed", "error": {"message": "the model refused"}})
            return 1
        elif line == "crash":
            print("fake codex: crashed", file=sys.stderr)
            return 3
    history.append(prompt)
    state_file.write_text(json.dumps(history))
    emit({"type": "turn.completed", "usage": {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 80}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
