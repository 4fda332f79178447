// A chat route written with the real AI SDK (`ai` 7), as a Next.js app's app/api/chat/route.ts would be, served
// by node's http on 127.0.0.1: streamText over a scripted model (ai/test), two tools, one of them behind a
// person's approval, answered as a UI message stream. It prints its address, then one line per request.
import http from "node:http";
import {
  convertToModelMessages, pipeUIMessageStreamToResponse, simulateReadableStream, streamText, tool, toUIMessageStream,
} from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finish = (reason) => ({ type: "finish", finishReason: { unified: reason, raw: undefined }, logprobs: undefined, usage });
const say = (text) => [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: text }, { type: "text-end", id: "t" }];

// The model: after a tool result it reports what the tool said; asked to delete or about the weather, it
// calls the tool; otherwise it counts the user's messages (the history is the client's to send).
const model = new MockLanguageModelV4({
  doStream: async ({ prompt }) => {
    const last = prompt[prompt.length - 1];
    const users = prompt.filter((message) => message.role === "user");
    const asked = JSON.stringify(users.at(-1));
    let chunks;
    if (last.role === "tool") {
      chunks = [...say(`The tool said ${JSON.stringify(last.content[0].output)}`), finish("stop")];
    } else if (asked.includes("delete") || asked.includes("weather")) {
      const [name, input] = asked.includes("delete") ? ["run_shell", { command: "rm -rf build" }] : ["get_weather", { city: "Paris" }];
      chunks = [{ type: "tool-call", toolCallId: `call-${users.length}`, toolName: name, input: JSON.stringify(input) }, finish("tool-calls")];
    } else {
      chunks = [...say(`You sent ${users.length} message(s).`), finish("stop")];
    }
    return { stream: simulateReadableStream({ chunks }) };
  },
});

const tools = {
  run_shell: tool({ description: "Run a shell command", inputSchema: z.object({ command: z.string() }),
    execute: async ({ command }) => ({ ran: command }) }),
  get_weather: tool({ description: "The weather in a city", inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, sky: "sunny" }) }),
};

const server = http.createServer(async (request, response) => {
  let raw = "";
  for await (const piece of request) raw += piece;
  const { messages } = JSON.parse(raw);
  console.log(JSON.stringify({ path: request.url, model: JSON.parse(raw).model ?? null, roles: messages.map((m) => m.role) }));
  const result = streamText({
    model, messages: await convertToModelMessages(messages), tools,
    toolApproval: { run_shell: "user-approval" }, stopWhen: ({ steps }) => steps.length >= 3,
  });
  pipeUIMessageStreamToResponse({ response, stream: toUIMessageStream({ stream: result.stream }) });
});
server.listen(0, "127.0.0.1", () => console.log(`http://127.0.0.1:${server.address().port}/api/chat`));
