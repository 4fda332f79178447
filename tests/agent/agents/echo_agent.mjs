// A JavaScript agent over assay's NDJSON process protocol: answers `send` with a NiceEval-shaped turn.
import readline from "node:readline";

const histories = new Map();
const reply = (id, body) => process.stdout.write(JSON.stringify({ id, ...body }) + "\n");

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return; // notifications (cancel)
  if (message.method === "close") return reply(message.id, { result: null });
  if (message.method !== "send") return reply(message.id, { error: { message: `unknown method ${message.method}` } });
  const { input, context } = message.params;
  if (input.text === "crash") process.exit(3);
  if (input.text === "fail") return reply(message.id, { error: { message: "the agent refused" } });
  const history = histories.get(context.session.line) ?? [];
  history.push(input.text);
  histories.set(context.session.line, history);
  const turn = {
    status: "completed",
    sessionId: `js-${context.session.line}`,
    events: [
      { type: "operation.started", operationId: "t1", operation: { kind: "tool", name: "remember", input: { n: history.length } } },
      { type: "operation.finished", operationId: "t1", kind: "tool", status: "completed", output: history },
      { type: "message", role: "assistant", text: `${context.model}: ${history.join(" | ")}` },
    ],
    usage: { inputTokens: 3, outputTokens: 2 },
  };
  if (input.outputSchema) turn.data = { echoed: input.text };
  reply(message.id, { result: turn });
});
