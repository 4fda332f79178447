// assay results viewer: runs, run page, unit drill-down (with an agent attempt's waterfall), traces and
// compare. Vanilla JS, no build step.
// Live mode asks the /api routes; an exported site (`assay view --export`) loads data/<hash>.js files.
"use strict";

const STATIC = document.querySelector('meta[name="assay-mode"]').content === "static";
const PAGE = 100;
// What a run's groups are and how a unit's detail is drawn, by kind: looked up, not branched on; a kind
// without an entry (an imported run) gets the generic view of whatever its units recorded.
const GROUP_HEADINGS = { video: "Per target", agent: "Per eval", doc: "Per case" };
const CHANGES = [
  ["regressions", "Regressions"], ["fixes", "Fixes"], ["still_failing", "Still failing"],
  ["new", "New"], ["removed", "Removed"], ["changed_other", "Changed (skipped/ignored)"],
];

// ---------------------------------------------------------------------------------------------
// Data access

function apiKey(path, params) {
  const names = Object.keys(params).filter((name) => params[name] !== undefined && params[name] !== null && params[name] !== "").sort();
  const query = names.map((name) => `${name}=${params[name]}`).join("&");
  return path + (query ? "?" + query : "");
}

function keyHash(key) {
  const bytes = new TextEncoder().encode(key);
  let digest = "";
  for (const basis of [0x811c9dc5, (0x01000193 ^ 0x5bd1e995) >>> 0]) {
    let value = basis >>> 0;
    for (const byte of bytes) {
      value = (value ^ byte) >>> 0;
      value = Math.imul(value, 0x01000193) >>> 0;
    }
    digest += value.toString(16).padStart(8, "0");
  }
  return digest;
}

const waiting = new Map();
window.assayData = (key, document_) => {
  const entry = waiting.get(key);
  if (entry) entry.resolve(document_);
};

function notExported() {
  const error = new Error("This view is not included in the export.");
  error.notExported = true;
  return error;
}

function loadStatic(key) {
  return new Promise((resolve, reject) => {
    waiting.set(key, { resolve });
    const script = document.createElement("script");
    script.src = `data/${keyHash(key)}.js`;
    script.onload = () => {
      script.remove();
      if (waiting.has(key)) { waiting.delete(key); reject(notExported()); }
    };
    script.onerror = () => { script.remove(); waiting.delete(key); reject(notExported()); };
    const resolveAndForget = waiting.get(key).resolve;
    waiting.get(key).resolve = (value) => { waiting.delete(key); resolveAndForget(value); };
    document.head.appendChild(script);
  });
}

async function api(path, params) {
  if (STATIC) return loadStatic(apiKey(path, params));
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== "") query.set(name, value);
  let response;
  try {
    response = await fetch(`api/${path}?${query}`, { headers: { accept: "application/json" } });
  } catch (error) {  // no server answered: a page read "Failed to fetch", which does not say what to do
    if (error instanceof TypeError) throw new Error("the viewer is not answering (stopped? start it again)");
    throw error;
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body && body.error ? body.error.message : `HTTP ${response.status}`);
  return body;
}

function frameUrl(run, unit) {
  if (STATIC) return `frames/${keyHash(apiKey("frame", { run, unit }))}.png`;
  return `api/frame?${new URLSearchParams({ run, unit })}`;
}

// ---------------------------------------------------------------------------------------------
// DOM helpers (text only: nothing from the store is ever parsed as HTML)

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const percent = (value) => (value === null || value === undefined ? "-" : `${(value * 100).toFixed(1)}%`);
const verdictBadge = (verdict) => el("span", { class: `verdict ${verdict}`, "data-verdict": verdict }, verdict);
const pretty = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));
const runLink = (id) => `#/run/${encodeURIComponent(id)}`;
const unitLink = (run, unit) => `#/unit/${encodeURIComponent(run)}/${encodeURIComponent(unit)}`;
const gitText = (run) => (run.git && run.git.commit ? run.git.commit.slice(0, 10) + (run.git.dirty ? "+dirty" : "") : "-");
const gatesText = (run) => (run.success === true ? "pass" : run.success === false ? "FAIL" : "-");

function show(...nodes) {
  // replaceChildren writes a null as the text "null": optional parts are left out instead.
  const main = document.getElementById("main");
  main.replaceChildren(...nodes.flat().filter((node) => node !== undefined && node !== null && node !== false));
}

function crumbs(...parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.flatMap((part, index) => (index ? [" / ", part] : [part])));
  nav.title = nav.textContent;  // the whole path, when a long id is cut short on screen
  // The window's title names the page, the most particular part first (every page read "Runs · assay": a tab, the
  // history's list and back's menu could not tell a run from a unit or a compare).
  const names = parts.slice(1).map((part) => (part instanceof Node ? part.textContent : String(part))).reverse();
  document.title = [...(names.length ? names : ["Runs"]), "assay"].join(" · ");
}

// "Transcript (agent · model, locator)", leaving out what the unit did not record (it read "Transcript (, )").
function transcriptHeading(detail) {
  const who = [detail.agent, detail.model].filter(Boolean).join(" · ");
  const said = [who, detail.locator].filter(Boolean).join(", ");
  return said ? `Transcript (${said})` : "Transcript";
}

function parseHash() {
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  // A hand-edited address may hold a `%` that starts no escape: that part is read as it was typed, where
  // decodeURIComponent would throw and leave the page of the address before (or "Loading…") on screen.
  const decode = (part) => { try { return decodeURIComponent(part); } catch { return part; } };
  const parts = (path || "/").split("/").filter(Boolean).map(decode);
  return { parts, params: Object.fromEntries(new URLSearchParams(query || "")) };
}

// Where a page of rows stands, and where "previous" goes. A hand-edited offset past the last row says so
// (it read "501–20 of 20", and the Traces page said no attempt had received spans), and "previous" goes
// to the last page that has rows rather than to another page past the end.
function pageStatus(offset, total, noun, none) {
  if (!total) return none;
  if (offset >= total) return `past the end: ${total} ${noun} in all`;
  return `${offset + 1}–${Math.min(offset + PAGE, total)} of ${total}${noun === "unit(s)" ? "" : ` ${noun}`}`;
}

function previousOffset(offset, total) {
  const lastPage = total ? Math.floor((total - 1) / PAGE) * PAGE : 0;
  return String(Math.max(0, Math.min(offset - PAGE, lastPage)));
}

function address(parts, params) {
  const query = new URLSearchParams(Object.entries(params || {}).filter(([, value]) => value !== "" && value !== undefined && value !== null));
  return "#/" + parts.map(encodeURIComponent).join("/") + (query.toString() ? "?" + query : "");
}

function go(parts, params) {
  location.hash = address(parts, params);
}

// ---------------------------------------------------------------------------------------------
// Runs

