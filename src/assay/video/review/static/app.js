// assay Eval Editor: browse cases, play the video, inspect exact eval frames, edit timed expectations.
// Vanilla JS, no build step. Expectation values travel as opaque JSON text (`expect_json`) so big
// integers and `1` vs `1.0` survive untouched; only plain strings are shown unquoted for editing.
"use strict";

const COMPARE_MODES = ["exact", "json_subset", "numeric", "set_contains_all", "set_contains_any", "set_equals"];
const EXPECT_TYPES = ["null", "boolean", "number", "string", "array", "object"];
const TYPE_TEMPLATES = { null: "null", boolean: "true", number: "0", string: "\"\"", array: "[]", object: "{}" };
// No pure green or red: those mean passed and failed on the timeline.
const PALETTE = ["#2f6fed", "#8e44ad", "#00a3a3", "#e08a00", "#c2185b", "#6d8b00", "#5c6bc0", "#795548", "#0097e6", "#b7950b"];
const RULER_HEIGHT = 24;
const LANE_HEIGHT = 36;
const LANE_PAD_X = 12;
const MAX_CANVAS_WIDTH = 30000;
const DURATION_SLACK_S = 0.05;
const AUTOSAVE_DELAY_MS = 450;
const FRAME_CLIENT = "editor-" + Math.random().toString(36).slice(2, 10);

const state = {
  evalDir: "",
  token: "",
  cases: [],
  caseId: null,
  doc: null,
  targets: [],              // working copy: [{id, label, sample_defaults, samples: [...]}], samples sorted by time
  selectedTarget: null,
  selection: new Set(),     // sample ids of the selected target
  anchorId: null,
  time: 0,
  fps: 30,
  results: new Map(),       // target id -> Map(time key -> outcome)
  resultsSource: null,
  colors: new Map(),        // target id -> Map(expect_json -> colour)
  dirty: new Set(),
  editVersion: 0,
  saving: false,
  saveRun: null,  // the save in flight: its targets, and whether its PUT went
  saveError: null,
  overwriteOnce: false,     // the next save replaces what another tab or an editor saved meanwhile
  saveTimer: null,
  invalidInputs: new Set(),
  expanded: new Set(),
  frameGeneration: 0,
  frameUrl: null,
  frameTimer: null,
  videoUsable: false,
  dragging: false,
  newIdCounter: 0,
  loading: false,
  urlTimer: null,
};

const $ = (id) => document.getElementById(id);
const esc = (text) => String(text ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]);
const timeKey = (t) => Math.round(t * 1e9);
const round9 = (t) => Math.round(t * 1e9) / 1e9;
const roundMs = (t) => Math.round(t * 1000) / 1000;

function formatSeconds(t) {
  if (t === null || t === undefined || !isFinite(t)) return "";
  return String(round9(t));
}

function formatClock(t) {
  const minutes = Math.floor(t / 60);
  const seconds = t - minutes * 60;
  return minutes ? `${minutes}:${seconds.toFixed(3).padStart(6, "0")}` : `${seconds.toFixed(3)} s`;
}

// ---------------------------------------------------------------------------------------------
// HTTP

class ApiFailure extends Error {
  constructor(status, error) {
    super(error?.message || `HTTP ${status}`);
    this.status = status;
    this.code = error?.code || "http_error";
    this.details = error?.details || [];
  }
}

const SERVER_GONE = "The review server does not answer: was it stopped? Start `assay video review` again with the same --port " +
  "(your edits stay in this tab while it is open), then retry.";

async function api(path, options = {}) {
  let response;
  try {
    response = await fetch(path, options);
  } catch (_) {
    throw new ApiFailure(0, { code: "server_unreachable", message: SERVER_GONE });
  }
  let body = null;
  try { body = await response.json(); } catch (_) { body = null; }
  if (!response.ok) throw new ApiFailure(response.status, body?.error);
  return body;
}

const caseUrl = (id) => `/api/case-files/${encodeURIComponent(id)}`;

// ---------------------------------------------------------------------------------------------
// Working copy helpers

function target(id) { return state.targets.find((t) => t.id === id) || null; }
function currentTarget() { return target(state.selectedTarget); }
function selectedSamples() {
  const t = currentTarget();
  return t ? t.samples.filter((s) => state.selection.has(s.id)) : [];
}
function editingEnabled() { return Boolean(state.doc && state.doc.editing_enabled); }
function duration() { return state.doc?.video?.duration_s || 0; }
function timelineEnd() {
  let end = duration();
  for (const t of state.targets) for (const s of t.samples) end = Math.max(end, s.timestamp_s + 0.25);
  return Math.max(end, 1);
}

function cloneSample(sample) {
  return {
    id: sample.id,
    timestamp_s: sample.timestamp_s,
    has_expectation: sample.has_expectation,
    expect_type: sample.expect_type,
    expect_json: sample.expect_json,
    field: sample.field,
    compare: { mode: sample.compare?.mode ?? null, tolerance: sample.compare?.tolerance ?? null },
    comment: sample.comment,
    ignore: sample.ignore,
    origin: sample.origin ? { ...sample.origin } : null,
  };
}

