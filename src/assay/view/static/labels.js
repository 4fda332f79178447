// assay results viewer: label mode (#/label, live with `assay view --label`) and judge–human agreement
// (#/agreement). Loaded before app.js, whose helpers (el, api, show, unitBody, …) it uses when called;
// app.js routes the pages registered in PAGES.
"use strict";

const PAGES = { label: (parts, params) => renderLabel(params), agreement: (parts, params) => renderAgreement(params) };

// ---------------------------------------------------------------------------------------------
// Label mode: one unit at a time from a queue; the keyboard does everything

const LABEL_HELP = "j / → next · k / ← previous · p pass · f fail · 1–5 score · n note (Enter saves) · s skip";
// A note written on a unit not answered yet (or whose label could not be saved) waits here, by run and unit, until
// an answer saves it with the label: moving on and coming back, or reloading the tab, does not lose it. Kept in the
// tab's sessionStorage (in memory where the browser refuses it, e.g. full or disabled).
const noteDrafts = (() => {
  const memory = new Map();
  const prefix = "assay-label-note\n";
  const stored = () => { try { return window.sessionStorage; } catch (_) { return null; } };
  return {
    has: (key) => memory.has(key) || stored()?.getItem(prefix + key) != null,
    get: (key) => (memory.has(key) ? memory.get(key) : stored()?.getItem(prefix + key) ?? undefined),
    set: (key, value) => {
      try { stored().setItem(prefix + key, value); memory.delete(key); } catch (_) { memory.set(key, value); }
    },
    delete: (key) => { memory.delete(key); try { stored().removeItem(prefix + key); } catch (_) { /* nothing kept there */ } },
  };
})();
const draftKey = (item) => `${item.run_id}\n${item.unit_id}`;

const label = {
  active: false,
  session: null,
  queue: null,       // { queue, total, labelled, start }
  index: 0,
  hide: true,        // the judge's verdict stays hidden until the person has answered
  item: null,
  items: new Map(),  // index -> item (prefetched, or already shown)
  saved: 0,
  pending: 0,
  params: {},
};

function labelRequestParams(params) {
  return { scope: params.scope || "all", filter: params.filter || "all", seed: params.seed, sample: params.sample,
    unlabeled_first: params.unlabeled_first === "0" ? "0" : "1" };
}

// The server shows a unit's verdicts once this labeller has answered it (or when the judge is not hidden).
async function fetchItem(index) {
  const item = await api("label/item", { queue: label.queue.queue, index: String(index), reveal: label.hide ? "0" : "1" });
  label.items.set(index, item);
  return item;
}

function itemAt(index) {
  return label.items.get(index) || fetchItem(index);
}

function prefetch(index) {
  if (index >= 0 && index < label.queue.total && !label.items.has(index)) {
    // A prefetch that fails is forgotten, and whoever waits on it sees the failure (not a unit that is `true`);
    // a copy loaded since (by a move or a refresh) is kept.
    const pending = fetchItem(index).catch((error) => {
      if (label.items.get(index) === pending) label.items.delete(index);
      throw error;
    });
    pending.catch(() => {});
    label.items.set(index, pending);
  }
}

// A unit shown from what the page loaded before may have been labelled since (in another tab, or in another
// window under the same name): it is read again, and drawn again when the label the store has differs.
async function refresh(index, shown) {
  const before = shown.mine;
  let fresh;
  try {
    fresh = await fetchItem(index);
  } catch {
    return;  // a stopped viewer is said when the person saves or moves
  }
  const id = (mine) => (mine ? mine.label_id || null : null);
  if (label.index !== index || label.item !== shown || shown.answering || shown.mine !== before) return;
  if (id(fresh.mine) === id(shown.mine)) return;
  const writing = document.activeElement && document.activeElement.id === "label-note";
  renderItem(fresh);
  if (writing) document.getElementById("label-note").focus();
}

function labelStatus() {
  const status = document.getElementById("label-status");
  if (!status) return;
  status.textContent = `unit ${label.index + 1} of ${label.queue.total} · ${label.queue.labelled} labelled by you before this page · `
    + `${label.saved} saved now${label.pending ? ` · saving ${label.pending}…` : ""}`;
  status.dataset.saved = String(label.saved);
  status.dataset.pending = String(label.pending);
}