async function renderRuns(params) {
  crumbs("runs");
  const request = STATIC ? { limit: "500" } : { kind: params.kind, search: params.search, limit: "500" };
  const listing = await api("runs", request);
  let runs = listing.runs;
  if (STATIC && params.kind && !(listing.kinds || []).includes(params.kind)) {  // the live viewer's server refuses it so
    throw new Error(`kind must be one of ${(listing.kinds || []).join(", ")}, got '${params.kind}'`);
  }
  if (STATIC) {
    runs = runs.filter((run) => (!params.kind || run.kind === params.kind)
      && (!params.search || [run.run_id, run.title || ""].some((text) => text.toLowerCase().includes(params.search.toLowerCase()))));
  }
  const kind = el("select", { id: "kind-filter", "aria-label": "Kind" }, el("option", { value: "" }, "all kinds"),
    (listing.kinds || []).map((name) => el("option", { value: name, selected: params.kind === name }, name)));
  const search = el("input", { id: "run-search", type: "search", placeholder: "Search run id or title", value: params.search || "" });
  const apply = () => go([], { kind: kind.value, search: search.value });
  kind.addEventListener("change", apply);
  search.addEventListener("keydown", (event) => { if (event.key === "Enter") apply(); });
  const selected = [];
  const compareButton = el("button", { id: "compare-selected", disabled: true, onclick: () => {
    const chosen = runs.filter((run) => selected.includes(run.run_id)).sort((a, b) => (a.created_at < b.created_at ? -1 : 1));
    go(["compare", chosen[0].run_id, chosen[1].run_id], {});
  } }, "Compare selected");
  const rows = runs.map((run) => {
    const box = el("input", { type: "checkbox", "aria-label": `select ${run.run_id}`, onchange: (event) => {
      if (event.target.checked) selected.push(run.run_id); else selected.splice(selected.indexOf(run.run_id), 1);
      compareButton.disabled = selected.length !== 2;
    } });
    return el("tr", { "data-run": run.run_id },
      el("td", {}, box),
      el("td", { class: "mono" }, el("a", { href: runLink(run.run_id) }, run.run_id)),
      el("td", {}, run.kind), el("td", {}, run.created_at), el("td", { class: "mono" }, gitText(run)),
      el("td", { class: "num" }, run.unit_count), el("td", { class: "num" }, percent(run.pass_rate)),
      el("td", {}, verdictBadge(gatesText(run).toLowerCase())), el("td", {}, run.title || ""));
  });
  show(
    el("h1", {}, "Runs"),
    el("div", { class: "filters" }, kind, search, el("button", { onclick: apply }, "Filter"), compareButton,
      el("span", { class: "muted" }, `${runs.length} of ${listing.total} runs`)),
    runs.length
      ? el("table", { id: "runs-table" }, el("thead", {}, el("tr", {}, ["", "run", "kind", "created", "git", "units", "pass rate", "gates", "title"].map((h) => el("th", {}, h)))), el("tbody", {}, rows))
      : el("p", { class: "muted", id: "no-runs" }, listing.total || params.kind || params.search
        ? "No run matches this kind and search: clear the filter to see every run."
        : "No runs recorded yet."),
  );
}

// ---------------------------------------------------------------------------------------------
// Run page

function keyValueTable(object) {
  const entries = Object.entries(object || {}).filter(([, value]) => value !== null && value !== undefined);
  if (!entries.length) return el("p", { class: "muted" }, "none");
  return el("table", {}, el("tbody", {}, entries.map(([name, value]) => el("tr", {}, el("th", {}, name), el("td", {}, el("pre", {}, pretty(value)))))));
}

async function renderRun(runId, params) {
  const offset = Number(params.offset || 0);
  const unitParams = { run: runId, verdict: params.verdict || "", offset: params.offset || "0", limit: String(PAGE) };
  if (!STATIC) Object.assign(unitParams, { group: params.group, search: params.search });
  const [run, page, held] = await Promise.all([api("run", { run: runId }), api("units", unitParams), exportedUnits()]);
  crumbs(el("a", { href: "#/" }, "runs"), run.run_id);
  const navigate = (changes) => go(["run", run.run_id], { ...params, offset: "", ...changes });
  const filtered = (changes) => address(["run", run.run_id], { ...params, offset: "", ...changes });

  // A run that set no gate (an imported log, a run without thresholds) says so under the heading.
  const gates = (run.gates || []).length
    ? el("ul", { id: "gates" }, run.gates.map((gate) => el("li", {},
      verdictBadge(gate.passed ? "pass" : "fail"), " ", el("b", {}, gate.name), gate.trial !== undefined && gate.trial !== null ? ` [trial ${gate.trial}]` : "", ": ", gate.message || "")))
    : el("p", { class: "muted", id: "no-gates" }, "No gate was set for this run.");
  const groups = el("table", { id: "groups-table" },
    el("thead", {}, el("tr", {}, ["group", "passed", "failed", "errored", "skipped", "ignored", "pass rate"].map((h) => el("th", {}, h)))),
    el("tbody", {}, run.groups.map(({ group, counts }) => {
      const judged = counts.passed + counts.failed + counts.errored;
      return el("tr", { class: STATIC ? "" : "clickable", onclick: STATIC ? null : () => navigate({ group }) },
        // A link, not only a clickable row: the keyboard (Tab, Enter) reaches it, as it reaches the units' links.
        el("td", { class: "mono" }, STATIC ? group || "-" : el("a", { href: filtered({ group }), class: "group-filter" }, group || "-")),
        ...["passed", "failed", "errored", "skipped", "ignored"].map((name) => el("td", { class: "num" }, counts[name])),
        el("td", { class: "num" }, percent(judged ? counts.passed / judged : null)));
    })));

  const verdictSelect = el("select", { id: "verdict-filter", "aria-label": "Verdict" },
    [["", "all verdicts"], ["failed,errored", "failing"], ...(STATIC ? [] : [["passed", "passed"], ["failed", "failed"], ["errored", "errored"], ["skipped,ignored", "skipped / ignored"]])]
      .map(([value, label]) => el("option", { value, selected: (params.verdict || "") === value }, label)));
  verdictSelect.addEventListener("change", () => navigate({ verdict: verdictSelect.value }));
  const filters = el("div", { class: "filters" }, verdictSelect);
  if (!STATIC) {
    const search = el("input", { id: "unit-search", type: "search", placeholder: "Unit id contains", value: params.search || "" });
    search.addEventListener("keydown", (event) => { if (event.key === "Enter") navigate({ search: search.value }); });
    filters.append(search);
    if (params.group !== undefined && params.group !== "") {
      filters.append(el("span", { class: "muted" }, `group ${params.group} `), el("button", { onclick: () => navigate({ group: "" }) }, "all groups"));
    }
  } else if (params.group || params.search) {
    // An address of the live viewer opened in an export: its group or text filter is not applied here.
    filters.append(el("span", { class: "error", id: "filter-not-exported" },
      `The ${params.group ? "group" : "text"} filter of this address needs the live viewer (\`assay view\`): the export lists every unit.`),
    el("button", { onclick: () => navigate({ group: "", search: "" }) }, "clear it"));
  }
  const table = el("table", { id: "units-table" },
    el("thead", {}, el("tr", {}, ["unit", "verdict", "expected", "observed", "reason", "seconds"].map((h) => el("th", {}, h)))),
    el("tbody", {}, page.units.map((unit) => el("tr", { class: "clickable", "data-unit": unit.unit_id, onclick: () => { location.hash = unitLink(run.run_id, unit.unit_id); } },
      el("td", { class: "mono" }, el("a", { href: unitLink(run.run_id, unit.unit_id) }, unit.unit_id)),
      el("td", {}, verdictBadge(unit.shown_verdict || unit.verdict), unit.carried ? el("span", { class: "muted carried", title: "carried from an earlier run, not run again" }, " (carried)") : null),
      el("td", { class: "cell", title: unit.expected }, unit.expected),
      el("td", { class: "cell", title: unit.observed }, unit.observed),
      el("td", { class: "cell", title: unit.reason }, unit.reason),
      el("td", { class: "num" }, unit.duration_seconds === null || unit.duration_seconds === undefined ? "" : unit.duration_seconds.toFixed(3))))));
  const last = Math.min(offset + PAGE, page.total);
  const cut = last >= held && last < page.total;  // the export's last page of these units, not the run's
  const pager = el("div", { class: "pager" },
    el("button", { id: "previous-page", disabled: offset === 0, onclick: () => navigate({ offset: previousOffset(offset, page.total), verdict: params.verdict, group: params.group, search: params.search }) }, "← previous"),
    el("span", { id: "page-status" }, pageStatus(offset, page.total, "unit(s)", "no units"),
      cut ? ` · this export holds the first ${held}; \`assay view\` shows them all` : ""),
    el("button", { id: "next-page", disabled: last >= page.total || cut, onclick: () => navigate({ offset: String(offset + PAGE), verdict: params.verdict, group: params.group, search: params.search }) }, "next →"));

  show(
    el("h1", { id: "run-title" }, run.run_id),
    el("div", { class: "muted" }, `${run.kind} · ${run.title || ""} · ${run.created_at} · git ${gitText(run)}`),
    el("div", { class: "stats panel" },
      el("div", { class: "stat" }, el("b", { id: "run-pass-rate" }, percent(run.pass_rate)), "pass rate"),
      ...["passed", "failed", "errored", "skipped", "ignored"].map((name) => el("div", { class: "stat" }, el("b", {}, run.counts[name]), name)),
      el("div", { class: "stat" }, el("b", {}, run.unit_count), "units"),
      run.cost_usd !== null && run.cost_usd !== undefined ? el("div", { class: "stat" }, el("b", {}, `$${run.cost_usd.toFixed(4)}`), "cost") : null,
      run.duration_seconds !== null && run.duration_seconds !== undefined ? el("div", { class: "stat" }, el("b", {}, `${run.duration_seconds.toFixed(2)}s`), "duration") : null),
    run.has_traces ? el("p", {}, el("a", { id: "traces-link", href: `#/traces/${encodeURIComponent(run.run_id)}` }, "Traces (the attempts whose app sent spans)")) : null,
    el("p", {}, el("a", { id: "trend-link", href: `#/trend/${encodeURIComponent(run.run_id)}` }, "Trend (each group's pass rate over the last runs, flaky units marked)")),
    el("h2", {}, "Gates"), gates,
    el("h2", {}, GROUP_HEADINGS[run.kind] || "Per group"), groups,
    run.groups_total > run.groups.length ? el("p", { class: "muted" }, `${run.groups.length} of ${run.groups_total} groups shown`) : null,
    el("h2", {}, "Units"), filters, table, pager,
    el("details", {}, el("summary", {}, "Identity, options, summary, usage"),
      el("div", { class: "grid" },
        el("div", { class: "panel" }, el("h2", {}, "Identity"), keyValueTable(run.identity)),
        el("div", { class: "panel" }, el("h2", {}, "Options"), keyValueTable(run.options)),
        el("div", { class: "panel" }, el("h2", {}, "Summary"), keyValueTable(run.summary)),
        el("div", { class: "panel" }, el("h2", {}, "Usage"), keyValueTable(run.usage || {})))),
  );
}

