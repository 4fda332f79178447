// Serve one JavaScript ES module over assay's NDJSON process protocol: the host calls exports by name.
// Requests: load {module, helpers?, helperConfig?} -> {exports}; call {export, args} -> {ok, value} or
// {ok: false, error, name, stack, location}; close.
import { spawnSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

// The default of 10 frames can cut the module's own frame off an error thrown deep in a library.
Error.stackTraceLimit = Math.max(Error.stackTraceLimit, 100);

// Stdout carries protocol messages only; anything the user's module prints goes to stderr.
const protocolWrite = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);
for (const name of ["log", "info", "debug"]) {
  console[name] = (...args) => console.error(...args);
}

let userModule = null;
let moduleUrls = [];
let markers = new Map();
let writes = Promise.resolve();

const send = (message) => {
  const line = JSON.stringify(message) + "\n";
  writes = writes.then(
    () => new Promise((resolve, reject) => protocolWrite(line, (error) => (error ? reject(error) : resolve()))),
  );
  return writes;
};

const describe = (error) => (error instanceof Error ? error.message : String(error));

// The innermost stack frame in the served module, so the host can name the author's own line.
const locate = (stack) => {
  for (const line of stack.split("\n")) {
    if (!/^\s+at /.test(line)) continue;
    for (const url of moduleUrls) {
      const start = line.indexOf(`${url}:`);
      if (start === -1) continue;
      const place = /^:(\d+):(\d+)/.exec(line.slice(start + url.length));
      if (place) return { file: fileURLToPath(url), line: Number(place[1]), column: Number(place[2]) };
    }
  }
  return null;
};

const failure = (error) => {
  const stack = error instanceof Error ? String(error.stack ?? "") : "";
  const name = error instanceof Error ? String(error.name || error.constructor?.name || "Error") : "";
  return { ok: false, error: describe(error), name, stack, location: locate(stack) };
};

// Node's module loader reports a syntax error without saying where it is (node 20 and 22); `node --check`
// of the file does: "<file>:<line>", the line's text, then a caret under the column. Nothing is added
// when the error is in a module the file imports (the check of the file itself passes).
const whereSyntaxFails = (file) => {
  const checked = spawnSync(process.execPath, ["--check", file], { encoding: "utf8", timeout: 15000 });
  const [first = "", text = "", caret = ""] = String(checked.stderr ?? "").split("\n");
  const place = /:(\d+)$/.exec(first);
  if (checked.status === 0 || !place || !first.startsWith(file)) return "";
  const column = caret.indexOf("^");
  const shown = text.trim().length > 120 ? `${text.trim().slice(0, 117)}...` : text.trim();
  return ` (line ${place[1]}${column >= 0 ? `, column ${column + 1}` : ""}: ${shown})`;
};

// Replace marker strings (e.g. the doc resolver) with live helper objects, anywhere in the arguments.
const withHelpers = (value) => {
  if (typeof value === "string") return markers.has(value) ? markers.get(value) : value;
  if (Array.isArray(value)) return value.map(withHelpers);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withHelpers(item)]));
  }
  return value;
};

const load = async ({ module, helpers, helperConfig }) => {
  if (helpers) {
    const helperModule = await import(pathToFileURL(helpers).href);
    markers = new Map(Object.entries(await helperModule.createHelpers(helperConfig ?? {})));
  }
  const href = pathToFileURL(module).href;
  try {
    userModule = await import(href);
  } catch (error) {
    if (error instanceof SyntaxError) error.message += whereSyntaxFails(module);
    throw error;
  }
  // Node reports a symlinked module's frames under its real path.
  let realHref = href;
  try {
    realHref = pathToFileURL(realpathSync(module)).href;
  } catch {}
  moduleUrls = [...new Set([href, realHref])];
  const exports = Object.keys(userModule).filter((name) => typeof userModule[name] === "function");
  return { exports, nodeVersion: process.version };
};

const call = async ({ export: name, args }) => {
  if (userModule === null) throw new Error("no module loaded");
  const target = userModule[name];
  if (typeof target !== "function") throw new Error(`module has no exported function ${name}`);
  try {
    const value = await target(...withHelpers(args ?? []));
    try {
      JSON.stringify(value); // a BigInt or a cycle would otherwise fail the reply, and node with it
    } catch (error) {
      return { ok: false, error: `it returned a value JSON cannot carry: ${describe(error)}`, name: "TypeError", stack: "", location: null };
    }
    return { ok: true, value: value === undefined ? null : value };
  } catch (error) {
    return failure(error);
  }
};

const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
const inFlight = new Set();

input.on("line", (line) => {
  if (!line.trim()) return;
  let message;
  try {
    message = JSON.parse(line);
  } catch (error) {
    process.stderr.write(`bridge: invalid JSON from host: ${describe(error)}\n`);
    return;
  }
  const { id, method, params } = message;
  if (id === undefined) return; // notifications (cancel) need no answer: hooks are not cancellable
  const work = (async () => {
    try {
      if (method === "load") return { id, result: await load(params ?? {}) };
      if (method === "call") return { id, result: await call(params ?? {}) };
      if (method === "close") return { id, result: null };
      return { id, error: { message: `unknown method ${method}` } };
    } catch (error) {
      return { id, error: { message: describe(error) } };
    }
  })().then(async (reply) => {
    await send(reply);
    if (method === "close") process.exit(0);
  });
  inFlight.add(work);
  work.finally(() => inFlight.delete(work));
});

input.on("close", async () => {
  await Promise.allSettled([...inFlight]);
  await writes;
  process.exit(0);
});