function judgePanel(item) {
  if (!item.revealed) {
    return el("div", { class: "panel", id: "judge-panel", "data-hidden": "true" }, el("h2", {}, "Judge"),
      el("p", { class: "muted" }, "The judge's verdict and reason are hidden until you answer (uncheck “hide the judge” to see them first)."));
  }
  const rows = item.judgements.map((judgement) => el("tr", { "data-judge": judgement.judge },
    el("td", { class: "mono" }, judgement.judge), el("td", {}, judgement.verdict ? verdictBadge(judgement.verdict) : "no verdict"),
    el("td", { class: "num" }, judgement.score === null ? "" : String(judgement.score)), el("td", {}, judgement.reason || "")));
  const others = item.others.map((other) => el("li", {}, `${other.labeller}: `, other.verdict ? verdictBadge(other.verdict) : "",
    other.score ? ` score ${other.score}` : "", other.note ? ` — ${other.note}` : ""));
  return el("div", { class: "panel", id: "judge-panel", "data-hidden": "false" }, el("h2", {}, "Judge"),
    rows.length
      ? el("table", { id: "judge-verdicts" }, el("thead", {}, el("tr", {}, ["judge", "verdict", "score", "reason"].map((h) => el("th", {}, h)))), el("tbody", {}, rows))
      : el("p", { class: "muted" }, "No model judge graded this unit."),
    el("p", {}, "Deterministic checks: ", item.checks ? verdictBadge(item.checks) : "none", " · recorded verdict ", verdictBadge(item.verdict),
      item.reason ? ` — ${item.reason}` : ""),
    others.length ? el("div", {}, el("b", {}, "Other labellers"), el("ul", { id: "other-labels" }, others)) : null);
}

function answerBar(item) {
  const mine = item.mine || {};
  const button = (text, answer, pressed) => el("button", { class: `answer${pressed ? " chosen" : ""}`, "data-answer": answer,
    onclick: () => answerWith(answer) }, text);
  const note = el("textarea", { id: "label-note", rows: "2", placeholder: "Note (n to write, Enter to save, Esc to leave)", "aria-label": "Note" });
  note.value = noteDrafts.has(draftKey(item)) ? noteDrafts.get(draftKey(item)) : mine.note || "";
  note.addEventListener("input", () => noteDrafts.set(draftKey(item), note.value));
  note.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      note.blur();
      if (item.mine) save(item, { verdict: item.mine.verdict, score: item.mine.score });
      else document.getElementById("your-label").textContent = "note kept: answer (p, f or 1–5) to save it with your label";
    } else if (event.key === "Escape") {
      note.blur();
    }
  });
  return el("div", { class: "panel answer-bar", id: "answer-bar" },
    el("div", { class: "answers" }, button("pass (p)", "p", mine.verdict === "pass"), button("fail (f)", "f", mine.verdict === "fail"),
      [1, 2, 3, 4, 5].map((score) => button(String(score), String(score), mine.score === score)),
      button("skip (s)", "s", false)),
    // The keys' moves as buttons too: on a phone (no keyboard) `j` was the only way on from an answered unit.
    el("div", { class: "answers moves" },
      el("button", { id: "label-previous", disabled: item.index === 0, onclick: () => showIndex(label.index - 1) }, "← previous (k)"),
      el("button", { id: "label-next", disabled: item.index >= label.queue.total - 1, onclick: () => showIndex(label.index + 1) }, "next (j) →")),
    note,
    el("div", { class: "muted", id: "your-label", "data-verdict": mine.verdict || "", "data-score": mine.score ? String(mine.score) : "" },
      item.mine ? `your label: ${mine.verdict || "-"}${mine.score ? `, score ${mine.score}` : ""}`
        + (item.mine_through ? ` (given to the same content: ${item.mine_through.unit_id} in ${item.mine_through.run_id})` : "")
        + (item.revealed ? " · j / → for the next unit" : "")
        : "not labelled by you yet"));
}

function renderItem(item) {
  label.item = item;
  const container = document.getElementById("label-item");
  // replaceChildren writes a null as the text "null": optional parts are left out instead.
  container.replaceChildren(...[
    el("h2", { id: "label-unit" }, el("a", { href: unitLink(item.run_id, item.unit_id), class: "mono" }, item.unit_id),
      el("span", { class: "muted" }, ` · ${item.kind} · ${item.run_id}`)),
    el("p", { class: "question", id: "label-question" }, item.question),
    item.rubrics.length ? el("div", { class: "panel", id: "label-rubrics" }, el("h2", {}, "Rubric"), el("ul", {}, item.rubrics.map((rubric) => el("li", {}, rubric)))) : null,
    answerBar(item),
    judgePanel(item),
    ...unitBody(item.unit),
  ].filter((node) => node !== null && node !== undefined));
  container.dataset.index = String(item.index);
  container.dataset.unit = item.unit_id;
  container.dataset.run = item.run_id;
  container.dataset.revealed = String(item.revealed);
  labelStatus();
}