// ---------------------------------------------------------------------------------------------
// Unit drill-down

// A frame that does not load: the live server says why (the video moved, cannot be decoded); an export
// names only the frames it wrote, so there the file went missing after the site was written.
async function frameFailed(image) {
  let why = "its file is missing from this export's frames folder.";
  if (!STATIC) {
    try {
      const body = await (await fetch(image.src, { headers: { accept: "application/json" } })).json();
      why = body && body.error ? body.error.message : "the server did not say why.";
    } catch {
      why = "the viewer did not answer (was `assay view` stopped?).";
    }
  }
  image.replaceWith(el("p", { class: "muted", id: "no-frame" }, `Frame not available: ${why}`));
}

function videoDetail(unit) {
  const detail = unit.detail || {};
  const frame = unit.has_frame
    ? el("img", { id: "unit-frame", alt: `frame at ${detail.timestamp_s}s`, src: frameUrl(unit.run_id, unit.unit_id),
      onerror: (event) => frameFailed(event.target) })
    : el("p", { class: "muted", id: "no-frame" }, unit.frame_left_out || "No video recorded for this unit.");
  return [
    el("div", { class: "panel frame" }, el("h2", {}, `Frame sent at ${detail.timestamp_s}s (${detail.case} / ${detail.target_label || detail.target}, trial ${detail.trial})`), frame),
    el("div", { class: "panel" }, el("h2", {}, "Comparison"), keyValueTable({ compare_mode: detail.compare_mode, field: detail.field, source: detail.source, raw_observation: detail.observed_raw })),
  ];
}

// What command_match reads of a tool call's command projection: the logical command, or why there is none.
function commandShown(projection) {
  if (!projection || projection.kind !== "command") return "";
  const original = projection.original || {};
  if (original.state === "opaque") return el("span", { class: "muted" }, ` ran a command that cannot be read: ${original.reason}`);
  const logical = projection.logical || original;
  return el("span", { class: "muted" }, " ran: ", el("code", {}, [logical.executable, ...(logical.args || [])].join(" ")));
}

function eventNode(event) {
  if (event.type === "message") return el("div", { class: "event message" }, el("span", { class: "role" }, `${event.role}: `), event.text);
  if (event.type === "operation.started") {
    const operation = event.operation || {};
    return el("div", { class: "event tool" }, `→ ${operation.kind || "tool"} ${operation.name || ""} #${event.operation_id} `, el("code", {}, JSON.stringify(operation.input)), commandShown(operation.command));
  }
  if (event.type === "operation.finished") {
    return el("div", { class: "event tool" }, `← #${event.operation_id} ${event.status || ""} `, "output" in event ? el("code", {}, JSON.stringify(event.output)) : "");
  }
  if (event.type === "input.requested") {
    const request = event.request || {};
    const options = (request.options || []).map((option) => option.id).join(", ");
    return el("div", { class: "event request" }, `? human input requested ${request.id || ""}: ${request.prompt || ""}${options ? ` [${options}]` : ""}`);
  }
  return el("div", { class: "event" }, el("code", {}, JSON.stringify(event)));
}

function assertionStatusBadge(status) {
  if (status === "hidden") return verdictBadge("hidden");  // the label page, before the person has answered
  const verdict = status === "matched" || status === "passed" ? "passed" : status === "unavailable" ? "skipped" : "failed";
  return verdictBadge(verdict);
}

// `{x:g}` as Python writes it for a threshold: 0.6, 1, 0.25 (at most six significant digits).
const shortNumber = (value) => String(Number(value.toPrecision(6)));

// An assertion's status and score as `assay agent show` prints them: a measurement's value to three places, its
// gate's threshold (≥ met, < not: the status then reads "below", and the attempt failed on it) and its
// `.at_least` mark (shown, never a verdict).
function assertionOutcome(assertion) {
  const value = assertion.value, threshold = assertion.threshold, atLeast = assertion.at_least;
  const isNumber = (item) => typeof item === "number" && Number.isFinite(item);
  if (assertion.status !== "matched" || !isNumber(value)) return { status: assertion.status, score: "" };
  let status = assertion.status, score = `score ${value.toFixed(3)}`;
  if (isNumber(threshold)) {
    const met = value >= threshold;
    score += ` ${met ? "≥" : "<"} ${shortNumber(threshold)}`;
    if (!met) status = "below";
  }
  if (isNumber(atLeast)) score += ` (at least ${shortNumber(atLeast)}: ${value >= atLeast ? "met" : "below"})`;
  return { status, score };
}

// One assertion's row: its `.label(text)` before the call, as `label (call)`.
function assertionRow(assertion, withScore) {
  const { status, score } = assertionOutcome(assertion);
  const label = assertion.label === undefined || assertion.label === null || assertion.label === "" ? null : String(assertion.label);
  const call = assertion.description || assertion.kind || "";
  return el("tr", { class: "assertion", "data-status": status },
    el("td", {}, assertionStatusBadge(status === "below" ? "failed" : status), " ", status),
    el("td", { class: "assertion-call" }, label ? [el("b", { class: "assertion-label" }, label), ` (${call})`] : call),
    el("td", {}, assertion.scope || ""),
    withScore ? el("td", { class: "assertion-score" }, score) : null,
    el("td", {}, assertion.reason || ""));
}