function sortSamples(samples) {
  samples.sort((a, b) => timeKey(a.timestamp_s) - timeKey(b.timestamp_s) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function payloadKey(s) {
  return JSON.stringify([s.has_expectation, s.has_expectation ? s.expect_json : null, s.field, s.compare.mode, s.compare.tolerance, s.comment, s.ignore]);
}

function groupsOf(samples) {
  const groups = [];
  for (const sample of samples) {
    const key = payloadKey(sample);
    const last = groups[groups.length - 1];
    if (last && last.key === key) last.samples.push(sample);
    else groups.push({ key, samples: [sample] });
  }
  for (const group of groups) {
    const times = group.samples.map((s) => s.timestamp_s);
    group.start = times[0];
    group.end = times[times.length - 1];
    group.every = null;
    if (times.length >= 2) {
      const cadence = times[1] - times[0];
      if (times.every((t, i) => i === 0 || Math.abs(t - times[i - 1] - cadence) < 1e-6)) group.every = round9(cadence);
    }
  }
  return groups;
}

function inferType(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  const kind = typeof value;
  if (kind === "boolean" || kind === "number" || kind === "string") return kind;
  return "object";
}

function expectationLabel(sample, limit = 60) {
  if (!sample.has_expectation) return sample.ignore ? "—" : "draft";
  let text = sample.expect_json;
  if (sample.expect_type === "string") {
    try { text = JSON.parse(sample.expect_json); } catch (_) { /* keep the JSON text */ }
  }
  return text.length > limit ? text.slice(0, limit - 1) + "…" : text;
}

function colorFor(targetId, sample) {
  if (!sample.has_expectation) return null;
  return state.colors.get(targetId)?.get(sample.expect_json) || "#6a7283";
}

function rebuildColors() {
  state.colors = new Map();
  for (const t of state.targets) {
    const map = new Map();
    for (const s of t.samples) {
      if (s.has_expectation && !map.has(s.expect_json)) map.set(s.expect_json, PALETTE[map.size % PALETTE.length]);
    }
    state.colors.set(t.id, map);
  }
}

function outcomeFor(targetId, sample) {
  return state.results.get(targetId)?.get(timeKey(sample.timestamp_s)) || null;
}

// ---------------------------------------------------------------------------------------------
// Loading

async function loadEvalDirectory() {
  const data = await api("/api/eval-directory");
  state.evalDir = data.eval_dir;
  state.token = data.write_token;
  state.cases = data.cases;
  $("eval-dir").textContent = data.eval_dir;
  $("config-source").textContent = data.eval_config_source ?? "(no config.yaml)";
  renderCaseList();
}

function adoptDocument(doc, { keepSelection = false } = {}) {
  state.doc = doc;
  state.targets = doc.targets.map((t) => ({
    id: t.id, label: t.label, sample_defaults: t.sample_defaults, details_yaml: t.details_yaml,
    samples: t.samples.map(cloneSample),
  }));
  for (const t of state.targets) sortSamples(t.samples);
  if (!target(state.selectedTarget)) state.selectedTarget = state.targets[0]?.id ?? null;
  const current = currentTarget();
  if (!keepSelection || !current) state.selection = new Set();
  else state.selection = new Set([...state.selection].filter((id) => current.samples.some((s) => s.id === id)));
  const video = doc.video;
  state.fps = video?.frame_count && video?.duration_s ? video.frame_count / video.duration_s : 30;
  rebuildColors();
}

async function openCase(id, { targetId = null, time = null } = {}) {
  if (state.caseId !== id && hasUnsavedWork() && !confirm("Unsaved edits in this case will be lost. Switch anyway?")) return;
  const shown = state.caseId;
  state.loading = true;
  state.caseId = id;
  state.dirty.clear();
  state.invalidInputs.clear();
  state.saveError = null;
  state.expanded.clear();
  state.selection = new Set();
  state.results = new Map();
  state.resultsSource = null;
  renderCaseList();
  let doc;
  try {
    doc = await api(caseUrl(id));
  } catch (error) {
    // The page still shows the case it showed (or none): its saves must not go to the case that did not open,
    // and with none shown the banner (part of a case's view) would be hidden.
    state.caseId = shown;
    renderCaseList();
    const message = `Could not open ${id}: ${error.message}`;
    if ($("case-view").hidden) $("empty-state").textContent = message;
    else showBanner(message);
    state.loading = false;
    return;
  }
  state.selectedTarget = targetId;
  adoptDocument(doc);
  if (targetId && !target(targetId)) showBanner(`Case ${id} has no target ${targetId}.`, "info");
  else hideBanner();
  setupVideo();
  state.time = 0;
  $("empty-state").hidden = true;
  $("case-view").hidden = false;
  renderAll();
  state.loading = false;
  seek(time !== null && isFinite(time) ? time : 0);
  updateUrl();  // after the seek: a time asked for in the address stays in it
  fetchResults();
}

async function reloadFromDisk() {
  // Asked before anything is dropped: cancelling leaves the drafts, the save error and its banner as they were.
  if (hasUnsavedWork() && !confirm("Discard your unsaved drafts and reload the case file from disk?")) return;
  state.saveError = null;
  clearTimeout(state.saveTimer);
  state.dirty.clear();
  state.invalidInputs.clear();
  await loadEvalDirectory();
  const id = state.caseId;
  state.caseId = null;
  if (id && state.cases.some((c) => c.id === id)) await openCase(id, { targetId: state.selectedTarget, time: state.time });
  renderSaveStatus();
}

async function fetchResults() {
  const id = state.caseId;
  if (!id) return;
  try {
    const data = await api(`${caseUrl(id)}/results`);
    if (id !== state.caseId) return;
    state.results = new Map();
    for (const [targetId, outcomes] of Object.entries(data.targets || {})) {
      state.results.set(targetId, new Map(outcomes.map((o) => [timeKey(o.timestamp_s), o])));
    }
    state.resultsSource = data.source;
  } catch (_) {
    state.results = new Map();
    state.resultsSource = null;
  }
  renderResultsSource();
  renderTimeline();
  renderLaneLabels();
  renderTable();
  renderResultBox();
}

// ---------------------------------------------------------------------------------------------
// Saving

function hasUnsavedWork() {
  return state.dirty.size > 0 || state.saving || state.invalidInputs.size > 0 || Boolean(state.saveError);
}

function markEdited(targetId) {
  state.dirty.add(targetId);
  state.editVersion += 1;
  state.saveError = null;
  rebuildColors();
  renderSaveStatus();
  clearTimeout(state.saveTimer);
  state.saveTimer = setTimeout(flushSave, AUTOSAVE_DELAY_MS);
}

// A target's samples as saved, ids aside (a save keeps its own ids): equal when nobody changed them.
function savedSamples(doc, targetId) {
  const t = doc?.targets?.find((candidate) => candidate.id === targetId);
  if (!t) return null;
  return JSON.stringify(t.samples.map((s) => [timeKey(s.timestamp_s), payloadKey(cloneSample(s))]).sort());
}

// The targets about to be saved that another tab or an editor changed since this tab loaded them: a save
// replaces a target's samples whole, so it would silently undo that change.
async function targetsChangedElsewhere(caseId, targetIds) {
  const current = await api(caseUrl(caseId));
  if (current.revision === state.doc?.revision) return [];
  return targetIds.filter((id) => {
    const now = savedSamples(current, id);
    return now !== null && now !== savedSamples(state.doc, id);
  });
}

function sampleForServer(s) {
  const body = {
    id: s.id, timestamp_s: s.timestamp_s, has_expectation: s.has_expectation,
    expect_type: s.has_expectation ? s.expect_type : "null",
    expect_json: s.has_expectation ? s.expect_json : "null",
    field: s.field, compare: { mode: s.compare.mode, tolerance: s.compare.tolerance },
    comment: s.comment, ignore: s.ignore,
  };
  if (s.origin) body.origin = s.origin;
  return body;
}

// Leaving the page (closing the tab, going elsewhere, hiding it) within the autosave delay: the edits go at once,
// as one request the browser finishes after the page is gone (`keepalive`, for bodies under its 64 KiB). With no
// time to ask first what changed on disk, the server takes it only if the file is still the one this page loaded.
const LEAVING_BODY_LIMIT = 60000;

function saveOnLeave() {
  const run = state.saveRun;
  if (state.saving && run && !run.sent && !run.overwrite && !state.saveError) {
    // An autosave still asking whether the file changed would go with the page, its edits unsent: they go now,
    // at once, and that save stops when its answer comes (if the page is still there: only hidden).
    for (const id of run.targetIds) state.dirty.add(id);
    state.saving = false;
    state.saveRun = null;
  }
  if (state.dirty.size && !state.saving && !state.saveError) flushSave({ leaving: true });
}

async function flushSave({ leaving = false } = {}) {
  clearTimeout(state.saveTimer);
  if (state.saving || state.dirty.size === 0 || !state.caseId) return;
  const caseId = state.caseId;
  const targetIds = [...state.dirty];
  const version = state.editVersion;
  const body = { targets: {} };
  for (const id of targetIds) body.targets[id] = { samples: target(id).samples.map(sampleForServer) };
  const text = JSON.stringify(body);
  const headers = { "Content-Type": "application/json", "X-GlassKit-Write-Token": state.token };
  const atOnce = leaving && !state.overwriteOnce && state.doc?.revision && text.length < LEAVING_BODY_LIMIT;
  if (atOnce) headers["X-Assay-Base-Revision"] = state.doc.revision;
  state.saving = true;
  state.dirty.clear();
  const run = state.saveRun = { targetIds, sent: false, overwrite: state.overwriteOnce };
  const superseded = () => state.saveRun !== run;  // the page was left while it asked: a save sent at once took over
  renderSaveStatus();
  const put = () => {
    run.sent = true;
    return api(`${caseUrl(caseId)}/samples`, { method: "PUT", headers, body: text, keepalive: Boolean(atOnce) });
  };
  try {
    const overwrite = state.overwriteOnce;
    state.overwriteOnce = false;
    const changed = overwrite || atOnce ? [] : await targetsChangedElsewhere(caseId, targetIds);
    if (superseded()) return;
    if (changed.length) {
      throw new ApiFailure(409, {
        code: "case_file_changed",
        message: `${caseId} changed on disk after this tab loaded it (another tab or an editor saved ` +
          `${changed.length === 1 ? "target" : "targets"} ${changed.join(", ")}). Reload from disk to see that version ` +
          "(your edits here are dropped), or save yours over it.",
      });
    }
    let doc;
    try {
      doc = await put();
    } catch (error) {
      // `assay video review` was started again (same port, new token): the edits are still good.
      if (error.code !== "invalid_write_token") throw error;
      state.token = headers["X-GlassKit-Write-Token"] = (await api("/api/eval-directory")).write_token;
      doc = await put();
    }
    if (caseId !== state.caseId) return;
    state.saveError = null;
    if ($("banner").dataset.kind === "save-error") hideBanner();
    if (state.editVersion === version) {
      adoptDocument(doc, { keepSelection: true });
      renderAll({ keepInspector: true });
    } else {
      // Newer local drafts win: keep the working copy, take only what the server knows better.
      state.doc = doc;
      renderIssues();
      renderCaseHead();
    }
    $("case-source").textContent = doc.case_file_source ?? "";
    const summary = state.cases.find((c) => c.id === caseId);
    if (summary) summary.sample_count = doc.targets.reduce((n, t) => n + t.samples.length, 0);
    fetchResults();
  } catch (error) {
    if (superseded()) return;
    if (caseId === state.caseId) {
      for (const id of targetIds) state.dirty.add(id);
      state.saveError = error;
      showSaveError(error, body);
    }
  } finally {
    if (!superseded()) finishSave(caseId);
  }
}

function finishSave(caseId) {
  state.saving = false;
  state.saveRun = null;
  renderSaveStatus();
  if (state.dirty.size && !state.saveError && caseId === state.caseId) {
    clearTimeout(state.saveTimer);
    state.saveTimer = setTimeout(flushSave, AUTOSAVE_DELAY_MS);
  }
}

// `targets.<id>.samples.<i>.<key>` of a save request, as the sample's target and time.
function describeDetailPath(path, body) {
  const match = /^targets\.(.+)\.samples\.(\d+)(?:\.(.+))?$/.exec(path || "");
  const sample = match && body?.targets?.[match[1]]?.samples?.[Number(match[2])];
  if (!sample) return path;
  return `${match[1]}, sample at ${formatSeconds(sample.timestamp_s)} s${match[3] ? ` (${match[3]})` : ""}`;
}

function showSaveError(error, body = null) {
  const lines = [`Not saved: ${error.message}`];
  for (const detail of error.details || []) {
    if (detail.message === error.message) continue;
    const where = describeDetailPath(detail.path, body);
    lines.push(`• ${where ? where + ": " : ""}${detail.message}`);
  }
  const banner = $("banner");
  banner.className = "banner";
  banner.textContent = lines.join("\n");
  banner.dataset.kind = "save-error";
  const retry = document.createElement("button");
  const overwrite = error.code === "case_file_changed";
  retry.textContent = overwrite ? "Save mine over it" : "Retry save";
  retry.onclick = () => { state.saveError = null; state.overwriteOnce = overwrite; hideBanner(); flushSave(); };
  const reload = document.createElement("button");
  reload.textContent = "Reload from disk";
  reload.onclick = () => reloadFromDisk();
  banner.append(retry, reload);
  banner.hidden = false;
}

function renderSaveStatus() {
  const el = $("save-status");
  let text = "All changes saved";
  let mode = "saved";
  if (!state.doc) { text = "No case open"; mode = "idle"; }
  else if (!editingEnabled()) { text = "Read-only"; mode = "idle"; }
  else if (state.invalidInputs.size) { text = "Fix the highlighted value to save"; mode = "invalid"; }
  else if (state.saveError) { text = "Not saved"; mode = "error"; }
  else if (state.saving) { text = "Saving…"; mode = "saving"; }
  else if (state.dirty.size) { text = "Unsaved changes"; mode = "pending"; }
  else if (state.editVersion === 0) { text = "No changes"; mode = "idle"; }
  el.textContent = text;
  el.dataset.state = mode;
}

// ---------------------------------------------------------------------------------------------
// Banner and issues

function showBanner(text, kind = "error") {
  const banner = $("banner");
  banner.className = kind === "info" ? "banner info" : "banner";
  banner.textContent = text;
  banner.dataset.kind = kind;
  banner.hidden = false;
}
function hideBanner() { $("banner").hidden = true; }

function renderIssues() {
  const list = $("issues");
  list.innerHTML = "";
  const doc = state.doc;
  if (!doc) return;
  if (doc.load_error) {
    const details = (doc.load_error.details || []).map((d) => d.message).filter((m) => m && m !== doc.load_error.message);
    showBanner([`${doc.load_error.code}: ${doc.load_error.message}`, ...details].join("\n") +
      (doc.load_error.code === "video_unavailable" ? "\nEditing is disabled until the video is available." : ""));
  }
  const late = new Map();
  for (const issue of doc.validation_issues || []) {
    if (issue.code === "timestamp_after_video") {
      const targetId = issue.path.split(".")[1];
      late.set(targetId, (late.get(targetId) || 0) + 1);
      continue;
    }
    const item = document.createElement("li");
    item.className = issue.severity;
    item.innerHTML = `<span>${esc(issue.message)}</span>`;
    const targetId = (issue.path || "").split(".")[1];
    if (issue.code === "empty_target" && editingEnabled()) {
      item.append(actionButton("Add a sample at the playhead", () => { selectTarget(targetId); addSampleAtPlayhead(); }));
    } else if (issue.code === "draft_expectations") {
      item.append(actionButton("Select drafts", () => {
        selectTarget(targetId);
        const t = currentTarget();
        setSelection(t.samples.filter((s) => !s.has_expectation && !s.ignore).map((s) => s.id));
      }));
    }
    list.append(item);
  }
  for (const [targetId, count] of late) {
    const item = document.createElement("li");
    item.className = "error";
    item.innerHTML = `<span>Target <b>${esc(targetId)}</b> has ${count} sample${count === 1 ? "" : "s"} after the end of the video (${formatSeconds(duration())} s).</span>`;
    if (editingEnabled()) item.append(actionButton("Delete them", () => deleteLateSamples(targetId)));
    list.append(item);
  }
}

function actionButton(label, onClick) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  button.addEventListener("click", onClick);
  return button;
}

// ---------------------------------------------------------------------------------------------
// Sidebar

function renderCaseList() {
  const filter = $("case-filter").value.trim().toLowerCase();
  const list = $("case-list");
  const shown = state.cases.filter((c) => !filter || c.name.toLowerCase().includes(filter) || (c.description || "").toLowerCase().includes(filter));
  $("case-count").textContent = `(${state.cases.length})`;
  const focused = focusedItem(list, "case");
  list.innerHTML = shown.map((c) => `
    <li data-case="${esc(c.id)}" tabindex="0" class="${c.id === state.caseId ? "active" : ""}" title="${esc(c.error ? c.error.message : c.description || c.file_name)}">
      <span class="dot ${c.status === "ready" ? "" : "blocked"}"></span>
      <span class="name">${esc(c.name)}</span>
      <span class="meta">${c.status === "ready" ? `${c.sample_count}` : "blocked"}</span>
    </li>`).join("") || `<li class="muted">No matching cases</li>`;
  refocusItem(list, "case", focused);
}

function visibleTargets() {
  const filter = $("target-filter").value.trim().toLowerCase();
  let targets = state.targets.filter((t) => !filter || t.id.toLowerCase().includes(filter) || (t.label || "").toLowerCase().includes(filter));
  if ($("only-selected").checked) targets = targets.filter((t) => t.id === state.selectedTarget);
  return targets;
}

function targetStats(t) {
  const outcomes = state.results.get(t.id);
  let failed = 0;
  if (outcomes) for (const s of t.samples) { const o = outcomes.get(timeKey(s.timestamp_s)); if (o && (o.status === "failed" || o.status === "error")) failed += 1; }
  return { count: t.samples.length, failed };
}

function renderTargetList() {
  const filter = $("target-filter").value.trim().toLowerCase();
  const list = $("target-list");
  const shown = state.targets.filter((t) => !filter || t.id.toLowerCase().includes(filter) || (t.label || "").toLowerCase().includes(filter));
  $("target-count").textContent = state.targets.length ? `(${state.targets.length})` : "";
  const focused = focusedItem(list, "target");
  list.innerHTML = shown.map((t) => {
    const stats = targetStats(t);
    return `<li data-target="${esc(t.id)}" tabindex="0" class="${t.id === state.selectedTarget ? "active" : ""}" title="${esc(t.id)}">
      <span class="name">${esc(t.label || t.id)}</span>
      <span class="meta">${stats.count}${stats.failed ? ` · <span style="color:var(--fail)">${stats.failed}✕</span>` : ""}</span>
    </li>`;
  }).join("") || `<li class="muted">No targets</li>`;
  refocusItem(list, "target", focused);
}

// Keyboard use: the cases, the targets and the sample table's rows take the focus (Tab) and open with Enter
// or Space as a click does. A list drawn again gives the focus back to the item that had it, or it would
// fall to the page and Tab start over from the top.
function focusedItem(list, key) {
  const item = document.activeElement;
  return item && list.contains(item) && item.dataset[key] !== undefined ? item.dataset[key] : null;
}

function refocusItem(list, key, value) {
  if (value === null) return;
  const item = [...list.querySelectorAll(`[data-${key}]`)].find((element) => element.dataset[key] === value);
  if (item) item.focus();
}

function activateWithKeys(list, selector) {
  list.addEventListener("keydown", (event) => {
    const item = event.target.closest(selector);
    if (!item || (event.key !== "Enter" && event.key !== " ") || event.metaKey || event.ctrlKey || event.altKey) return;
    event.preventDefault();
    event.stopPropagation();  // Space is not play/pause here
    item.click();
  });
}

function renderCaseHead() {
  const doc = state.doc;
  $("case-title").textContent = doc.name;
  const badge = $("case-status");
  badge.textContent = doc.status;
  badge.className = `badge ${doc.status === "ready" ? "" : doc.status}`;
  $("case-description").textContent = doc.description || "";
  $("case-source").textContent = doc.case_file_source ?? "(not UTF-8 text)";
  $("video-path").textContent = doc.video?.display_path || "";
  $("duration-label").textContent = doc.video?.duration_s ? `/ ${formatClock(doc.video.duration_s)}` : "";
  for (const id of ["add-sample", "add-range"]) $(id).disabled = !editingEnabled() || !currentTarget();
}

function renderResultsSource() {
  const el = $("results-source");
  const source = state.resultsSource;
  el.textContent = source ? `Marks from earlier run: ${source.path.split("/").slice(-1)[0]}` : "No earlier run found";
  el.title = source ? source.path : "Run `assay video run` to see pass/fail marks here";
}

// ---------------------------------------------------------------------------------------------
// Video and exact frames

function setupVideo() {
  const video = $("video");
  const note = $("video-note");
  state.videoUsable = false;
  note.hidden = true;
  video.pause();
  if (!state.doc?.video?.url) {
    video.removeAttribute("src");
    video.load();
    note.textContent = "The video is unavailable.";
    note.hidden = false;
    return;
  }
  video.src = state.doc.video.url;
  video.playbackRate = Number($("rate-select").value);
}

function onVideoReady() { state.videoUsable = true; $("video-note").hidden = true; }
function onVideoError() {
  state.videoUsable = false;
  if (!state.doc?.video?.url) return;
  const note = $("video-note");
  note.textContent = "This browser cannot play the video; the exact eval frames on the right still show every time.";
  note.hidden = false;
}

function seek(t, { fromVideo = false } = {}) {
  const end = timelineEnd();
  state.time = Math.min(Math.max(0, t), end);
  const video = $("video");
  if (!fromVideo && state.doc?.video?.url) {
    try { video.currentTime = Math.min(state.time, duration()); } catch (_) { /* not ready yet */ }
  }
  updatePlayhead();
  scheduleFrame();
  renderResultBox();
  scheduleUrlUpdate();
}

function scheduleFrame() {
  clearTimeout(state.frameTimer);
  if (!state.doc?.video?.frame_url) return;
  if (!$("video").paused) return;
  state.frameTimer = setTimeout(() => loadFrame(state.time), 60);
}

async function loadFrame(t) {
  const doc = state.doc;
  if (!doc?.video?.frame_url) return;
  const generation = ++state.frameGeneration;
  const at = formatSeconds(Math.min(t, doc.video.duration_s));
  let response;
  try {
    response = await fetch(`${doc.video.frame_url}?at=${encodeURIComponent(at)}`, {
      headers: { "X-GlassKit-Frame-Client": FRAME_CLIENT, "X-GlassKit-Frame-Generation": String(generation) },
    });
  } catch (_) { return; }
  if (generation !== state.frameGeneration || response.status === 409) return;
  if (!response.ok) {
    let message = `HTTP ${response.status}`;
    try { message = (await response.json()).error.message; } catch (_) { /* keep the status */ }
    $("frame-meta").textContent = message;
    return;
  }
  const blob = await response.blob();
  if (generation !== state.frameGeneration) return;
  if (state.frameUrl) URL.revokeObjectURL(state.frameUrl);
  state.frameUrl = URL.createObjectURL(blob);
  const image = $("frame-image");
  image.src = state.frameUrl;
  image.dataset.requested = response.headers.get("X-GlassKit-Requested-Time") || "";
  const media = Number(response.headers.get("X-GlassKit-Media-Time"));
  const index = response.headers.get("X-GlassKit-Frame-Index");
  $("frame-meta").textContent = `at ${at} s → frame at ${formatSeconds(media)} s${index !== null ? ` (#${index})` : ""}`;
  const download = $("frame-download");
  download.href = state.frameUrl;
  download.download = `${doc.name}-at-${at}s.png`;
  download.hidden = false;
}

function togglePlay() {
  const video = $("video");
  if (!state.videoUsable) return;
  if (video.paused) video.play(); else video.pause();
}

function playLoop() {
  const video = $("video");
  if (video.paused) return;
  state.time = video.currentTime;
  updatePlayhead();
  requestAnimationFrame(playLoop);
}

function nudge(seconds) { seek(round9(state.time + seconds)); }
function stepFrame(direction) {
  $("video").pause();
  seek(round9(state.time + direction / (state.fps || 30)));
}

// ---------------------------------------------------------------------------------------------
// Timeline

const timeline = { pxPerSecond: 100, width: 0, lanes: [] };

function xOf(t) { return LANE_PAD_X + t * timeline.pxPerSecond; }
function tOf(x) { return Math.max(0, (x - LANE_PAD_X) / timeline.pxPerSecond); }

function niceStep(pxPerSecond) {
  for (const step of [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800]) {
    if (step * pxPerSecond >= 70) return step;
  }
  return 3600;
}

function renderTimeline() {
  if (!state.doc) return;
  const scroll = $("timeline-scroll");
  const canvas = $("timeline-canvas");
  const lanes = visibleTargets();
  timeline.lanes = lanes;
  const visibleWidth = Math.max(scroll.clientWidth, 300);
  const end = timelineEnd();
  const width = Math.min(MAX_CANVAS_WIDTH, Math.round(visibleWidth * Number($("zoom").value)));
  timeline.width = width;
  timeline.pxPerSecond = (width - 2 * LANE_PAD_X) / end;
  const height = RULER_HEIGHT + Math.max(1, lanes.length) * LANE_HEIGHT;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  $("timeline-inner").style.width = `${width}px`;
  const g = canvas.getContext("2d");
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, width, height);

  // Ruler
  g.fillStyle = "#fafbfc";
  g.fillRect(0, 0, width, RULER_HEIGHT);
  g.strokeStyle = "#dfe3ea";
  g.beginPath(); g.moveTo(0, RULER_HEIGHT - 0.5); g.lineTo(width, RULER_HEIGHT - 0.5); g.stroke();
  const step = niceStep(timeline.pxPerSecond);
  g.fillStyle = "#6a7283";
  g.font = "11px system-ui, sans-serif";
  g.textBaseline = "middle";
  for (let t = 0; t <= end + 1e-9; t = round9(t + step)) {
    const x = Math.round(xOf(t)) + 0.5;
    g.fillRect(x - 0.5, RULER_HEIGHT - 7, 1, 7);
    g.fillText(t >= 60 ? formatClock(t).replace(/\.000$/, "") : `${round9(t)}s`, x + 3, 10);
  }
  const videoEnd = duration();
  if (videoEnd && videoEnd < end) {
    g.fillStyle = "rgba(214, 69, 69, 0.07)";
    g.fillRect(xOf(videoEnd), RULER_HEIGHT, width - xOf(videoEnd), height - RULER_HEIGHT);
  }

  lanes.forEach((t, laneIndex) => drawLane(g, t, RULER_HEIGHT + laneIndex * LANE_HEIGHT, width));
  if (!lanes.length) {
    g.fillStyle = "#6a7283";
    g.fillText("No targets to show", 16, RULER_HEIGHT + LANE_HEIGHT / 2);
  }
  renderLaneLabels();
  updatePlayhead();
}

function drawLane(g, t, top, width) {
  const selectedLane = t.id === state.selectedTarget;
  g.fillStyle = selectedLane ? "#f3f6fe" : "#ffffff";
  g.fillRect(0, top, width, LANE_HEIGHT);
  g.fillStyle = "#f0f2f5";
  g.fillRect(0, top + LANE_HEIGHT - 1, width, 1);
  const tickTop = top + 6;
  const tickHeight = 16;
  // Range bands: runs of equal settings read as one block.
  for (const group of groupsOf(t.samples)) {
    if (group.samples.length < 2 || group.every === null) continue;
    const color = colorFor(t.id, group.samples[0]) || "#8a93a3";
    g.globalAlpha = 0.16;
    g.fillStyle = color;
    const x0 = xOf(group.start);
    g.fillRect(x0, tickTop + 3, Math.max(2, xOf(group.end + group.every) - x0), tickHeight - 6);
    g.globalAlpha = 1;
  }
  const tickWidth = Math.max(2, Math.min(4, timeline.pxPerSecond * 0.05));
  for (const s of t.samples) {
    const x = xOf(s.timestamp_s);
    const selected = selectedLane && state.selection.has(s.id);
    if (s.ignore) {
      g.fillStyle = "#c5cad3";
      g.fillRect(x - tickWidth / 2, tickTop + 4, tickWidth, tickHeight - 8);
    } else if (!s.has_expectation) {
      g.strokeStyle = "#8a93a3";
      g.lineWidth = 1;
      g.strokeRect(x - tickWidth / 2 + 0.5, tickTop + 0.5, tickWidth, tickHeight - 1);
    } else {
      g.fillStyle = colorFor(t.id, s);
      g.fillRect(x - tickWidth / 2, tickTop, tickWidth, tickHeight);
    }
    if (selected) {
      g.strokeStyle = "#151a24";
      g.lineWidth = 2;
      g.strokeRect(x - tickWidth / 2 - 2, tickTop - 3, tickWidth + 4, tickHeight + 6);
    }
    const outcome = outcomeFor(t.id, s);
    if (outcome && outcome.status !== "ignored") {
      const color = outcome.status === "passed" ? "#1f9d55" : outcome.status === "failed" ? "#d64545" : "#e08a00";
      g.beginPath();
      g.arc(x, top + 29, 3, 0, Math.PI * 2);
      if (outcome.stale) { g.strokeStyle = color; g.lineWidth = 1.5; g.stroke(); }
      else { g.fillStyle = color; g.fill(); }
    }
  }
}

function renderLaneLabels() {
  const labels = $("lane-labels");
  labels.innerHTML = timeline.lanes.map((t) => {
    const stats = targetStats(t);
    return `<div class="lane-label ${t.id === state.selectedTarget ? "active" : ""}" data-target="${esc(t.id)}" title="${esc(t.id)}">
      <span class="name">${esc(t.label || t.id)}</span>
      <span class="meta">${stats.count} sample${stats.count === 1 ? "" : "s"}${stats.failed ? ` · ${stats.failed} failed` : ""}</span>
    </div>`;
  }).join("");
}

function playheadText() {
  return formatSeconds(roundMs(state.time) === state.time ? state.time : round9(state.time));
}

function updatePlayhead() {
  const x = xOf(state.time);
  $("playhead").style.left = `${x - 1}px`;
  const input = $("time-input");
  if (document.activeElement !== input) input.value = playheadText();
  if ($("follow").checked) {
    const scroll = $("timeline-scroll");
    if (x < scroll.scrollLeft + 20 || x > scroll.scrollLeft + scroll.clientWidth - 20) scroll.scrollLeft = Math.max(0, x - scroll.clientWidth / 3);
  }
}

function hitTest(event) {
  const canvas = $("timeline-canvas");
  const rect = canvas.getBoundingClientRect();
  const x = event.clientX - rect.left;
  const y = event.clientY - rect.top;
  const laneIndex = Math.floor((y - RULER_HEIGHT) / LANE_HEIGHT);
  const lane = y >= RULER_HEIGHT ? timeline.lanes[laneIndex] || null : null;
  let sample = null;
  if (lane) {
    let best = 6;
    for (const s of lane.samples) {
      const distance = Math.abs(xOf(s.timestamp_s) - x);
      if (distance < best) { best = distance; sample = s; }
    }
  }
  return { x, time: tOf(x), lane, sample };
}

function onTimelineDown(event) {
  if (event.button !== 0) return;
  const hit = hitTest(event);
  $("video").pause();
  if (hit.lane && hit.lane.id !== state.selectedTarget) selectTarget(hit.lane.id, { keepSelection: false });
  if (hit.sample) {
    selectSample(hit.sample.id, { extend: event.shiftKey, toggle: event.metaKey || event.ctrlKey });
    return;
  }
  state.dragging = true;
  seek(hit.time);
}

function onTimelineMove(event) {
  if (state.dragging) { seek(hitTest(event).time); return; }
  const hit = hitTest(event);
  const tooltip = $("tooltip");
  if (!hit.sample) { tooltip.hidden = true; return; }
  const s = hit.sample;
  const outcome = outcomeFor(hit.lane.id, s);
  const lines = [`${hit.lane.label || hit.lane.id} @ ${formatSeconds(s.timestamp_s)} s`, `expect: ${expectationLabel(s, 120)}`];
  if (s.field) lines.push(`field: ${s.field}`);
  if (s.ignore) lines.push(`ignored: ${s.ignore}`);
  if (s.comment) lines.push(`comment: ${s.comment}`);
  if (outcome) lines.push(`last run: ${outcome.status}${outcome.stale ? " (expectation edited since)" : ""}`);
  tooltip.textContent = lines.join("\n");
  tooltip.style.left = `${event.clientX + 12}px`;
  tooltip.style.top = `${event.clientY + 12}px`;
  tooltip.hidden = false;
}

// ---------------------------------------------------------------------------------------------
// Samples table

function describeGroup(group) {
  const n = group.samples.length;
  if (n === 1) return `${formatSeconds(group.start)} s`;
  if (group.every !== null) return `${formatSeconds(group.start)}–${formatSeconds(round9(group.end + group.every))} s every ${formatSeconds(group.every)} s`;
  const times = group.samples.map((s) => formatSeconds(s.timestamp_s));
  return times.length > 4 ? `${times.slice(0, 3).join(", ")}, … ${times[times.length - 1]} s` : `${times.join(", ")} s`;
}

function compareLabel(s) {
  if (!s.compare.mode && s.compare.tolerance === null) return `<span class="muted">inferred</span>`;
  return esc(`${s.compare.mode || "inferred"}${s.compare.tolerance !== null ? ` ±${s.compare.tolerance}` : ""}`);
}

function resultPills(targetId, samples) {
  const counts = {};
  for (const s of samples) {
    const outcome = outcomeFor(targetId, s);
    if (outcome) counts[outcome.status] = (counts[outcome.status] || 0) + 1;
  }
  return ["passed", "failed", "error", "ignored"].filter((k) => counts[k])
    .map((k) => `<span class="pill ${k}">${counts[k]} ${k}</span>`).join("");
}

function sampleCells(targetId, s, timeLabel, count) {
  const color = colorFor(targetId, s);
  const expectation = s.has_expectation
    ? `<span class="value-chip"><i style="background:${color}"></i><code>${esc(expectationLabel(s))}</code></span>`
    : `<span class="pill ${s.ignore ? "ignored" : "draft"}">${s.ignore ? "ignored" : "draft"}</span>`;
  const notes = [s.ignore ? `ignored: ${esc(s.ignore)}` : "", s.comment ? esc(s.comment) : ""].filter(Boolean).join("<br>");
  return `<td>${timeLabel}${count > 1 ? ` <span class="muted">(${count})</span>` : ""}</td>
    <td>${expectation}</td><td>${s.field ? `<code>${esc(s.field)}</code>` : `<span class="muted">—</span>`}</td>
    <td>${compareLabel(s)}</td><td>${notes}</td>`;
}

function renderTable() {
  const t = currentTarget();
  const body = $("samples-body");
  $("samples-target").textContent = t ? `· ${t.label || t.id}` : "";
  if (!t) { body.innerHTML = `<tr><td colspan="6" class="muted">No target selected</td></tr>`; $("samples-summary").textContent = ""; return; }
  const focusedGroup = focusedItem(body, "group");
  const focusedSample = focusedItem(body, "sample");
  const groups = groupsOf(t.samples);
  $("samples-summary").textContent = `${t.samples.length} samples in ${groups.length} group${groups.length === 1 ? "" : "s"}`;
  const rows = [];
  for (const group of groups) {
    const first = group.samples[0];
    const key = first.id;
    const expanded = state.expanded.has(key);
    const allSelected = group.samples.every((s) => state.selection.has(s.id));
    const toggle = group.samples.length > 1 ? `<span class="toggle" data-toggle="${esc(key)}">${expanded ? "▾" : "▸"}</span>` : `<span class="toggle"></span>`;
    rows.push(`<tr data-group="${esc(key)}" tabindex="0" class="${allSelected ? "selected" : ""}">${sampleCells(t.id, first, toggle + esc(describeGroup(group)), group.samples.length)}<td>${resultPills(t.id, group.samples)}</td></tr>`);
    if (expanded) {
      for (const s of group.samples) {
        rows.push(`<tr data-sample="${esc(s.id)}" tabindex="0" class="member ${state.selection.has(s.id) ? "selected" : ""}"><td>${esc(formatSeconds(s.timestamp_s))} s</td><td colspan="4" class="muted">${esc(s.id)}</td><td>${resultPills(t.id, [s])}</td></tr>`);
      }
    }
  }
  body.innerHTML = rows.join("") || `<tr><td colspan="6" class="muted">This target has no samples yet. Press A to add one at the playhead.</td></tr>`;
  refocusItem(body, "group", focusedGroup);
  refocusItem(body, "sample", focusedSample);
}

function onTableClick(event) {
  const t = currentTarget();
  if (!t) return;
  const toggle = event.target.closest("[data-toggle]");
  if (toggle) {
    const key = toggle.dataset.toggle;
    if (state.expanded.has(key)) state.expanded.delete(key); else state.expanded.add(key);
    renderTable();
    return;
  }
  const memberRow = event.target.closest("tr[data-sample]");
  if (memberRow) { selectSample(memberRow.dataset.sample, { extend: event.shiftKey, toggle: event.metaKey || event.ctrlKey }); return; }
  const groupRow = event.target.closest("tr[data-group]");
  if (groupRow) {
    const group = groupsOf(t.samples).find((g) => g.samples[0].id === groupRow.dataset.group);
    if (!group) return;
    setSelection(group.samples.map((s) => s.id));
    $("video").pause();
    seek(group.start);
  }
}

// ---------------------------------------------------------------------------------------------
// Selection

function selectTarget(id, { keepSelection = false } = {}) {
  if (!target(id)) return;
  if (state.selectedTarget !== id) {
    state.selectedTarget = id;
    if (!keepSelection) state.selection = new Set();
    state.expanded.clear();
    updateUrl();
  }
  // The inspector is drawn again: a value refused in it goes with it, as when another sample is selected
  // (left behind, it kept "Fix the highlighted value to save" up with nothing highlighted).
  state.invalidInputs.clear();
  renderSaveStatus();
  renderTargetList();
  renderTimeline();
  renderTable();
  renderInspector();
  renderResultBox();
  renderCaseHead();
}

function setSelection(ids) {
  state.selection = new Set(ids);
  state.anchorId = ids[0] ?? null;
  state.invalidInputs.clear();
  renderSaveStatus();
  renderTimeline();
  renderTable();
  renderInspector();
  renderResultBox();
}

function selectSample(id, { extend = false, toggle = false } = {}) {
  const t = currentTarget();
  const sample = t?.samples.find((s) => s.id === id);
  if (!sample) return;
  if (toggle) {
    const next = new Set(state.selection);
    if (next.has(id)) next.delete(id); else next.add(id);
    setSelection([...next]);
  } else if (extend && state.anchorId && t.samples.some((s) => s.id === state.anchorId)) {
    const anchor = t.samples.findIndex((s) => s.id === state.anchorId);
    const index = t.samples.findIndex((s) => s.id === id);
    const [a, b] = anchor < index ? [anchor, index] : [index, anchor];
    const anchorId = state.anchorId;
    setSelection(t.samples.slice(a, b + 1).map((s) => s.id));
    state.anchorId = anchorId;
  } else {
    setSelection([id]);
  }
  $("video").pause();
  seek(sample.timestamp_s);
}

function jumpSample(direction) {
  const t = currentTarget();
  if (!t || !t.samples.length) return;
  const now = timeKey(state.time);
  const candidates = direction > 0 ? t.samples.filter((s) => timeKey(s.timestamp_s) > now) : t.samples.filter((s) => timeKey(s.timestamp_s) < now).reverse();
  if (candidates.length) selectSample(candidates[0].id);
}

// ---------------------------------------------------------------------------------------------
// Editing

function newSampleId() {
  state.newIdCounter += 1;
  return `new-${Date.now().toString(36)}-${state.newIdCounter}`;
}

function nearestSample(t, time) {
  let best = null;
  for (const s of t.samples) if (!best || Math.abs(s.timestamp_s - time) < Math.abs(best.timestamp_s - time)) best = s;
  return best;
}

function templateSample(t, time) {
  const near = nearestSample(t, time);
  if (near && !near.ignore) {
    return { ...cloneSample(near), id: newSampleId(), timestamp_s: time, comment: null, ignore: null, origin: null };
  }
  return {
    id: newSampleId(), timestamp_s: time, has_expectation: false, expect_type: "null", expect_json: "null",
    field: t.sample_defaults.field, compare: { ...t.sample_defaults.compare }, comment: null, ignore: null, origin: null,
  };
}

function addSampleAtPlayhead() {
  const t = currentTarget();
  if (!t || !editingEnabled()) return;
  const time = roundMs(state.time);
  const existing = t.samples.find((s) => timeKey(s.timestamp_s) === timeKey(time));
  if (existing) { selectSample(existing.id); return; }
  const late = lateTimeProblem(time);
  if (late) { showBanner(`No sample added: the playhead at ${late}`, "info"); return; }
  const sample = templateSample(t, time);
  t.samples.push(sample);
  sortSamples(t.samples);
  markEdited(t.id);
  setSelection([sample.id]);
  renderTargetList();
}

function deleteSelected() {
  const t = currentTarget();
  if (!t || !editingEnabled() || !state.selection.size) return;
  if (state.selection.size >= t.samples.length) {
    showBanner("A target must keep at least one sample; add another one before deleting this one.", "info");
    return;
  }
  t.samples = t.samples.filter((s) => !state.selection.has(s.id));
  markEdited(t.id);
  setSelection([]);
  renderTargetList();
}

function deleteLateSamples(targetId) {
  const t = target(targetId);
  const limit = duration() + DURATION_SLACK_S;
  const kept = t.samples.filter((s) => s.timestamp_s <= limit);
  if (!kept.length) { showBanner("Every sample of this target is after the video end; move one before deleting the rest.", "info"); return; }
  t.samples = kept;
  markEdited(t.id);
  selectTarget(t.id);
}

function applyToSelection(change) {
  const t = currentTarget();
  if (!t || !editingEnabled()) return;
  for (const s of t.samples) if (state.selection.has(s.id)) change(s);
  markEdited(t.id);
  renderTimeline();
  renderTable();
}

function setInvalid(name, element, message) {
  const error = $(`error-${name}`);
  if (message) {
    state.invalidInputs.add(name);
    element.classList.add("invalid");
    if (error) { error.textContent = message; error.hidden = false; }
  } else {
    state.invalidInputs.delete(name);
    element.classList.remove("invalid");
    if (error) { error.textContent = ""; error.hidden = true; }
  }
  renderSaveStatus();
}

function shared(samples, read) {
  const values = samples.map((s) => JSON.stringify(read(s) ?? null));
  return values.every((v) => v === values[0]) ? { mixed: false, value: read(samples[0]) } : { mixed: true, value: null };
}

function editorText(sample) {
  if (!sample.has_expectation) return "";
  if (sample.expect_type === "string") {
    try { return JSON.parse(sample.expect_json); } catch (_) { return sample.expect_json; }
  }
  return sample.expect_json;
}

function renderInspector() {
  const panel = $("inspector");
  const t = currentTarget();
  const samples = selectedSamples();
  const disabled = editingEnabled() ? "" : "disabled";
  if (!t) { panel.innerHTML = `<h2>Inspector</h2><p class="hint">This case has no targets to edit.</p>`; return; }
  if (!samples.length) {
    const defaults = t.sample_defaults;
    panel.innerHTML = `<h2>${esc(t.label || t.id)}</h2>
      <p class="hint">Select a sample on the timeline or in the table, or press <b>A</b> to add one at the playhead.</p>
      <p class="hint">Defaults: field <code>${esc(defaults.field ?? "—")}</code>, compare <code>${esc(defaults.compare.mode ?? "inferred")}${defaults.compare.tolerance !== null ? " ±" + defaults.compare.tolerance : ""}</code></p>
      ${t.details_yaml ? `<pre class="source">${esc(t.details_yaml)}</pre>` : ""}`;
    return;
  }
  const single = samples.length === 1 ? samples[0] : null;
  const hasExpect = shared(samples, (s) => s.has_expectation);
  const expectType = shared(samples, (s) => (s.has_expectation ? s.expect_type : "null"));
  const expectJson = shared(samples, (s) => (s.has_expectation ? s.expect_json : null));
  const field = shared(samples, (s) => s.field);
  const mode = shared(samples, (s) => s.compare.mode);
  const tolerance = shared(samples, (s) => s.compare.tolerance);
  const comment = shared(samples, (s) => s.comment);
  const ignore = shared(samples, (s) => s.ignore);
  const mixed = (value) => (value.mixed ? `placeholder="(mixed)"` : "");
  const title = single
    ? `Sample at ${esc(formatSeconds(single.timestamp_s))} s`
    : `${samples.length} samples, ${esc(formatSeconds(samples[0].timestamp_s))}–${esc(formatSeconds(samples[samples.length - 1].timestamp_s))} s`;
  const draftChecked = !hasExpect.mixed && !hasExpect.value;
  const valueText = expectJson.mixed ? "" : editorText(samples[0]);
  panel.innerHTML = `
    <h2>${title}</h2>
    ${single ? `<div class="row">
      <label>Time (s)<input id="insp-time" type="number" min="0" step="0.001" value="${esc(formatSeconds(single.timestamp_s))}" ${disabled}></label>
      <label>&nbsp;<button type="button" id="insp-move" ${disabled} title="Move this sample to the playhead">Move to playhead</button></label>
    </div><p id="error-time" class="field-error" hidden></p>` : ""}
    <label class="check"><input id="insp-draft" type="checkbox" ${draftChecked ? "checked" : ""} ${disabled}> Draft (no expectation yet)</label>
    <div class="row">
      <label>Type<select id="insp-type" ${disabled}>
        ${expectType.mixed ? `<option value="" selected>(mixed)</option>` : ""}
        ${EXPECT_TYPES.map((k) => `<option value="${k}" ${!expectType.mixed && expectType.value === k ? "selected" : ""}>${k}</option>`).join("")}
      </select></label>
    </div>
    <label>Expectation <span id="insp-value-hint" class="muted"></span>
      <textarea id="insp-value" rows="3" spellcheck="false" ${mixed(expectJson)} ${disabled}>${esc(valueText)}</textarea></label>
    <p id="error-value" class="field-error" hidden></p>
    <label>Field (dot path into the observation)<input id="insp-field" type="text" value="${esc(field.value ?? "")}" ${mixed(field)} placeholder="${field.mixed ? "(mixed)" : "whole observation"}" ${disabled}></label>
    <div class="row">
      <label>Compare<select id="insp-mode" ${disabled}>
        ${mode.mixed ? `<option value="__mixed" selected>(mixed)</option>` : ""}
        <option value="" ${!mode.mixed && !mode.value ? "selected" : ""}>inferred</option>
        ${COMPARE_MODES.map((m) => `<option value="${m}" ${!mode.mixed && mode.value === m ? "selected" : ""}>${m}</option>`).join("")}
      </select></label>
      <label>Tolerance<input id="insp-tolerance" type="number" min="0" step="any" value="${tolerance.mixed || tolerance.value === null ? "" : esc(tolerance.value)}" ${mixed(tolerance)} ${disabled}></label>
    </div>
    <p id="error-tolerance" class="field-error" hidden></p>
    <label>Comment<textarea id="insp-comment" rows="2" ${mixed(comment)} ${disabled}>${esc(comment.value ?? "")}</textarea></label>
    <label>Ignore reason (ignored samples are not evaluated)<input id="insp-ignore" type="text" value="${esc(ignore.value ?? "")}" ${mixed(ignore)} ${disabled}></label>
    <div class="actions">
      <span class="muted">${single ? esc(single.id) : ""}</span>
      <button type="button" id="insp-delete" class="danger" ${disabled}>Delete ${samples.length > 1 ? samples.length + " samples" : "sample"}</button>
    </div>`;
  wireInspector(samples);
}

function updateValueControls() {
  const draft = $("insp-draft").checked;
  $("insp-type").disabled = draft || !editingEnabled();
  $("insp-value").disabled = draft || !editingEnabled();
  const type = $("insp-type").value;
  $("insp-value-hint").textContent = draft ? "" : type === "string" ? "(plain text)" : "(JSON)";
}

function finiteNumbers(value) {
  if (typeof value === "number") return isFinite(value);
  if (value && typeof value === "object") return Object.values(value).every(finiteNumbers);
  return true;
}

function parseEditorValue(type, text) {
  if (type === "string") return { json: JSON.stringify(text), type: "string" };
  const trimmed = text.trim();
  if (!trimmed) return { error: "Enter a JSON value." };
  let value;
  try { value = JSON.parse(trimmed); } catch (error) {
    return { error: type === "" || type === "number" || type === "boolean" || type === "null" ? `Not valid JSON: ${error.message}` : `Not valid JSON: ${error.message}` };
  }
  if (!finiteNumbers(value)) return { error: "Numbers must be finite: this one is too large to store." };
  const inferred = inferType(value);
  if (type && type !== inferred) return { error: `The value is ${inferred === "array" || inferred === "object" ? "an" : "a"} ${inferred}, but the type says ${type}.`, inferred };
  return { json: trimmed, type: inferred };
}

function wireInspector(samples) {
  const single = samples.length === 1 ? samples[0] : null;
  updateValueControls();
  if (single) {
    // An emptied or mistyped box (`1.5e`) has the value "", which Number() reads as 0: not a time to move to.
    $("insp-time").addEventListener("change", (event) => moveSample(single.id, event.target.value === "" ? NaN : Number(event.target.value), event.target));
    $("insp-move").addEventListener("click", () => moveSample(single.id, roundMs(state.time), $("insp-time")));
  }
  $("insp-draft").addEventListener("change", (event) => {
    const draft = event.target.checked;
    updateValueControls();
    if (draft) {
      setInvalid("value", $("insp-value"), null);
      applyToSelection((s) => { s.has_expectation = false; s.expect_type = "null"; s.expect_json = "null"; });
    } else {
      commitValue();
    }
  });
  $("insp-type").addEventListener("change", (event) => {
    const type = event.target.value;
    const area = $("insp-value");
    const parsed = parseEditorValue(type, area.value);
    if (parsed.error) area.value = type === "string" ? "" : TYPE_TEMPLATES[type] || "";
    updateValueControls();
    commitValue();
  });
  $("insp-value").addEventListener("input", () => {
    const type = $("insp-type").value;
    if (type !== "string") {
      // The type follows what is typed, unless the value does not parse yet. A JSON string becomes
      // plain text (the string type's editing form), or its quotes would be saved as part of it.
      let value;
      let parsed = false;
      try { value = JSON.parse($("insp-value").value.trim()); parsed = true; } catch (_) { /* keep */ }
      if (parsed) {
        $("insp-type").value = inferType(value);
        if (typeof value === "string") $("insp-value").value = value;
      }
    }
    updateValueControls();
    commitValue();
  });
  $("insp-field").addEventListener("input", (event) => {
    const value = event.target.value.trim();
    applyToSelection((s) => { s.field = value || null; });
  });
  $("insp-mode").addEventListener("change", (event) => {
    if (event.target.value === "__mixed") return;
    const value = event.target.value || null;
    applyToSelection((s) => { s.compare.mode = value; });
  });
  $("insp-tolerance").addEventListener("input", (event) => {
    const text = event.target.value.trim();
    const value = text === "" ? null : Number(text);
    if (value !== null && (!isFinite(value) || value < 0)) { setInvalid("tolerance", event.target, "Tolerance must be a number ≥ 0."); return; }
    setInvalid("tolerance", event.target, null);
    applyToSelection((s) => { s.compare.tolerance = value; });
  });
  $("insp-comment").addEventListener("input", (event) => {
    const value = event.target.value.trim();
    applyToSelection((s) => { s.comment = value ? event.target.value.replace(/^\s+|\s+$/g, "") : null; });
  });
  $("insp-ignore").addEventListener("input", (event) => {
    const value = event.target.value.trim();
    applyToSelection((s) => { s.ignore = value || null; });
  });
  $("insp-delete").addEventListener("click", deleteSelected);
}

function commitValue() {
  if ($("insp-draft").checked) return;
  const area = $("insp-value");
  const type = $("insp-type").value;
  if (type === "" && !area.value.trim()) return; // mixed values left alone
  const parsed = parseEditorValue(type, area.value);
  if (parsed.error) { setInvalid("value", area, parsed.error); return; }
  setInvalid("value", area, null);
  applyToSelection((s) => { s.has_expectation = true; s.expect_type = parsed.type; s.expect_json = parsed.json; });
  renderResultBox();
}

// Why a sample time cannot be saved in this case's video, or null.
function lateTimeProblem(time) {
  const end = duration();
  if (!end || time <= end + DURATION_SLACK_S) return null;
  return `${formatSeconds(time)} s is after the end of the video (${formatSeconds(end)} s); use a time up to ${formatSeconds(round9(end + DURATION_SLACK_S))} s.`;
}

function moveSample(id, time, input) {
  const t = currentTarget();
  const sample = t?.samples.find((s) => s.id === id);
  if (!sample) return;
  if (!isFinite(time) || time < 0) { setInvalid("time", input, "Time must be a finite number ≥ 0."); return; }
  const late = lateTimeProblem(round9(time));
  if (late) { setInvalid("time", input, late); return; }
  const rounded = round9(time);
  const clash = t.samples.find((s) => s.id !== id && Math.abs(timeKey(s.timestamp_s) - timeKey(rounded)) <= 1);
  if (clash) { setInvalid("time", input, `Another sample is already at ${formatSeconds(clash.timestamp_s)} s.`); return; }
  setInvalid("time", input, null);
  sample.timestamp_s = rounded;
  sortSamples(t.samples);
  markEdited(t.id);
  renderTimeline();
  renderTable();
  renderInspector();
  seek(rounded);
}

// Ranges: the same arithmetic the case loader uses (repeated addition, 1e-9 end epsilon, 9 decimals).
function expandRange(start, end, every) {
  const times = [];
  let current = start;
  while (current < end - 1e-9 && times.length <= 10000) { times.push(round9(current)); current += every; }
  return times;
}

function openRangeDialog() {
  const t = currentTarget();
  if (!t || !editingEnabled()) return;
  const every = state.doc.every_s || 0.5;
  const start = roundMs(state.time);
  const near = nearestSample(t, start);
  $("range-target").textContent = `Target: ${t.label || t.id}`;
  $("range-start").value = formatSeconds(start);
  $("range-end").value = formatSeconds(roundMs(Math.min(start + 4 * every, Math.max(duration(), start + every))));
  $("range-every").value = formatSeconds(every);
  $("range-draft").checked = !(near && near.has_expectation);
  $("range-expect").value = near && near.has_expectation ? near.expect_json : "";
  $("range-expect").disabled = $("range-draft").checked;
  $("range-error").hidden = true;
  $("range-dialog").showModal();
}

function addRangeFromDialog(event) {
  event.preventDefault();
  const t = currentTarget();
  const start = Number($("range-start").value);
  const end = Number($("range-end").value);
  const every = Number($("range-every").value);
  const error = $("range-error");
  const fail = (message) => { error.textContent = message; error.hidden = false; };
  if (![start, end, every].every(isFinite) || start < 0) return fail("Start, end and every must be numbers; start ≥ 0.");
  if (end <= start) return fail("End must be greater than start.");
  if (every <= 0) return fail("Every must be greater than 0.");
  const times = expandRange(start, end, every);
  if (times.length > 10000) return fail("That range would make more than 10,000 samples.");
  const late = times.length ? lateTimeProblem(times[times.length - 1]) : null;
  if (late) return fail(`The range's last sample, at ${late}`);
  const draft = $("range-draft").checked;
  let expectJson = "null";
  let expectType = "null";
  if (!draft) {
    const parsed = parseEditorValue("", $("range-expect").value);
    if (parsed.error) return fail(parsed.error);
    expectJson = parsed.json;
    expectType = parsed.type;
  }
  const replace = $("range-replace").checked;
  const inside = (s) => s.timestamp_s >= start - 1e-9 && s.timestamp_s < end - 1e-9;
  const keys = new Set(times.map(timeKey));
  const kept = t.samples.filter((s) => !(replace && inside(s)));
  const clash = kept.find((s) => [...keys].some((k) => Math.abs(k - timeKey(s.timestamp_s)) <= 1));
  if (clash) return fail(`A sample already exists at ${formatSeconds(clash.timestamp_s)} s; tick "Replace" to overwrite it.`);
  if (!kept.length && !times.length) return fail("The target would have no samples left.");
  const near = nearestSample(t, start);
  const base = near && !near.ignore ? near : null;
  const added = times.map((time) => ({
    id: newSampleId(), timestamp_s: time, has_expectation: !draft, expect_type: expectType, expect_json: expectJson,
    field: base ? base.field : t.sample_defaults.field,
    compare: base ? { ...base.compare } : { ...t.sample_defaults.compare },
    comment: null, ignore: null, origin: null,
  }));
  t.samples = kept.concat(added);
  sortSamples(t.samples);
  $("range-dialog").close();
  markEdited(t.id);
  setSelection(added.map((s) => s.id));
  renderTargetList();
  seek(start);
}

// ---------------------------------------------------------------------------------------------
// Earlier-run result beside the frame

function renderResultBox() {
  const box = $("result-box");
  const t = currentTarget();
  let sample = selectedSamples()[0] || null;
  if (!sample && t) sample = t.samples.find((s) => timeKey(s.timestamp_s) === timeKey(state.time)) || null;
  const outcome = sample ? outcomeFor(t.id, sample) : null;
  if (!outcome) { box.hidden = true; return; }
  const show = (value) => `<code>${esc(JSON.stringify(value))}</code>`;
  const rows = [`<div class="status ${esc(outcome.status)}">Last run: ${esc(outcome.status)} at ${esc(formatSeconds(outcome.timestamp_s))} s${outcome.statuses.length > 1 ? ` (trials: ${esc(outcome.statuses.join(", "))})` : ""}</div>`];
  if (outcome.status !== "ignored") {
    rows.push(`<span class="muted">Expected</span>${show(outcome.expected)}`);
    rows.push(`<span class="muted">Observed</span>${show(outcome.observed_value)}`);
    if (outcome.field) rows.push(`<span class="muted">Field</span><code>${esc(outcome.field)}</code>`);
  }
  if (outcome.reason) rows.push(`<span class="muted">Reason</span><span>${esc(outcome.reason)}</span>`);
  if (outcome.stale) rows.push(`<span class="muted">Note</span><span>The expectation was edited after this run.</span>`);
  box.innerHTML = rows.join("");
  box.hidden = false;
}

// ---------------------------------------------------------------------------------------------
// Page

function renderAll({ keepInspector = false } = {}) {
  renderCaseList();
  renderTargetList();
  renderCaseHead();
  renderIssues();
  renderTimeline();
  renderTable();
  if (!keepInspector) renderInspector();
  renderResultBox();
  renderSaveStatus();
  renderResultsSource();
}

// The address names the case, the target and the playhead's time (`?case=…&target=…&time=2.4`), kept
// up to date as the playhead moves (with replaceState, no history entry per move), so a reload or a shared
// address opens the same place.
function updateUrl() {
  clearTimeout(state.urlTimer);
  state.urlTimer = null;
  const params = new URLSearchParams();
  if (state.caseId) params.set("case", state.caseId);
  if (state.selectedTarget) params.set("target", state.selectedTarget);
  if (state.caseId && state.time > 0) params.set("time", formatSeconds(round9(state.time)));
  const address = `${location.pathname}?${params}`;
  if (address !== location.pathname + location.search) history.replaceState(null, "", address);
}

// A drag across the timeline seeks many times a second: the address follows once the playhead rests.
function scheduleUrlUpdate() {
  if (state.loading || !state.caseId) return;
  clearTimeout(state.urlTimer);
  state.urlTimer = setTimeout(updateUrl, 150);
}

function isTyping(element) {
  if (!element) return false;
  if (element.tagName === "TEXTAREA" || element.tagName === "SELECT") return true;
  return element.tagName === "INPUT" && !["checkbox", "radio", "range", "button"].includes(element.type);
}

function onKey(event) {
  if (document.querySelector("dialog[open]")) return;
  if (event.key === "Escape") {
    if (isTyping(document.activeElement)) document.activeElement.blur();
    else setSelection([]);
    return;
  }
  if (isTyping(document.activeElement) || event.metaKey || event.ctrlKey || event.altKey) return;
  if (!state.doc) return;
  const handled = {
    " ": () => togglePlay(),
    ArrowLeft: () => nudge(event.shiftKey ? -1 : -0.1),
    ArrowRight: () => nudge(event.shiftKey ? 1 : 0.1),
    ",": () => stepFrame(-1),
    ".": () => stepFrame(1),
    "[": () => jumpSample(-1),
    "]": () => jumpSample(1),
    a: () => addSampleAtPlayhead(),
    A: () => addSampleAtPlayhead(),
    r: () => openRangeDialog(),
    R: () => openRangeDialog(),
    Delete: () => deleteSelected(),
    Backspace: () => deleteSelected(),
    "+": () => zoomBy(1.5),
    "=": () => zoomBy(1.5),
    "-": () => zoomBy(1 / 1.5),
    "?": () => $("help-dialog").showModal(),
  }[event.key];
  if (handled) { event.preventDefault(); handled(); }
}

function zoomBy(factor) {
  const zoom = $("zoom");
  zoom.value = String(Math.min(Number(zoom.max), Math.max(1, Number(zoom.value) * factor)));
  renderTimeline();
}

function wire() {
  $("case-filter").addEventListener("input", renderCaseList);
  $("target-filter").addEventListener("input", () => { renderTargetList(); renderTimeline(); });
  $("case-list").addEventListener("click", (event) => {
    const item = event.target.closest("li[data-case]");
    if (item && item.dataset.case !== state.caseId) openCase(item.dataset.case);
  });
  $("target-list").addEventListener("click", (event) => {
    const item = event.target.closest("li[data-target]");
    if (item) selectTarget(item.dataset.target);
  });
  $("lane-labels").addEventListener("click", (event) => {
    const item = event.target.closest("[data-target]");
    if (item) selectTarget(item.dataset.target);
  });
  $("reload-button").addEventListener("click", reloadFromDisk);
  $("help-button").addEventListener("click", () => $("help-dialog").showModal());
  $("play-button").addEventListener("click", togglePlay);
  $("time-input").addEventListener("change", (event) => {
    const value = Number(event.target.value);
    if (event.target.value.trim() !== "" && isFinite(value) && value >= 0) { $("video").pause(); seek(value); }
    // The box shows where the playhead is: a time past the end (the playhead stops there) or one that is no
    // time kept showing what was typed, as if the playhead were at it.
    event.target.value = playheadText();
  });
  document.querySelectorAll("[data-nudge]").forEach((b) => b.addEventListener("click", () => nudge(Number(b.dataset.nudge))));
  document.querySelectorAll("[data-step]").forEach((b) => b.addEventListener("click", () => stepFrame(Number(b.dataset.step))));
  $("prev-sample").addEventListener("click", () => jumpSample(-1));
  $("next-sample").addEventListener("click", () => jumpSample(1));
  $("rate-select").addEventListener("change", (event) => { $("video").playbackRate = Number(event.target.value); });
  $("add-sample").addEventListener("click", addSampleAtPlayhead);
  $("add-range").addEventListener("click", openRangeDialog);
  $("zoom").addEventListener("input", renderTimeline);
  $("only-selected").addEventListener("change", renderTimeline);
  $("range-form").addEventListener("submit", addRangeFromDialog);
  $("range-cancel").addEventListener("click", () => $("range-dialog").close());
  $("range-draft").addEventListener("change", (event) => { $("range-expect").disabled = event.target.checked; });
  $("samples-body").addEventListener("click", onTableClick);
  activateWithKeys($("case-list"), "li[data-case]");
  activateWithKeys($("target-list"), "li[data-target]");
  activateWithKeys($("samples-body"), "tr[data-group], tr[data-sample]");

  const canvas = $("timeline-canvas");
  canvas.addEventListener("mousedown", onTimelineDown);
  canvas.addEventListener("mousemove", onTimelineMove);
  canvas.addEventListener("mouseleave", () => { $("tooltip").hidden = true; });
  window.addEventListener("mouseup", () => { state.dragging = false; });

  const video = $("video");
  video.addEventListener("loadedmetadata", onVideoReady);
  video.addEventListener("error", onVideoError);
  video.addEventListener("play", () => { $("play-button").textContent = "Pause"; requestAnimationFrame(playLoop); });
  video.addEventListener("pause", () => { $("play-button").textContent = "Play"; state.time = video.currentTime; updatePlayhead(); scheduleFrame(); renderResultBox(); scheduleUrlUpdate(); });
  video.addEventListener("seeked", () => { if (video.paused) updatePlayhead(); });

  document.addEventListener("keydown", onKey);
  window.addEventListener("resize", () => renderTimeline());
  window.addEventListener("beforeunload", (event) => {
    if (hasUnsavedWork()) { event.preventDefault(); event.returnValue = ""; }
  });
  window.addEventListener("pagehide", saveOnLeave);
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") saveOnLeave(); });
}

async function start() {
  wire();
  try {
    await loadEvalDirectory();
  } catch (error) {
    $("empty-state").textContent = `Could not load the eval directory: ${error.message}`;
    document.body.dataset.ready = "true";
    return;
  }
  const params = new URLSearchParams(location.search);
  const wanted = params.get("case");
  const time = params.has("time") ? Number(params.get("time")) : null;
  const chosen = state.cases.find((c) => c.id === wanted || c.name === wanted) || (wanted ? null : state.cases.find((c) => c.status === "ready") || state.cases[0]);
  if (wanted && !chosen) $("empty-state").textContent = `No case named ${wanted}. Choose one on the left.`;
  else if (chosen) await openCase(chosen.id, { targetId: params.get("target"), time });
  document.body.dataset.ready = "true";
}

// Tests and the benchmark read these.
window.assayEditor = { state, flushSave, seek, selectSample, openCase };

start();