// A note edited on an answered unit and left without Enter is saved with that label as the person moves on.
function keepNote() {
  const item = label.item;
  const box = document.getElementById("label-note");
  if (item && item.mine && box && box.value !== (item.mine.note || "")) save(item, { verdict: item.mine.verdict, score: item.mine.score });
}

async function showIndex(index, startedAt) {
  if (!label.queue.total) return;
  keepNote();
  index = Math.max(0, Math.min(label.queue.total - 1, index));
  label.index = index;
  const loaded = label.items.get(index);
  let item;
  try {
    item = await itemAt(index);
  } catch (error) {
    if (String(error.message).includes("no longer kept")) { route(); return; }  // a restarted server: build the queue again
    if (!label.item) throw error;
    // The unit on screen stays, and the queue stays at it: `j` asks for the same unit again, none is skipped.
    if (label.index === index) {
      label.index = label.item.index;
      labelError(`Unit ${index + 1} could not be shown: ${failure(error)}.`);
      labelStatus();
    }
    return;
  }
  if (label.index !== index) return;  // the person moved on while it loaded
  renderItem(item);
  if (loaded && !(loaded instanceof Promise)) refresh(index, item);
  // Where the queue stands is in the address, so a reload resumes here.
  const params = { ...label.params, run: item.run_id, unit: item.unit_id };
  history.replaceState(null, "", "#/label?" + new URLSearchParams(Object.entries(params).filter(([, value]) => value !== undefined && value !== null && value !== "")));
  if (startedAt !== undefined) {
    requestAnimationFrame(() => { document.getElementById("label-item").dataset.renderMs = (performance.now() - startedAt).toFixed(1); });
  }
  prefetch(index + 1);
  prefetch(index - 1);
}

function labelError(text) {
  const errors = document.getElementById("label-errors");
  if (errors) errors.append(el("li", {}, text));
}

// What went wrong, in words that say what to do: a fetch that reached no server throws a TypeError.
function failure(error) {
  return error instanceof TypeError ? "the viewer is not answering (stopped? start it again)" : error.message || String(error);
}

async function putLabel(body) {
  const response = await fetch("api/label", {
    method: "PUT",
    headers: { "content-type": "application/json", [label.session.write_token_header]: label.session.write_token },
    body: JSON.stringify(body),
  });
  return { response, answer: await response.json().catch(() => null) };
}

// Saves a label; true once the store has it. One that is not saved is said, the unit goes back to showing the
// label the store has (so the same key records it again), and the note stays in its box.
async function save(item, answer, previous) {
  const body = { run_id: item.run_id, unit_id: item.unit_id, verdict: answer.verdict || null, score: answer.score || null,
    note: (document.getElementById("label-note") || {}).value || "" };
  label.pending += 1;
  labelStatus();
  // (the server's limit, from the session; a note past it was refused as "at most 64 KiB", the request's size)
  const tooLong = () => new Error(`the note is too long (${body.note.length.toLocaleString("en")} characters; a note holds at most ${label.session.max_note_characters.toLocaleString("en")}): shorten it`);
  try {
    if (body.note.length > label.session.max_note_characters) throw tooLong();
    let { response, answer: stored } = await putLabel(body);
    const code = stored && stored.error ? stored.error.code : null;
    if (code === "invalid_write_token") {
      // The viewer was started again on this port (`--port`): its new token is read, as a reload would read it.
      const session = await api("label/session", {});
      if (session.labeller !== label.session.labeller) {
        throw new Error(`the viewer was started again to label as ${session.labeller}, not ${label.session.labeller}: reload the page`);
      }
      label.session = session;
      ({ response, answer: stored } = await putLabel(body));
    }
    if (response.status === 413) throw tooLong();
    if (!response.ok) throw new Error(stored && stored.error ? stored.error.message : `HTTP ${response.status}`);
    item.mine = stored;
    if (noteDrafts.get(draftKey(item)) === body.note) noteDrafts.delete(draftKey(item));
    label.saved += 1;
    return true;
  } catch (error) {
    item.mine = previous === undefined ? item.mine : previous;
    noteDrafts.set(draftKey(item), body.note);
    labelError(`Label of ${item.unit_id} not saved: ${failure(error)}. Nothing is lost: the note stays in its box; answer again to save it.`);
    if (label.item === item && document.getElementById("answer-bar")) document.getElementById("answer-bar").replaceWith(answerBar(item));
    return false;
  } finally {
    label.pending -= 1;
    labelStatus();
  }
}