// The attempt's assertions as `assay agent show` lists them: those in no `.group(title)` first, in order, then
// each group under its title (in the order the groups were first used).
function assertionsPanel(assertions) {
  const items = assertions.filter((item) => item && typeof item === "object");
  const heading = el("h2", {}, "Assertions and judge reasons");
  if (!items.length) return el("div", { class: "panel", id: "assertions-panel" }, heading, el("p", { class: "muted", id: "assertions" }, "This attempt checked no assertions."));
  const withScore = items.some((item) => assertionOutcome(item).score);
  const columns = ["status", "assertion", "scope", ...(withScore ? ["score"] : []), "reason"];
  const grouped = (item) => item.group !== undefined && item.group !== null && item.group !== "";
  const groups = new Map();
  for (const item of items.filter(grouped)) {
    const title = String(item.group);
    if (!groups.has(title)) groups.set(title, []);
    groups.get(title).push(item);
  }
  const bodies = [el("tbody", {}, items.filter((item) => !grouped(item)).map((item) => assertionRow(item, withScore)))];
  for (const [title, members] of groups) {
    bodies.push(el("tbody", { class: "assertion-group", "data-group": title },
      el("tr", { class: "assertion-group-heading" }, el("th", { colspan: String(columns.length), scope: "rowgroup" }, title)),
      members.map((item) => assertionRow(item, withScore))));
  }
  return el("div", { class: "panel", id: "assertions-panel" }, heading,
    el("table", { id: "assertions" }, el("thead", {}, el("tr", {}, columns.map((h) => el("th", {}, h)))), bodies));
}

// "eval group ID (definition HASH)" and "shared sandbox: task N of POOL", each only when the attempt recorded it.
function sharedLines(detail) {
  const group = detail.eval_group && typeof detail.eval_group === "object" ? detail.eval_group : null;
  const shared = detail.sandbox && typeof detail.sandbox === "object" && detail.sandbox.shared && typeof detail.sandbox.shared === "object"
    ? detail.sandbox.shared : null;
  if (!group && !shared) return null;
  return el("div", { id: "shared-sandbox" },
    group ? el("p", { id: "eval-group" }, `Eval group ${group.id}${group.definition_hash ? ` (definition ${group.definition_hash})` : ""}`) : null,
    shared ? el("p", { id: "shared-task" }, `Shared sandbox: task ${shared.task}${shared.pool ? ` of ${shared.pool}` : ""}`) : null);
}

// Why the attempt ran, or why it did not (a budget spent, an early exit, Ctrl-C before it started), as `assay agent
// show` says it: the unit's reason reads only "not run (not_dispatched)".
function decisionLine(decision) {
  if (!decision || typeof decision !== "object" || !decision.message) return null;
  if (decision.action === "execute") return el("p", { id: "decision", class: "muted" }, `Executed: ${decision.message}`);
  if (decision.action === "not-dispatched") return el("p", { id: "decision" }, `Not run: ${decision.message}`);
  return null;
}

// An agent unit has no expected or observed value: what it was held to is its assertions, so they
// take the place of the expected / observed panels (with the score, when the eval scores).
function agentDetail(unit) {
  const detail = unit.detail || {};
  const turns = (detail.turns || []).map((turn) => el("div", { class: "turn" },
    el("div", {}, el("b", {}, `${turn.session ? `session ${turn.session} ` : ""}turn ${turn.turn}`), ` (${turn.status})`),
    el("div", { class: "event human" }, el("span", { class: "role" }, "user: "), turn.input === undefined ? "" : pretty(turn.input)),
    (turn.events || []).map(eventNode),
    turn.usage ? el("div", { class: "muted" }, `usage ${JSON.stringify(turn.usage)}`) : null));
  const score = unit.observed && typeof unit.observed === "object" && "score" in unit.observed ? unit.observed.score : null;
  return [
    unit.carried_from ? null : decisionLine(detail.decision),  // a carried unit's is the run's it came from
    assertionsPanel(detail.assertions || []),
    score !== null ? el("div", { class: "panel" }, el("h2", {}, "Score"), el("pre", { id: "unit-score" }, pretty(score))) : null,
    // An eval group's member, and an attempt that ran in a shared sandbox (its group's, or its experiment's with
    // `sandbox_reuse=True`: that one read nothing), as `assay agent show` says them.
    sharedLines(detail),
    el("div", { class: "panel" }, el("h2", {}, transcriptHeading(detail)),
      el("div", { id: "transcript" }, turns.length ? turns : el("p", { class: "muted" }, "No turns recorded."))),
    waterfallPanel(unit.waterfall, (detail.turns || []).length),
    timingPanel(unit.timing),
    ...fileChangesPanels(unit.file_changes),
    detail.error ? el("div", { class: "panel" }, el("h2", {}, "Error"), el("pre", {}, pretty(detail.error))) : null,
    (detail.diagnostics || []).length ? el("div", { class: "panel" }, el("h2", {}, "Diagnostics"), el("pre", {}, pretty(detail.diagnostics))) : null,
  ];
}

// The app's own OpenTelemetry spans, turn by turn (Tier 2): a row per span in tree order, its bar placed
// on the turn's time axis, coloured by what it is (model call, tool, subagent, other; errors red).
// A click opens the span's attributes; past 150 spans a trace's `other` noise is folded behind a button.
const CATEGORY_LABELS = { model: "model call", tool: "tool", subagent: "subagent", other: "other" };

function bar(offset, duration, total, classes) {
  const scale = total > 0 ? 100 / total : 0;
  const left = Math.min(100, offset * scale);
  const width = Math.max(0.4, Math.min(100 - left, duration * scale));
  const track = el("span", { class: "wf-track" });
  const fill = el("span", { class: `wf-bar ${classes}` });
  fill.style.left = `${left}%`;
  fill.style.width = `${width}%`;
  track.append(fill);
  return track;
}

const milliseconds = (value) => (value >= 100 ? `${value.toFixed(0)} ms` : `${value.toFixed(1)} ms`);

function spanDetail(row) {
  const parts = [keyValueTable(row.attributes)];
  if (row.io) parts.unshift(el("div", { class: "wf-io" }, el("b", {}, "io (from the send events)"), keyValueTable(row.io)));
  if (row.status_message) parts.unshift(el("p", { class: "error" }, row.status_message));
  if (row.events && row.events.length) parts.push(el("b", {}, "events"), el("pre", {}, pretty(row.events)));
  parts.push(el("div", { class: "muted" }, `span ${row.span_id}${row.kind ? ` · ${row.kind}` : ""}${row.service ? ` · ${row.service}` : ""}${row.parent_missing ? " · parent not received" : ""}`));
  return el("div", { class: "wf-detail", hidden: true }, parts);
}

function traceBlock(trace) {
  const total = trace.duration_ms;
  const rows = [];
  const folded = [];
  rows.push(el("div", { class: "wf-row wf-send" },
    el("span", { class: "wf-name" }, `agent.send ${trace.label}`),
    bar(trace.send_offset_ms, trace.send_duration_ms, total, "send"),
    el("span", { class: "wf-ms" }, milliseconds(trace.send_duration_ms))));
  for (const row of trace.rows) {
    const detail = spanDetail(row);
    const name = el("span", { class: "wf-name", title: row.name }, el("span", { class: `wf-kind ${row.category}` }, CATEGORY_LABELS[row.category]), " ", row.name);
    name.style.paddingLeft = `${6 + row.depth * 14}px`;
    const line = el("div", {
      class: `wf-row ${row.error ? "error" : ""}`, "data-span": row.span_id, "data-category": row.category,
      "data-error": String(row.error), role: "button", tabindex: "0",
      onclick: () => { detail.hidden = !detail.hidden; },
      onkeydown: (event) => {  // a button opens with Enter or Space (Space would otherwise scroll the page)
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); detail.hidden = !detail.hidden; }
      },
    }, name, bar(row.offset_ms, row.duration_ms, total, `${row.category}${row.error ? " error" : ""}`), el("span", { class: "wf-ms" }, milliseconds(row.duration_ms)));
    const pair = [line, detail];
    if (row.folded) {
      line.classList.add("folded");
      line.hidden = true;
      folded.push(line);
    }
    rows.push(...pair);
  }
  const counts = trace.counts;
  const summary = `${trace.span_count} span(s) · ${counts.model} model call(s) · ${counts.tool} tool(s)${counts.subagent ? ` · ${counts.subagent} subagent(s)` : ""}${trace.errors ? ` · ${trace.errors} error(s)` : ""} · ${milliseconds(total)}`;
  const unfold = folded.length ? el("button", { class: "wf-unfold", onclick: (event) => {
    for (const line of folded) line.hidden = false;
    event.target.remove();
  } }, `show ${folded.length} folded span(s) (other, past ${150})`) : null;
  return el("div", { class: "trace", "data-trace": trace.trace_id, "data-turn": trace.label, id: `trace-${trace.trace_id}` },
    el("h3", {}, `${trace.label} — ${summary}`),
    el("div", { class: "muted mono" }, `trace ${trace.trace_id}${trace.attributed_by_window ? ` · ${trace.attributed_by_window} span(s) placed by time window (no traceparent)` : ""}`),
    trace.span_count ? el("div", { class: "wf" }, rows) : el("p", { class: "muted" }, "No spans arrived for this turn."),
    unfold);
}

