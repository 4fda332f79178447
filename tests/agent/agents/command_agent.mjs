// A JavaScript agent over assay's NDJSON process protocol that runs the command it is sent (split on
// spaces, no shell) and reports it as a NiceEval command projection: `original` only, so assay makes the
// logical form. `node …` is run by this very node, reported by its absolute path; `say …` is a tool that
// runs no command.
import readline from "node:readline";
import { spawnSync } from "node:child_process";

const reply = (id, body) => process.stdout.write(JSON.stringify({ id, ...body }) + "\n");

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  if (message.method === "close") return reply(message.id, { result: null });
  const [word, ...args] = message.params.input.text.split(" ");
  if (word === "say") {
    return reply(message.id, { result: { status: "completed", events: [
      { type: "operation.started", operationId: "s1", operation: { kind: "tool", name: "say", input: { text: args.join(" ") }, command: { kind: "not-command" } } },
      { type: "operation.finished", operationId: "s1", kind: "tool", status: "completed", output: {} },
      { type: "message", role: "assistant", text: args.join(" ") },
    ] } });
  }
  const executable = word === "node" ? process.execPath : word;
  const done = spawnSync(executable, args, { encoding: "utf8" });
  const projection = { kind: "command", original: { state: "available", executable, args } };
  reply(message.id, { result: { status: "completed", events: [
    { type: "operation.started", operationId: "c1", operation: { kind: "tool", name: "bash", input: { argv: [word, ...args] }, command: projection } },
    { type: "operation.finished", operationId: "c1", kind: "tool", status: done.status === 0 ? "completed" : "failed", output: { exit: done.status, stdout: done.stdout } },
    { type: "message", role: "assistant", text: (done.stdout || "").trim() },
  ] } });
});