// A label key records an answer; the judge's verdict shows once the person has answered (`j` then moves
// on). On a unit the person has answered already, a key never moves on: one that adds to the label or
// changes it (a score after a verdict) records the new label and stays; one that repeats the label
// (pressed twice, or pressed to go on) records nothing. A key pressed while an answer of the unit is
// still being saved is ignored too. With the judge shown from the start, a first answer moves on.
async function answerWith(key, startedAt) {
  const item = label.item;
  if (!item) return;
  if (key === "s") { await showIndex(label.index + 1, startedAt); return; }
  if (item.answering) return;
  const mine = item.mine || {};
  const answer = { verdict: mine.verdict || null, score: mine.score || null };
  if (key === "p" || key === "f") answer.verdict = key === "p" ? "pass" : "fail";
  else answer.score = Number(key);
  if (item.mine && answer.verdict === (mine.verdict || null) && answer.score === (mine.score || null)) return;
  const first = !item.mine;
  const previous = item.mine;
  item.mine = { ...mine, ...answer, labeller: label.session.labeller };  // shown at once; the store's copy replaces it
  item.answering = true;
  try {
    const saving = save(item, answer, previous);
    if (!item.revealed) {
      // Answered: now the judge's verdict (and the unit's) can be shown; the person moves on with j.
      if (!(await saving)) return;
      let revealed;
      try {
        revealed = await fetchItem(item.index);
      } catch (error) {
        if (String(error.message).includes("no longer kept")) { route(); return; }  // the viewer was started again
        labelError(`The judge of ${item.unit_id} could not be shown: ${failure(error)}.`);
        return;
      }
      if (label.index === item.index) renderItem(revealed);
    } else if (first) {
      await showIndex(label.index + 1, startedAt);
    } else {
      if (label.item === item) document.getElementById("answer-bar").replaceWith(answerBar(item));
      await saving;
      if (label.item === item) document.getElementById("answer-bar").replaceWith(answerBar(item));
    }
  } finally {
    item.answering = false;
  }
}

document.addEventListener("keydown", (event) => {
  if (!label.active || !label.item || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.tagName === "SELECT")) return;
  const startedAt = event.timeStamp;  // the time origin performance.now() counts from
  const key = event.key;
  if (key === "j" || key === "ArrowRight") showIndex(label.index + 1, startedAt);
  else if (key === "k" || key === "ArrowLeft") showIndex(label.index - 1, startedAt);
  else if (key === "p" || key === "f" || key === "s" || ["1", "2", "3", "4", "5"].includes(key)) answerWith(key, startedAt);
  else if (key === "n") document.getElementById("label-note").focus();
  else return;
  event.preventDefault();
});

window.addEventListener("hashchange", () => { label.active = parseHash().parts[0] === "label"; });
// Back in this tab after labelling in another: the unit on screen shows the label the store has now.
document.addEventListener("visibilitychange", () => {
  // The unit on screen, not the one a move is still loading (the queue's index is already that one's).
  if (document.visibilityState === "visible" && label.active && label.item && !STATIC) refresh(label.item.index, label.item);
});

function queueForm(params, runs) {
  const scope = el("select", { id: "label-scope", "aria-label": "Runs" }, el("option", { value: "all" }, "all runs"),
    runs.map((run) => el("option", { value: run.run_id, selected: params.scope === run.run_id }, `${run.run_id} (${run.kind}, ${run.unit_count} units)`)));
  const filter = el("select", { id: "label-filter", "aria-label": "Units" },
    [["all", "every unit"], ["judged", "judge-graded units"], ["disagree", "judges (or judge and checks) disagree"]]
      .map(([value, text]) => el("option", { value, selected: (params.filter || "all") === value }, text)));
  const seed = el("input", { id: "label-seed", type: "number", min: "0", placeholder: "random seed", value: params.seed || "" });
  const sample = el("input", { id: "label-sample", type: "number", min: "1", placeholder: "sample size", value: params.sample || "" });
  const unlabeled = el("input", { id: "label-unlabeled-first", type: "checkbox", checked: params.unlabeled_first !== "0" });
  const hide = el("input", { id: "label-hide-judge", type: "checkbox", checked: params.hide !== "0" });
  const start = () => go(["label"], { scope: scope.value, filter: filter.value, seed: seed.value, sample: sample.value,
    unlabeled_first: unlabeled.checked ? "" : "0", hide: hide.checked ? "" : "0" });
  return el("div", { class: "filters", id: "label-form" }, scope, filter, seed, sample,
    el("label", {}, unlabeled, " unlabeled first"), el("label", {}, hide, " hide the judge until I answer"),
    el("button", { id: "label-start", onclick: start }, "Start"));
}