function waterfallPanel(waterfall, turnCount) {
  if (!waterfall) {
    return el("div", { class: "panel", id: "waterfall" }, el("h2", {}, "Waterfall"),
      el("p", { class: "muted" }, turnCount
        ? "No spans were received for this attempt: export the app's OpenTelemetry spans to ctx.telemetry (see docs/agent/traces.md)."
        : "No turns, so no spans."));
  }
  return el("div", { class: "panel", id: "waterfall" }, el("h2", {}, "Waterfall (the app's spans per turn)"),
    el("div", { class: "wf-legend muted" }, Object.entries(CATEGORY_LABELS).map(([name, label]) => el("span", {}, el("span", { class: `wf-swatch ${name}` }), label)),
      el("span", {}, el("span", { class: "wf-swatch error" }), "error")),
    waterfall.turns.map(traceBlock),
    waterfall.dropped ? el("p", { class: "muted" }, `${waterfall.dropped} more span(s) arrived than an attempt keeps; they were counted, not kept.`) : null);
}

function timingPanel(timing) {
  if (!timing || !timing.length) return null;
  const total = timing[0].duration_ms || Math.max(...timing.map((row) => row.start_offset_ms + row.duration_ms));
  const rows = timing.map((row) => {
    const name = el("span", { class: "wf-name" }, row.phase, row.label ? el("span", { class: "muted" }, ` ${row.label}`) : "");
    name.style.paddingLeft = `${6 + row.depth * 14}px`;
    return el("div", { class: "wf-row", "data-phase": row.phase },
      name, bar(row.start_offset_ms, row.duration_ms, total, `phase${row.open ? " open" : ""}`),
      el("span", { class: "wf-ms" }, milliseconds(row.duration_ms) + (row.open ? " (unfinished)" : "")));
  });
  return el("div", { class: "panel", id: "timing" }, el("h2", {}, "Timing (phase tree)"), el("div", { class: "wf" }, rows));
}

// A sandbox attempt: what the agent changed, send window by send window, and every command that ran
// (its output already redacted and cut short when the attempt was sealed).
function fileChangesPanels(changes) {
  if (!changes) return [];
  const where = `${changes.provider || "sandbox"}${changes.isolation ? ` · ${changes.isolation}` : ""}${changes.kept ? ` · kept as ${changes.sandbox_id}` : ""}`;
  const windows = (changes.windows || []).map((window) => el("div", { class: "window", "data-window": window.window },
    el("h3", {}, `${window.window} — ${window.changes.length ? `${window.changes.length} file(s)` : "no changes"}`),
    window.changes.map((change) => el("div", { class: "file-change", "data-path": change.path },
      el("div", {}, el("span", { class: `change-status ${change.status}` }, change.status), " ", el("code", {}, change.path)),
      change.note ? el("p", { class: "muted" }, change.note) : null,
      change.lines ? el("pre", { class: "diff" }, change.lines.map((line) => el("span", { class: `diff-${line.kind}` }, line.text || " "))) : null))));
  const commands = (changes.commands || []).map((command) => el("tr", {},
    el("td", {}, command.phase || ""), el("td", {}, command.window || ""), el("td", {}, el("code", {}, command.command || "")),
    el("td", { class: "num" }, command.timed_out ? "timed out" : String(command.exit_code)),
    el("td", { class: "num" }, command.duration_seconds === undefined ? "" : `${Math.round(command.duration_seconds * 1000)}ms`),
    el("td", {}, command.stderr_tail || command.stdout_tail ? el("pre", {}, command.stderr_tail || command.stdout_tail) : "")));
  return [
    el("div", { class: "panel", id: "file-changes" },
      el("h2", {}, `File Changes (${changes.files_changed} file(s); ${where})`),
      changes.complete === false ? el("p", { class: "error" }, `Incomplete: ${changes.reason || ""}`) : null,
      windows.length ? windows : el("p", { class: "muted" }, "No send window changed the workspace.")),
    el("div", { class: "panel" }, el("h2", {}, "Commands run"),
      commands.length
        ? el("table", { id: "sandbox-commands" }, el("thead", {}, el("tr", {}, ["phase", "window", "command", "exit", "time", "output (tail)"].map((h) => el("th", {}, h)))), el("tbody", {}, commands))
        : el("p", { class: "muted", id: "sandbox-commands" }, "No commands ran.")),
  ];
}

function docDetail(unit) {
  const detail = unit.detail || {};
  const rowsOf = (items, columns) => el("table", { id: "findings" },
    el("thead", {}, el("tr", {}, columns.map((column) => el("th", {}, column)))),
    el("tbody", {}, items.map((item) => el("tr", {}, columns.map((column) => el("td", {}, column === "verdict" ? verdictBadge(String(item[column])) : pretty(item[column] === undefined ? "" : item[column])))))));
  const parts = [];
  if (detail.findings) parts.push(el("div", { class: "panel" }, el("h2", {}, `Findings (grade ${detail.grade})`), rowsOf(detail.findings, ["id", "kind", "severity", "verdict", "evidence"])));
  if (detail.judgements) {
    const columns = Array.from(new Set(detail.judgements.flatMap((item) => Object.keys(item))));
    parts.push(el("div", { class: "panel" }, el("h2", {}, "Judge verdicts"), rowsOf(detail.judgements, columns)));
  }
  if (detail.judgement) parts.push(el("div", { class: "panel" }, el("h2", {}, "Pairwise judgement"), el("pre", {}, pretty(detail.judgement))));
  if (detail.candidate) parts.push(el("div", { class: "panel" }, el("h2", {}, "Candidate"), el("pre", { id: "candidate" }, detail.candidate)));
  for (const [path, text] of Object.entries(detail.candidates || {})) parts.push(el("div", { class: "panel" }, el("h2", {}, `Candidate ${path}`), el("pre", {}, text || "")));
  return parts;
}

// Any unit's detail as it was recorded: its input and output, its scores or assertions as a table,
// the failure's text, and the rest as name/value rows (an imported run's units, say).
function genericDetail(unit) {
  const detail = { ...(unit.detail || {}) };
  const parts = [];
  const take = (name) => { const value = detail[name]; delete detail[name]; return value; };
  for (const [name, title] of [["input", "Input"], ["inputs", "Input"], ["prompt", "Prompt"], ["output", "Output"]]) {
    const value = take(name);
    if (value !== undefined && value !== null) parts.push(el("div", { class: "panel" }, el("h2", {}, title), el("pre", { class: "generic-text" }, typeof value === "string" ? value : pretty(value))));
  }
  for (const [name, title] of [["results", "Results"], ["metrics", "Metrics"], ["assertions", "Assertions"]]) {
    const rows = take(name);
    if (!Array.isArray(rows) || !rows.length) continue;
    const columns = Array.from(new Set(rows.flatMap((row) => Object.keys(row || {}))));
    parts.push(el("div", { class: "panel" }, el("h2", {}, title), el("table", { class: "generic-results" },
      el("thead", {}, el("tr", {}, columns.map((column) => el("th", {}, column)))),
      el("tbody", {}, rows.map((row) => el("tr", {}, columns.map((column) => el("td", {}, pretty(row[column] == null ? "" : row[column])))))))));
  }
  if (unit.details) parts.push(el("div", { class: "panel" }, el("h2", {}, "Details"), el("pre", {}, unit.details)));
  if (Object.keys(detail).length) parts.push(el("div", { class: "panel", id: "generic-detail" }, el("h2", {}, "Recorded"), keyValueTable(detail)));
  return parts;
}

const DETAIL_VIEWS = { video: videoDetail, agent: agentDetail, doc: docDetail };

// What a unit page shows below its title: expected and observed, the kind's drill-down, usage and
// artifacts (the label page shows the same, with the verdicts hidden until the person has answered).
function unitBody(unit) {
  const kindParts = (DETAIL_VIEWS[unit.kind] || genericDetail)(unit);
  const expectedAndObserved = unit.plain_expected === false ? null : el("div", { class: "grid" },
    el("div", { class: "panel" }, el("h2", {}, "Expected"), el("pre", { id: "unit-expected" }, pretty(unit.expected === undefined ? null : unit.expected))),
    el("div", { class: "panel" }, el("h2", {}, "Observed"), el("pre", { id: "unit-observed" }, pretty(unit.observed === undefined ? null : unit.observed))));
  return [
    expectedAndObserved,
    ...kindParts,
    el("div", { class: "grid" },
      el("div", { class: "panel" }, el("h2", {}, "Usage and cost"), keyValueTable({ ...(unit.usage || {}), cost_usd: unit.cost_usd, duration_seconds: unit.duration_seconds })),
      el("div", { class: "panel" }, el("h2", {}, "Artifacts"), keyValueTable(unit.artifacts || {}))),
  ].filter((node) => node !== undefined && node !== null && node !== false);
}

// A unit carried from an earlier run (nothing it depends on changed) repeats that run's verdict: said, with links to
// the run and the unit it came from, as `assay agent show` says "carried from run … (unit …)".
function carriedLine(unit) {
  const origin = unit.carried_from;
  if (!origin || typeof origin !== "object" || !origin.run_id) return null;
  const unitId = origin.unit_id || unit.unit_id;
  return el("p", { id: "carried-from", class: "muted" }, "Carried from run ",
    el("a", { href: runLink(origin.run_id) }, origin.run_id), " (unit ", el("a", { href: unitLink(origin.run_id, unitId) }, unitId),
    "): not run again in this run; the verdict is that run's.");
}

async function renderUnit(runId, unitId, params) {
  const unit = await api("unit", { run: runId, unit: unitId });
  crumbs(el("a", { href: "#/" }, "runs"), el("a", { href: runLink(unit.run_id) }, unit.run_id), unit.unit_id);
  show(
    el("h1", { id: "unit-title" }, unit.unit_id, " ", verdictBadge(unit.shown_verdict || unit.verdict)),
    unit.reason ? el("p", { id: "unit-reason" }, unit.reason) : null,
    carriedLine(unit),
    ...unitBody(unit),
  );
  // From the Traces page: straight to the waterfall.
  const target = params && params.at ? document.getElementById(params.at) : null;
  if (target) target.scrollIntoView();
}

// ---------------------------------------------------------------------------------------------
// Traces: the attempts of an agent run that received spans, a page at a time; each links to its waterfall

async function renderTraces(runId, params) {
  const offset = Number(params.offset || 0);
  const page = await api("traces", { run: runId, offset: params.offset || "0", limit: String(PAGE) });
  crumbs(el("a", { href: "#/" }, "runs"), el("a", { href: runLink(page.run_id) }, page.run_id), "traces");
  const rows = page.traces.map((trace) => el("tr", { "data-unit": trace.unit_id },
    el("td", { class: "mono" }, el("a", { href: unitLink(page.run_id, trace.unit_id) + "?at=waterfall" }, trace.unit_id)),
    el("td", {}, verdictBadge(trace.verdict)),
    el("td", { class: "num" }, trace.turns_with_spans === trace.turns ? trace.turns : `${trace.turns_with_spans} of ${trace.turns}`),
    el("td", { class: "num" }, trace.span_count), el("td", { class: "num" }, trace.counts.model), el("td", { class: "num" }, trace.counts.tool),
    el("td", { class: `num ${trace.errors ? "error" : ""}`, "data-errors": String(trace.errors) }, trace.errors),
    el("td", { class: "num" }, milliseconds(trace.duration_ms)),
    el("td", {}, trace.attributed_by + (trace.dropped ? ` · ${trace.dropped} dropped` : ""))));
  const last = Math.min(offset + PAGE, page.total);
  const navigate = (to) => go(["traces", page.run_id], { offset: String(to) });
  if (!page.has_traces) {  // not "no attempt received spans": the kind has no attempts to trace
    show(el("h1", {}, `Traces of ${page.run_id}`), el("p", { class: "muted", id: "traces-table" }, `Runs of kind ${page.kind} have no traces.`));
    return;
  }
  show(
    el("h1", {}, `Traces of ${page.run_id}`),
    page.total
      ? el("table", { id: "traces-table" }, el("thead", {}, el("tr", {}, ["attempt", "verdict", "turns", "spans", "model calls", "tools", "errors", "duration", "attributed by"].map((h) => el("th", {}, h)))), el("tbody", {}, rows))
      : el("p", { class: "muted", id: "traces-table" }, "No attempt of this run received spans (see docs/agent/traces.md)."),
    el("div", { class: "pager" },
      el("button", { disabled: offset === 0, onclick: () => navigate(previousOffset(offset, page.total)) }, "← previous"),
      el("span", { id: "traces-status" }, pageStatus(offset, page.total, "traced attempt(s)", "no traced attempts")),
      el("button", { disabled: last >= page.total, onclick: () => navigate(offset + PAGE) }, "next →")),
  );
}

// ---------------------------------------------------------------------------------------------
// Compare

const VERDICT_CLASS = { regressed: "bad", improved: "ok", unchanged: "ok", inconclusive: "warn" };