async function renderLabel(params) {
  label.active = true;
  crumbs(el("a", { href: "#/" }, "runs"), "label");
  if (STATIC) {
    show(el("h1", {}, "Label"), el("p", { class: "muted", id: "label-unavailable" }, "Labels are recorded in the live viewer: run `assay view --label`."));
    return;
  }
  try {
    label.session = await api("label/session", {});
  } catch (error) {
    show(el("h1", {}, "Label"), el("p", { class: "muted", id: "label-unavailable" }, "This viewer is read-only: start it with `assay view --label [--as NAME]` to record labels."));
    return;
  }
  label.params = { ...labelRequestParams(params), hide: params.hide };
  label.hide = params.hide !== "0";
  label.items = new Map();
  label.saved = 0;
  label.item = null;
  const [queued, runs] = await Promise.all([
    api("label/queue", { ...labelRequestParams(params), at_run: params.run, at_unit: params.unit }).catch((error) => ({ refused: error })),
    api("runs", { limit: "200" }),
  ]);
  if (queued.refused) {
    // A setting the server refuses (a sample size of 0, a run no longer in the store): said above the queue's
    // controls, so it can be corrected there, instead of a page holding only the error.
    label.queue = { total: 0 };
    show(
      el("h1", {}, `Label as ${label.session.labeller}`),
      queueForm(params, runs.runs),
      el("p", { class: "error", id: "label-refused" },
        `No queue for these settings: ${queued.refused.message || queued.refused}. Change them above and press Start.`),
    );
    return;
  }
  const queue = queued;
  label.queue = queue;
  show(
    el("h1", {}, `Label as ${label.session.labeller}`),
    queueForm(params, runs.runs),
    el("p", { class: "muted", id: "label-help" }, LABEL_HELP),
    queue.not_found ? el("p", { class: "error", id: "label-not-found" },
      `Unit ${queue.not_found.unit} of run ${queue.not_found.run} is not in this queue (a typo in the address, or `
      + "another scope or filter): starting at the first unit to label.") : null,
    el("p", { id: "label-status" }),
    el("ul", { class: "error", id: "label-errors" }),
    queue.total ? el("div", { id: "label-item" }) : el("p", { class: "muted", id: "label-empty" }, "No unit matches this queue."),
  );
  await showIndex(queue.start);
}

// ---------------------------------------------------------------------------------------------
// Agreement: each judge against the human labels, between labellers, and over judge models

const fixed = (value, digits = 2) => (value === null || value === undefined ? "-" : value.toFixed(digits));

function intervalText(interval) {
  return interval ? ` [${fixed(interval[0])}, ${fixed(interval[1])}]` : "";
}

function confusionTable(binary) {
  const [[pp, pf], [fp, ff]] = binary.confusion.matrix;
  return el("table", { class: "confusion" },
    el("thead", {}, el("tr", {}, el("th", {}, "human \\ judge"), el("th", {}, "pass"), el("th", {}, "fail"))),
    el("tbody", {}, el("tr", {}, el("th", {}, "pass"), el("td", { class: "num" }, pp), el("td", { class: "num" }, pf)),
      el("tr", {}, el("th", {}, "fail"), el("td", { class: "num" }, fp), el("td", { class: "num" }, ff))));
}