async function renderCompare(before, after, params) {
  const change = params.change || "regressions";
  const offset = Number(params.offset || 0);
  const result = await api("compare", { a: before, b: after, change, offset: params.offset || "0", limit: String(PAGE) });
  if (!params.change && !result.counts[change]) {
    // Opened without a tab and no regression: the first tab that has rows (fixes, say), not an empty table.
    const first = CHANGES.find(([name]) => result.counts[name]);
    if (first) return renderCompare(before, after, { ...params, change: first[0] });
  }
  crumbs(el("a", { href: "#/" }, "runs"), `compare ${result.before} → ${result.after}`);
  const navigate = (changes) => go(["compare", result.before, result.after], { change, ...changes });
  const difference = result.pass_rate_difference;
  const test = result.test;
  const tabs = el("div", { class: "tabs", id: "change-tabs" }, CHANGES.map(([name, label]) =>
    el("a", { href: address(["compare", result.before, result.after], { change: name }), class: name === change ? "active" : "", "data-change": name }, `${label} (${result.counts[name]})`)));
  const side = (value, runId, unitId) => (value
    ? el("td", {}, verdictBadge(value.verdict), " ", el("a", { href: unitLink(runId, unitId) }, "open"), el("div", { class: "cell", title: value.observed }, value.observed), el("div", { class: "muted" }, value.reason))
    : el("td", { class: "muted" }, "—"));
  const rows = result.rows.map((row) => el("tr", { "data-unit": row.unit_id },
    el("td", { class: "mono" }, row.unit_id), el("td", { class: "cell", title: row.expected }, row.expected),
    side(row.before, result.before, row.unit_id), side(row.after, result.after, row.unit_id)));
  const last = Math.min(offset + PAGE, result.total);
  show(
    el("h1", {}, "Compare"),
    el("div", { class: "grid" },
      el("div", { class: "panel" }, "before ", el("a", { href: runLink(result.before) }, result.before), el("div", { class: "muted" }, result.runs.before.title || "")),
      el("div", { class: "panel" }, "after ", el("a", { href: runLink(result.after) }, result.after), el("div", { class: "muted" }, result.runs.after.title || ""))),
    el("div", { class: "stats panel", id: "compare-stats" },
      el("div", { class: "stat" }, el("b", {}, `${percent(result.before_pass_rate)} → ${percent(result.after_pass_rate)}`), "pass rate"),
      el("div", { class: "stat" }, el("b", { id: "pass-rate-difference" }, difference === null ? "-" : `${(difference * 100).toFixed(1)} pts`), "difference"),
      el("div", { class: "stat" }, el("b", {}, `${result.paired.regressions} / ${result.paired.fixes}`), "regressions / fixes"),
      el("div", { class: "stat" }, el("b", { id: "p-value" }, test.p_value.toPrecision(3)), "McNemar exact p, all paired units"),
      el("div", { class: "stat" }, el("b", {}, `[${(test.interval[0] * 100).toFixed(1)}, ${(test.interval[1] * 100).toFixed(1)}]`), `${Math.round(test.confidence * 100)}% bootstrap interval (pts)`)),
    result.kinds_differ ? el("p", { id: "kinds-differ", class: "error" }, result.kinds_differ) : null,
    // The verdict sentence comes from the same Python function `assay runs compare` prints.
    el("p", { id: "verdict", class: `panel sig ${VERDICT_CLASS[result.verdict] || ""}`, "data-verdict": result.verdict, "data-regression": String(result.regression) }, result.sentence),
    result.why ? el("p", { id: "verdict-why", class: "muted" }, result.why) : null,
    // The model judges behind the changes and what people's labels say of each, as `assay runs compare` prints them.
    result.judges_behind ? el("div", { id: "judges-behind", class: "panel" }, el("b", {}, result.judges_behind[0]),
      el("ul", {}, result.judges_behind.slice(1).map((line) => el("li", {}, line.trim()))),
      el("a", { href: "#/agreement" }, "judge–human agreement")) : null,
    tabs,
    el("table", { id: "compare-table" }, el("thead", {}, el("tr", {}, ["unit", "expected", "before", "after"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
    el("div", { class: "pager" },
      el("button", { disabled: offset === 0, onclick: () => navigate({ offset: previousOffset(offset, result.total) }) }, "← previous"),
      el("span", { id: "compare-status" }, pageStatus(offset, result.total, "unit(s)", "no units")),
      el("button", { disabled: last >= result.total, onclick: () => navigate({ offset: String(offset + PAGE) }) }, "next →")),
  );
}

// ---------------------------------------------------------------------------------------------
// Trend: one chart per group, the pass rate over runs with its 95% Wilson band

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

// When a run of the series was made, for the x axis: its date, and the time of day when the first and
// the last run of the series share a date.
function runWhen(createdAt, withTime) {
  const text = String(createdAt || "");
  const date = text.slice(0, 10);
  return withTime && text.length >= 16 ? `${date} ${text.slice(11, 16)}` : date;
}

// The chart's axes are labelled: y is the pass rate (0%, 50%, 100%), x the runs of the series, oldest
// first, the first and last named by their number and date; the same is said in the chart's accessible name.
function trendChart(points, name) {
  const width = 320, height = 150, left = 44, right = 10, top = 8, bottom = 40;
  const plotBottom = height - bottom;
  const x = (index) => left + (points.length < 2 ? (width - left - right) / 2 : (index * (width - left - right)) / (points.length - 1));
  const y = (rate) => top + (1 - rate) * (plotBottom - top);
  const judged = points.map((point, index) => ({ ...point, index })).filter((point) => point.pass_rate !== null);
  const first = points[0], last = points[points.length - 1];
  const withTime = points.length > 1 && runWhen(first.created_at) === runWhen(last.created_at);
  const runLabel = (index) => `#${index + 1} · ${runWhen(points[index].created_at, withTime)}`;
  const span = !points.length ? "no runs" : points.length === 1 ? `1 run (${runLabel(0)})` : `${points.length} runs, oldest first (${runLabel(0)} to ${runLabel(points.length - 1)})`;
  const latest = last && last.pass_rate !== null ? `; latest ${percent(last.pass_rate)}` : "";
  const label = `${name}: pass rate (y axis, 0% to 100%) over ${span} (x axis)${latest}`;
  const xTitle = points.length === 1 ? "run" : `runs, oldest → newest (${points.length})`;
  const chart = svg("svg", { class: "trend-chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": label },
    svg("title", {}, label),
    svg("desc", {}, points.map((point, index) => `${runLabel(index)} ${point.run_id}: ${point.pass_rate === null ? "n/a" : `${percent(point.pass_rate)} (${point.passed}/${point.passed + point.failed})`}`).join("; ")),
    ...[0, 0.5, 1].map((rate) => svg("line", { x1: left, x2: width - right, y1: y(rate), y2: y(rate), class: "trend-grid" })),
    ...[0, 0.5, 1].map((rate) => svg("text", { x: left - 4, y: y(rate) + 3, "text-anchor": "end", class: "trend-axis trend-y-tick", "data-rate": String(rate) }, `${rate * 100}%`)),
    svg("text", { class: "trend-axis-title trend-y-title", x: 0, y: 0, "text-anchor": "middle", transform: `translate(11 ${(top + plotBottom) / 2}) rotate(-90)` }, "pass rate"),
    ...points.map((point, index) => svg("line", { class: "trend-x-mark", x1: x(index), x2: x(index), y1: plotBottom, y2: plotBottom + 4 })),
    svg("text", { class: "trend-axis-title trend-x-title", x: (left + width - right) / 2, y: height - 4, "text-anchor": "middle" }, xTitle));
  // The first and the last run of the series under the axis (one run: under its point).
  const ends = points.length === 1 ? [[0, "middle"]] : points.length ? [[0, "start"], [points.length - 1, "end"]] : [];
  for (const [index, anchor] of ends) {
    chart.append(svg("text", { class: "trend-axis trend-x-tick", x: anchor === "start" ? x(index) - 4 : anchor === "end" ? x(index) + 4 : x(index), y: plotBottom + 15,
      "text-anchor": anchor, "data-run": points[index].run_id }, runLabel(index)));
  }
  if (judged.length) {
    const upper = judged.map((point) => `${x(point.index)},${y(point.interval[1])}`);
    const lower = judged.slice().reverse().map((point) => `${x(point.index)},${y(point.interval[0])}`);
    chart.append(svg("polygon", { class: "trend-band", points: [...upper, ...lower].join(" ") }));
    chart.append(svg("polyline", { class: "trend-line", points: judged.map((point) => `${x(point.index)},${y(point.pass_rate)}`).join(" ") }));
    for (const point of judged) {
      chart.append(svg("circle", { class: "trend-point", cx: x(point.index), cy: y(point.pass_rate), r: 3, "data-run": point.run_id },
        svg("title", {}, `${point.run_id}: ${percent(point.pass_rate)} [${percent(point.interval[0])}, ${percent(point.interval[1])}], ${point.passed}/${point.passed + point.failed}`)));
    }
  }
  // A run that judged none of these units (all carried from earlier runs, skipped or ignored) has no rate:
  // it is marked where its point would be and said why, as `assay runs trend` says it, not left out silently.
  points.forEach((point, index) => {
    if (point.pass_rate !== null) return;
    chart.append(svg("text", { class: "trend-none", x: x(index), y: plotBottom - 4, "text-anchor": "middle", "data-run": point.run_id }, "n/a",
      svg("title", {}, `${point.run_id}: ${NOT_JUDGED}`)));
  });
  if (!judged.length) {
    chart.append(svg("text", { class: "trend-empty", x: (left + width - right) / 2, y: y(0.5) - 6, "text-anchor": "middle" },
      points.length === 1 ? "no unit judged in this run" : "no unit judged in these runs"));
  }
  return chart;
}

const NOT_JUDGED = "no unit judged (each was carried from an earlier run, skipped or ignored)";

async function renderTrend(runId) {
  const trend = await api("trend", { run: runId });
  crumbs(el("a", { href: "#/" }, "runs"), el("a", { href: runLink(trend.run_id) }, trend.run_id), "trend");
  const panel = (name, points, flaky, count) => el("div", { class: "panel trend", "data-group": name },
    el("h2", {}, name),
    trendChart(points, name),
    count ? el("p", { class: "flaky-units" }, el("b", {}, `${count} flaky: `), flaky.join(", "), count > flaky.length ? " …" : "") : el("p", { class: "muted" }, "no flaky unit"));
  show(
    el("h1", {}, "Trend"),
    el("p", { class: "muted" }, `${trend.kind} · the last ${trend.runs.length} run(s) of this run's series, oldest first; the band is the 95% Wilson interval; flaky units are units whose verdicts disagree over these runs (assay runs trend, assay runs flaky).`),
    el("div", { class: "grid", id: "trend-charts" },
      panel("all units", trend.whole, trend.flaky || [], trend.flaky_count || 0),
      ...trend.groups.map((group) => panel(group.group || "-", group.points, group.flaky, group.flaky_count))),
    trend.groups_total > trend.groups.length ? el("p", { class: "muted" }, `${trend.groups.length} of ${trend.groups_total} groups shown (the least reliable first)`) : null,
  );
}

// ---------------------------------------------------------------------------------------------
// Router

async function runsNotExported(parts) {
  // A static export holds the runs on its first page: a run id it lacks (a typo, a run exported elsewhere)
  // is named as such rather than as a view left out of the export.
  const named = parts[0] === "compare" ? parts.slice(1, 3) : ["run", "unit", "traces", "trend"].includes(parts[0]) ? parts.slice(1, 2) : [];
  if (!named.length) return null;
  let listing;
  try { listing = await loadStatic(apiKey("runs", { limit: "500" })); } catch { return null; }
  const ids = listing.runs.map((run) => run.run_id);  // newest first, as `latest~N` counts them
  const held = new Set(ids);
  const missing = named.filter((id) => !held.has(id));
  if (!missing.length) return await viewNotExported(parts, listing);
  // The start of one run's id, `latest` or `latest~N` (as the live viewer and `assay runs show` take them):
  // the page of that run.
  const matching = (reference) => {
    const latest = /^latest(?:~(\d+))?$/.exec(reference);
    if (latest) return ids.slice(Number(latest[1] || 0), Number(latest[1] || 0) + 1);
    return ids.filter((runId) => runId.startsWith(reference));
  };
  const full = new Map(missing.map((id) => [id, matching(id)]));
  if ([...full.values()].every((matches) => matches.length === 1)) {
    const runParts = parts[0] === "compare" ? [1, 2] : [1];
    const whole = parts.map((part, index) => (runParts.includes(index) && full.has(part) ? full.get(part)[0] : part));
    return { address: "#/" + whole.map(encodeURIComponent).join("/") };
  }
  return `No run ${missing.map((id) => `'${id}'`).join(" or ")} in this export: it holds the ${held.size} run(s) listed on its first page.`;
}

// How many units of each run (and of its failing ones) a static export holds; the live viewer (or an export made
// before it said so) has no such limit.
let exportFacts = null;  // read once: the units table and the "not in this export" message both ask
function exportedUnits() {
  if (!STATIC) return Promise.resolve(Infinity);
  exportFacts = exportFacts || loadStatic(apiKey("export", {})).then((facts) => facts.units_per_run, () => Infinity);
  return exportFacts;
}

// A compare of two runs the export holds that it left out: said with the compare it does hold (two runs picked
// on the runs page and compared read "This view is not included in the export.", with nothing more). A unit
// page it lacks: a unit of a run it holds whole is one the run never had (a typo), said in the live viewer's words.
async function viewNotExported(parts, listing) {
  if (parts[0] === "run") {  // a page of units past the ones it holds: "next →" (or an address) led there, said as such
    const held = await exportedUnits();
    if (Number(parseHash().params.offset || 0) >= held) {
      return `This export holds the first ${held} units of each run (and its first ${held} failing ones); \`assay view\` shows them all.`;
    }
  }
  if (parts[0] === "unit") {
    let facts;
    try { facts = await loadStatic(apiKey("export", {})); } catch { return null; }  // an export made before
    const run = listing.runs.find((held) => held.run_id === parts[1]);
    const unit = parts.slice(2).join("/");
    if (run.unit_count <= facts.units_per_run) return `run ${run.run_id} has no unit '${unit}'`;
    return `Unit '${unit}' is not in this export: it holds the first ${facts.units_per_run} units of each run and its failing ones; \`assay view\` shows any unit.`;
  }
  if (parts[0] === "compare" && parts[1] === parts[2]) {  // in the live viewer's words
    return `both references name the run ${parts[1]}; a run compared with itself has no changes: give two different runs`;
  }
  if (parts[0] === "compare") {
    const after = listing.runs.find((run) => run.run_id === parts[2]);
    const older = listing.runs.slice(listing.runs.indexOf(after) + 1).find((run) => run.kind === after.kind);
    if (older && older.run_id === parts[1]) return null;  // the compare it holds, at a page it left out
    const held = older ? ` (here: ${older.run_id} → ${after.run_id})` : "";
    return `This export holds the compare of each run with the run of its kind before it${held}, not ${parts[1]} → ${parts[2]}; \`assay view\` compares any two runs.`;
  }
  return null;
}

async function route() {
  const { parts, params } = parseHash();
  try {
    if (parts[0] === "run" && parts[1]) await renderRun(parts[1], params);
    else if (parts[0] === "unit" && parts[2]) await renderUnit(parts[1], parts.slice(2).join("/"), params);
    else if (parts[0] === "compare" && parts[2]) await renderCompare(parts[1], parts[2], params);
    else if (parts[0] === "traces" && parts[1]) await renderTraces(parts[1], params);
    else if (parts[0] === "trend" && parts[1]) await renderTrend(parts[1]);
    else if (typeof PAGES !== "undefined" && PAGES[parts[0]]) await PAGES[parts[0]](parts.slice(1), params);  // labels.js
    else if (parts.length === 0) await renderRuns(params);
    else {
      // An address this viewer has no page for (a link cut short, a typo): said, with where to go instead.
      const pages = { run: "#/run/RUN", unit: "#/unit/RUN/UNIT", compare: "#/compare/BEFORE/AFTER", traces: "#/traces/RUN", trend: "#/trend/RUN" };
      const expected = pages[parts[0]];
      throw new Error(expected
        ? `#/${parts.join("/")} is not a whole address: this page's is ${expected}. The runs list links to every page.`
        : `this viewer has no page #/${parts.join("/")}. The runs list links to every page.`);
    }
  } catch (error) {
    // The top bar of the page before would name a run or unit this error is not about.
    crumbs(el("a", { href: "#/" }, "runs"));
    document.title = "Not shown · assay";
    const found = error.notExported ? await runsNotExported(parts) : null;
    if (found && found.address) {
      location.replace(found.address + (location.hash.includes("?") ? location.hash.slice(location.hash.indexOf("?")) : ""));
      return;  // the hash change renders the whole id's page
    }
    show(el("p", { class: "error", id: "view-error" }, found || error.message || String(error)));
  }
  document.body.dataset.ready = "true";
}

document.getElementById("mode-note").textContent = STATIC ? "static export" : "live · 127.0.0.1";
window.addEventListener("hashchange", () => { document.body.dataset.ready = "false"; route(); });
route();