async function renderAgreement(params) {
  label.active = false;
  crumbs(el("a", { href: "#/" }, "runs"), "agreement");
  const input = (id, name, placeholder) => el("input", { id, type: "search", placeholder, value: params[name] || "" });
  const judge = input("agreement-judge", "judge", "judge model");
  const rubric = input("agreement-rubric", "rubric", "rubric contains");
  const labeller = input("agreement-labeller", "labeller", "labeller");
  const apply = () => go(["agreement"], { judge: judge.value, rubric: rubric.value, labeller: labeller.value });
  for (const box of [judge, rubric, labeller]) box.addEventListener("keydown", (event) => { if (event.key === "Enter") apply(); });
  let report;
  try {
    report = await api("agreement", STATIC ? {} : { judge: params.judge, rubric: params.rubric, labeller: params.labeller });
  } catch (error) {
    // A filter that matches nothing (a typo) is refused with the names that would match: said above the
    // filters, so they can be corrected, instead of a page that reads as if nobody had labelled anything.
    if (STATIC || !(params.judge || params.rubric || params.labeller)) throw error;
    show(el("h1", {}, "Judge–human agreement"), el("div", { class: "filters" }, judge, rubric, labeller, el("button", { onclick: apply }, "Filter")),
      el("p", { class: "error", id: "agreement-refused" }, error.message || String(error)));
    return;
  }
  const rows = report.judges.map((row) => {
    const binary = row.binary;
    const scores = row.scores;
    return el("tr", { "data-judge": row.judge },
      el("td", { class: "mono" }, row.judge), el("td", { class: "num" }, row.units),
      el("td", { class: "num" }, binary ? binary.units : 0), el("td", { class: "num" }, binary ? percent(binary.agreement) : "-"),
      el("td", { class: "num kappa" }, binary ? `${fixed(binary.kappa)}${intervalText(binary.kappa_interval)}` : "-"),
      el("td", {}, binary ? confusionTable(binary) : ""),
      el("td", { class: "num" }, scores ? scores.units : 0), el("td", { class: "num" }, scores ? fixed(scores.spearman) : "-"),
      el("td", { class: "num" }, scores ? fixed(scores.alpha) : "-"),
      el("td", {}, `${row.first_run_at.slice(0, 10)} … ${row.last_run_at.slice(0, 10)}`));
  });
  const labellers = report.labellers;
  const pairs = labellers.pairs.filter((pair) => pair.binary).map((pair) => el("li", {},
    `${pair.labellers.join(" – ")}: ${pair.binary.units} unit(s), agreement ${percent(pair.binary.agreement)}, κ ${fixed(pair.binary.kappa)}${intervalText(pair.binary.kappa_interval)}`));
  const drift = report.drift.map((entry) => el("div", { class: "panel drift", "data-prompt": entry.prompt }, el("h3", {}, entry.prompt),
    el("ol", {}, entry.models.map((model) => el("li", {}, `${model.model} (from ${model.first_run_at.slice(0, 10)}): ${model.units} unit(s), agreement ${percent(model.agreement)}, κ ${fixed(model.kappa)}`)))));
  show(
    el("h1", {}, "Judge–human agreement"),
    el("p", { class: "muted" }, `${report.labels} label(s) of ${report.items} unit(s) by ${labellers.labellers.join(", ") || "nobody yet"}. `
      + "Per judge (model + prompt): the labellers' majority verdict against the judge's, Cohen's κ with a 95% bootstrap interval; "
      + "scores: Spearman's ρ and Krippendorff's α (interval, the judge's scale mapped onto 1–5). The same figures as `assay judge agreement`."),
    STATIC ? null : el("div", { class: "filters" }, judge, rubric, labeller, el("button", { onclick: apply }, "Filter")),
    // An export holds the whole report only: a link with filters would otherwise read as filtered.
    STATIC && (params.judge || params.rubric || params.labeller)
      ? el("p", { class: "muted", id: "agreement-unfiltered" }, "This export holds every judge and labeller; the "
        + `filters in the link (${["judge", "rubric", "labeller"].filter((name) => params[name]).map((name) => `${name}=${params[name]}`).join(", ")}) `
        + "need the live viewer (`assay view`).")
      : null,
    report.judges.length
      ? el("table", { id: "agreement-table" }, el("thead", {}, el("tr", {}, ["judge", "units", "pass/fail", "agreement", "κ [95%]", "confusion", "scored", "Spearman ρ", "α", "runs"].map((h) => el("th", {}, h)))), el("tbody", {}, rows))
      : el("p", { class: "muted", id: "agreement-empty" }, "No labelled unit yet: label units with `assay view --label`."),
    el("h2", {}, "Between labellers"),
    labellers.labellers.length > 1
      ? el("div", { id: "labeller-agreement" }, el("p", {}, `α pass/fail (nominal) ${fixed(labellers.alpha_verdict)} · α scores (ordinal) ${fixed(labellers.alpha_score)} · ${labellers.units_with_several_labellers} unit(s) with several labellers`), el("ul", {}, pairs))
      : el("p", { class: "muted" }, labellers.labellers.length ? "One labeller so far." : "No labeller yet."),
    el("h2", {}, "Judge drift"),
    drift.length ? el("div", { id: "judge-drift" }, drift) : el("p", { class: "muted" }, "No prompt has been used by more than one judge model yet."),
  );
}
