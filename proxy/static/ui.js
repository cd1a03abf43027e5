// tap's memory browser. Plain DOM, no framework; every text from the server goes in as text (never
// as markup). The admin token comes from the box, or a session from the one-time `#code=` of `tap ui`'s link, and lives in this
// tab's sessionStorage only. The page is served by the same `tap serve` whose admin API it calls,
// so the two always match (proxy/admin.py, proxy/lifecycle_routes.py).
"use strict";

const KINDS = ["fact", "preference", "decision", "event", "instruction", "plan", "episode"];
const TOKEN_KEY = "tap-token";
const $ = (id) => document.getElementById(id);

const state = {
  view: "memories",
  scope: null,        // null: every scope
  query: "",
  offset: 0,
  limit: 50,
  total: 0,
  scopes: [],          // GET /tap/scopes (counts of active memories: current and not archived)
};

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// ---- small DOM helpers ----------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

function button(label, onclick, attrs = {}) {
  return el("button", {type: "button", onclick, ...attrs}, label);
}

function day(stamp) {
  return stamp ? new Date(stamp * 1000).toISOString().slice(0, 10) : "undated";
}

function moment(stamp) {
  return stamp ? new Date(stamp * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC" : "-";
}

function where(none = false) { // "in all scopes", or after a "no": "in any scope"
  return state.scope !== null ? `in scope “${state.scope}”` : none ? "in any scope" : "in all scopes";
}

function plural(n, one, many) { return `${n.toLocaleString("en")} ${n === 1 ? one : many}`; }

function say(id, text, kind = "") {
  const node = $(id);
  node.textContent = text;
  node.className = "status" + (kind ? " " + kind : "");
}

// ---- the API ---------------------------------------------------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: {"Authorization": "Bearer " + token(), "Content-Type": "application/json"},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (response.status === 401) showAuth("The server did not accept the token (" + (data.error || "401") + ").");
  if (!response.ok) throw new ApiError(response.status, data.error || response.statusText);
  return data;
}

const enc = encodeURIComponent;

// ---- sign-in ---------------------------------------------------------------------------------

function showAuth(reason) {
  $("auth-hint").hidden = false;
  $("auth-reason").textContent = reason;
  $("app").hidden = true;
  $("keys").hidden = true;
  $("tabs").hidden = true;
  $("sign-out").hidden = !token();
  $("token").hidden = $("connect").hidden = false;
  $("token").focus();
}

async function connect() {
  if (!token()) { showAuth("No token yet."); return; }
  try {
    await loadScopes();
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) showAuth("The server did not answer: " + err.message);
    return;
  }
  $("auth-hint").hidden = true;
  $("app").hidden = false;
  $("keys").hidden = false;
  $("tabs").hidden = false;
  $("sign-out").hidden = false;
  $("token").value = "";
  $("token").hidden = $("connect").hidden = true; // signed in: only "Sign out" is left
  await showView(state.view);
}

// ---- scopes ----------------------------------------------------------------------------------

async function loadScopes() {
  // with the number of unresolved conflicts, shown on the Conflicts tab
  const [listed, open] = await Promise.all([api("GET", "/tap/scopes"), api("GET", conflictsPath())]);
  state.scopes = listed.scopes;
  renderScopes();
  showConflictCount(open.conflicts.length);
}

function conflictsPath() { // the selected scope's conflicts (all scopes' when none is selected)
  return "/tap/conflicts" + (state.scope === null ? "" : "?scope=" + enc(state.scope));
}

function layerCount(s) {
  // the count beside a scope is of what the list shows: statements, excerpts or both
  const layer = $("layer").value;
  return layer === "memories" ? s.memories : layer === "excerpts" ? s.excerpts : s.memories + s.excerpts;
}

function renderScopes() {
  const scopes = state.scopes || [];
  const sum = (key) => scopes.reduce((total, s) => total + s[key], 0);
  const totals = {scope: null, memories: sum("memories"), excerpts: sum("excerpts")};
  const entries = [{...totals, label: "All scopes"}, ...scopes.map((s) => ({...s, label: s.scope}))];
  if (state.scope !== null && !scopes.some((s) => s.scope === state.scope)) {
    entries.push({scope: state.scope, label: state.scope, memories: 0, excerpts: 0});
  }
  $("scope-list").replaceChildren(...entries.map((entry) => el("li", {},
    button([el("span", {class: "scope-name", text: entry.label}), el("span", {class: "count", text: layerCount(entry).toLocaleString("en")})],
      () => pickScope(entry.scope),
      {"aria-current": String(entry.scope === state.scope), "data-scope": entry.scope ?? "",
       title: `${entry.label}: ${plural(entry.memories, "statement", "statements")}, ${plural(entry.excerpts, "excerpt", "excerpts")}`}))));
}

async function pickScope(scope) {
  state.scope = scope;
  state.offset = 0;
  for (const b of $("scope-list").querySelectorAll("button")) {
    b.setAttribute("aria-current", String((b.dataset.scope || null) === scope));
  }
  $("new-scope").value = scope ?? "default";
  if (state.view !== "conflicts") refreshConflictCount(); // the conflicts view counts them itself
  await showView(state.view);
}

// ---- views -----------------------------------------------------------------------------------

async function showView(view) {
  state.view = view;
  for (const name of ["memories", "conflicts", "why"]) {
    $("view-" + name).hidden = name !== view;
    const tab = $("tab-" + name);
    if (name === view) tab.setAttribute("aria-current", "page"); else tab.removeAttribute("aria-current");
  }
  if (view === "memories") await loadMemories();
  else if (view === "conflicts") await loadConflicts();
  else await loadWhy();
}

// ---- memories --------------------------------------------------------------------------------

function listParams() {
  const params = new URLSearchParams({limit: String(state.limit), offset: String(state.offset), layer: $("layer").value});
  if (state.scope !== null) params.set("scope", state.scope);
  if ($("versions").checked) params.set("all", "1");
  params.set("archived", $("archived").value); // the API lists archived ones too unless told
  return params;
}

let latest = 0; // only the newest request's answer is shown (an older, slower one must not overwrite it)

async function loadMemories() {
  const ticket = ++latest;
  say("status", "Loading…");
  try {
    if (state.query) await loadSearch(ticket); else await loadListing(ticket);
  } catch (err) {
    if (ticket === latest) say("status", err.message, "error");
  }
}

async function loadListing(ticket) {
  const data = await api("GET", "/tap/memories?" + listParams());
  if (ticket !== latest) return;
  state.total = data.total ?? data.memories.length;
  render(data.memories.map((m) => ({memory: m})));
  const which = {"0": "", "1": "archived ", all: ""}[$("archived").value];
  say("status", state.total ? `${plural(state.total, which + "memory", which + "memories")} ${where()}`
                            : which ? `No ${which}memories ${where(true)}.` : `No memories ${where(true)} yet.`);
  pager(data.memories.length, state.total);
}

async function loadSearch(ticket) {
  // the search API ranks the best `limit`; a later page asks for more and shows its slice
  const want = Math.min(state.offset + state.limit, 500);
  const params = listParams(); // the same filters as the listing: layer, archived, old versions
  params.set("q", state.query);
  params.set("limit", String(want));
  params.delete("offset");
  const data = await api("GET", "/tap/memories/search?" + params);
  if (ticket !== latest) return;
  const page = data.results.slice(state.offset, state.offset + state.limit);
  render(page);
  say("status", data.results.length
    ? `Results for “${state.query}” ${where()}, best first`
    : `Nothing relevant for “${state.query}” ${where(true)}.`);
  const more = data.results.length === want && want < 500;
  pager(page.length, more ? null : state.offset + page.length);
}

function pager(shown, total) {
  const from = shown ? state.offset + 1 : 0;
  $("range").textContent = shown
    ? `${from.toLocaleString("en")}–${(state.offset + shown).toLocaleString("en")}` + (total === null ? "" : ` of ${total.toLocaleString("en")}`)
    : "";
  $("prev").disabled = state.offset === 0;
  $("next").disabled = total !== null && state.offset + shown >= total;
}

function render(items) {
  $("list").replaceChildren(...items.map(({memory, score}) => card(memory, score)));
}

function card(memory, score) {
  const old = Boolean(memory.superseded_by);
  const meta = el("div", {class: "meta"},
    el("span", {class: "badge", text: memory.kind}),
    old ? el("span", {class: "badge old", text: "old version"}) : null,
    memory.archived ? el("span", {class: "badge warn", text: "archived"}) : null,
    (memory.conflicts_with || []).length
      ? button(`conflicts with ${memory.conflicts_with.length}`, () => showView("conflicts"), {class: "badge bad"})
      : null,
    el("span", {title: "importance 1–5", text: `importance ${memory.importance}`}),
    el("time", {title: moment(memory.valid_from || memory.created_at), text: day(memory.valid_from || memory.created_at)}),
    state.scope === null ? el("span", {text: `scope ${memory.scope}`}) : null,
    memory.tags.length ? el("span", {text: "#" + memory.tags.join(" #")}) : null,
    score === undefined ? null : el("span", {class: "score", title: "search score", text: `score ${score.toFixed(3)}`}),
    el("span", {class: "id", text: memory.id}));
  const content = el("p", {class: "content", text: memory.content});
  const item = el("li", {class: "card" + (old ? " old" : ""), "data-id": memory.id}, content, meta);
  const actions = el("div", {class: "actions", role: "group", "aria-label": "Actions"},
    button("History", () => showHistory(memory)),
    old ? null : button("Edit", () => edit(item, memory)),
    old ? null : button(memory.archived ? "Restore" : "Archive", () => archive(memory),
      {title: memory.archived ? "Recall it again" : "Set it aside: still listed under Archived, never recalled"}),
    button("Forget", () => forget(memory), {class: "danger"}));
  item.append(actions);
  return item;
}

function options(select, values, chosen) {
  select.replaceChildren(...values.map((v) => new Option(String(v), String(v), false, String(v) === String(chosen))));
  return select;
}

function edit(item, memory) {
  const area = el("textarea", {rows: 3, "aria-label": "Memory text"});
  area.value = memory.content;
  const kind = options(el("select", {"aria-label": "Kind"}), KINDS, memory.kind);
  const importance = options(el("select", {"aria-label": "Importance"}), [1, 2, 3, 4, 5], memory.importance);
  const tags = el("input", {"aria-label": "Tags, comma-separated", placeholder: "tags, comma-separated", size: 24});
  tags.value = memory.tags.join(", ");
  const save = async () => {
    const body = {
      content: area.value.trim(), kind: kind.value, importance: Number(importance.value),
      tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean),
    };
    try {
      const fresh = await api("PATCH", `/tap/memories/${enc(memory.id)}`, body);
      await loadMemories();
      say("status", `Saved as ${fresh.id}; the old version is kept in its history.`, "ok");
      focusCard(fresh.id);
    } catch (err) { say("status", err.message, "error"); }
  };
  const cancel = () => { item.replaceWith(card(memory)); focusCard(memory.id); };
  const form = el("form", {class: "edit", onsubmit: (e) => { e.preventDefault(); save(); }},
    area,
    el("div", {class: "row"},
      el("label", {}, "kind ", kind), el("label", {}, "importance ", importance), tags),
    el("div", {class: "row"},
      el("button", {type: "submit"}, "Save"), button("Cancel", cancel),
      el("span", {class: "muted", text: "Ctrl+Enter saves · Esc cancels"})));
  form.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); cancel(); }
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); }
  });
  item.replaceChildren(form);
  area.focus();
}

function focusCard(id) {
  const target = $("list").querySelector(`[data-id="${CSS.escape(id)}"] button`);
  if (target) target.focus();
}

function ask(memory) {
  const dialog = $("confirm");
  $("confirm-text").textContent = memory.content;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), {once: true});
    dialog.showModal();
    $("confirm-cancel").focus();
  });
}

async function forget(memory) {
  if (!(await ask(memory))) { say("status", "Nothing was deleted."); return; }
  try {
    const gone = await api("DELETE", `/tap/memories/${enc(memory.id)}`);
    const also = gone.excerpts && gone.excerpts.length ? ` and ${plural(gone.excerpts.length, "excerpt", "excerpts")}` : "";
    await Promise.all([loadScopes(), loadMemories()]);
    if (state.offset > 0 && !$("list").children.length) { state.offset = Math.max(0, state.offset - state.limit); await loadMemories(); }
    say("status", `Forgot ${plural(gone.deleted.length, "version", "versions")}${also}.`, "ok");
    $("main").focus();
  } catch (err) { say("status", err.message, "error"); }
}

async function archive(memory) {
  const action = memory.archived ? "restore" : "archive";
  try {
    await api("POST", `/tap/memories/${enc(memory.id)}/${action}`);
    await Promise.all([loadScopes(), loadMemories()]); // the counts are of active memories
    if (state.offset > 0 && !$("list").children.length) { state.offset = Math.max(0, state.offset - state.limit); await loadMemories(); }
    say("status", memory.archived ? `Restored “${memory.content}”: it is recalled again.`
                                  : `Archived “${memory.content}”: it is no longer recalled (listed under Archived).`, "ok");
  } catch (err) { say("status", err.message, "error"); }
}

async function showHistory(memory) {
  const dialog = $("history");
  const list = $("history-list");
  list.replaceChildren(el("li", {class: "muted", text: "Loading…"}));
  dialog.showModal();
  $("history-close").focus();
  try {
    const data = await api("GET", `/tap/memories/${enc(memory.id)}`);
    const versions = data.history;
    $("history-title").textContent = `History · ${plural(versions.length, "version", "versions")}, oldest first`;
    list.replaceChildren(...versions.map(version));
  } catch (err) {
    list.replaceChildren(el("li", {class: "status error", text: err.message}));
  }
}

function version(m) {
  // one entry of GET /tap/memories/{id} "history": a memory plus `current` and the source `turns` still kept
  const turns = m.turns;
  const merged = m.merged_from.length;
  return el("li", {"data-id": m.id},
    el("div", {class: "meta"},
      el("span", {class: m.current ? "badge ok" : "badge old", text: m.current ? "current" : "superseded"}),
      m.archived ? el("span", {class: "badge warn", text: "archived"}) : null,
      el("span", {text: `${m.kind} · importance ${m.importance}`}),
      el("time", {title: "when it was said", text: `said ${day(m.valid_from || m.created_at)}`}),
      el("time", {text: `updated ${moment(m.updated_at)}`}),
      el("span", {text: `source ${m.source}`}),
      merged ? el("span", {text: `merges ${plural(merged, "earlier memory", "earlier memories")}`}) : null,
      el("span", {class: "id", text: m.id})),
    el("p", {class: "content", text: m.content}),
    m.conversation || m.sources.length
      ? el("div", {class: "meta", text: `from ${m.conversation || "?"}${m.sources.length ? ": turns " + m.sources.join(", ") : ""}`
          + (m.sources.length && !turns.length ? " (their text is no longer kept)" : "")})
      : null,
    turns.length
      ? el("ol", {class: "turns", "aria-label": "Source turns"}, turns.map((t) => el("li", {},
          t.at ? el("time", {class: "muted", text: moment(t.at)}) : null, el("span", {text: `${t.role}: ${t.text}`}))))
      : null);
}

// ---- conflicts -------------------------------------------------------------------------------

function showConflictCount(n) {
  // the count is of the scope the views show (all scopes' when none is selected)
  const badge = $("conflict-count");
  badge.textContent = String(n);
  badge.hidden = !n;
  $("tab-conflicts").title = n ? `${plural(n, "unresolved conflict", "unresolved conflicts")} ${where()}` : "";
}

async function refreshConflictCount() {
  const scope = state.scope;
  try {
    const open = await api("GET", conflictsPath());
    if (scope === state.scope) showConflictCount(open.conflicts.length); // another scope picked since: not its count
  } catch (err) { /* the badge keeps its count; the views say what failed */ }
}

async function loadConflicts() {
  const list = $("conflicts");
  list.replaceChildren();
  say("conflicts-status", "Loading…");
  try {
    const data = await api("GET", conflictsPath());
    list.replaceChildren(...data.conflicts.map(conflict));
    showConflictCount(data.conflicts.length);
    say("conflicts-status", data.conflicts.length
      ? `${plural(data.conflicts.length, "conflict", "conflicts")} ${where()}, newest first.`
      : `No conflicts ${where(true)}.`);
  } catch (err) { say("conflicts-status", err.message, "error"); }
}

function conflict({a, b, since}) {
  const side = (keep, drop) => el("div", {class: "side", "data-id": keep.id},
    el("p", {class: "content", text: keep.content}),
    el("div", {class: "meta"},
      el("span", {class: "badge", text: keep.kind}),
      el("time", {title: `stored ${moment(keep.created_at)}`, text: `said ${day(keep.valid_from || keep.created_at)}`}),
      keep.conversation ? el("span", {text: `in ${keep.conversation}`}) : null,
      state.scope === null ? el("span", {text: `scope ${keep.scope}`}) : null,
      el("span", {class: "id", text: keep.id})),
    el("div", {class: "actions"},
      button("Keep this one", () => resolve(keep, drop), {title: "Keep this one; the other is superseded by it (kept in its history)"}),
      button("History", () => showHistory(keep))));
  return el("li", {class: "card"},
    el("div", {class: "meta", text: `in conflict since ${moment(since)}`}),
    el("div", {class: "pair"}, side(a, b), side(b, a)),
    el("div", {class: "actions"},
      button("Keep both", () => resolve(a, b, true), {title: "Both are true (say, two jobs at once): keep both and drop the mark"})));
}

async function resolve(keep, drop, both = false) {
  try {
    const body = both ? {keep: keep.id, drop: drop.id, both: true} : {keep: keep.id, drop: drop.id};
    await api("POST", "/tap/conflicts/resolve", body);
    await Promise.all([loadScopes(), loadConflicts()]);
    say("conflicts-status", both
      ? `Kept both “${keep.content}” and “${drop.content}”; they are no longer marked as a conflict.`
      : `Kept “${keep.content}”; “${drop.content}” is superseded by it (kept in its history).`, "ok");
  } catch (err) { say("conflicts-status", err.message, "error"); }
}

// ---- why injected ----------------------------------------------------------------------------

async function loadWhy() {
  $("why-detail").hidden = true;
  say("why-status", "Loading…");
  try {
    const data = await api("GET", "/tap/why?limit=50");
    const rows = data.requests.filter((r) => state.scope === null || r.scope === state.scope);
    $("why-rows").replaceChildren(...rows.map(whyRow));
    $("why-table").hidden = !rows.length;
    if (rows.length) say("why-status", `${plural(rows.length, "request", "requests")} ${where()}, newest first. Select one to see its candidates.`);
    else if (data.keep === 0) say("why-status", "This server keeps no records of requests ([why] keep = 0 in its config).");
    else say("why-status", `No proxied requests ${where(true)} in the last ${plural(data.keep_minutes, "minute", "minutes")} (records are kept that long).`);
  } catch (err) {
    $("why-table").hidden = true;
    say("why-status", err.message, "error");
  }
}

function whyRow(r) {
  const open = () => whyDetail(r.request_id, row);
  const row = el("tr", {tabindex: 0, "data-id": r.request_id, onclick: open, onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } }},
    el("td", {text: moment(r.at)}), el("td", {text: r.scope || "–"}), el("td", {text: `${r.method} ${r.path}`}),
    el("td", {class: "num", text: String(r.injected)}), el("td", {class: "num", text: `${r.recall_ms.toFixed(1)} ms`}),
    el("td", {text: r.degraded || "–"}));
  return row;
}

// each outcome's badge colour and, as `tap why` words it, why the memory was or was not injected
const OUTCOMES = {
  injected: ["ok", "in the block"],
  "over-budget": ["warn", "relevant, but no room was left for it in the block"],
  repeat: ["old", "left out: a line in the block says the same already"],
  visible: ["old", "left out: the model already sees it in the request"],
  skipped: ["old", "left out: already given"],
  "below-threshold": ["old", "below the relevance threshold"],
  superseded: ["old", "an old version"],
  archived: ["warn", "archived (restore it to have it recalled)"],
};

function reason(c) {
  const [, words] = OUTCOMES[c.outcome] || ["", c.outcome];
  return c.superseded_by ? `${words}, replaced by ${c.superseded_by}` : words;
}

// no final score: below the relevance floor, or looked up when the record was viewed
const UNSCORED = new Set(["below-threshold", "superseded", "archived"]);

const COLUMNS = [
  ["outcome", null], ["memory", null],
  ["score", "the final rank score (relevance weighed by recency and importance)"],
  ["vector", "cosine similarity of the memory to the query"],
  ["lexical", "BM25 score of the query's words in the memory"],
  ["recency", "recency weight"],
  ["importance", "importance weight"],
];

const num = (value, digits) => (value === null || value === undefined ? "–" : value.toFixed(digits));

function candidateRow(c) {
  const scored = !UNSCORED.has(c.outcome);
  return el("tr", {"data-id": c.id},
    el("td", {}, el("span", {class: "badge " + ((OUTCOMES[c.outcome] || [""])[0]), text: c.outcome})),
    el("td", {},
      el("div", {class: "content", text: c.content}),
      el("div", {class: "meta"},
        el("span", {class: "reason", text: "→ " + reason(c)}),
        el("span", {class: "muted", text: c.kind}),
        button(c.id, () => showHistory(c), {class: "link id", title: "Show this memory's history"}))),
    el("td", {class: "num", text: scored ? num(c.score, 3) : "–"}),
    el("td", {class: "num", text: num(c.vector, 3)}),
    el("td", {class: "num", text: num(c.lexical, 2)}),
    el("td", {class: "num", text: num(c.recency, 2)}),
    el("td", {class: "num", text: num(c.importance, 2)}));
}

async function whyDetail(id, row) {
  for (const r of $("why-rows").children) r.setAttribute("aria-selected", String(r === row));
  const box = $("why-detail");
  box.hidden = false;
  box.replaceChildren(el("p", {class: "muted", text: "Loading…"}));
  try {
    const d = await api("GET", `/tap/why/${enc(id)}`);
    const facts = [
      ["query", d.query || "–"],
      ["scope", d.scope || "–"],
      ["conversation", d.conversation || "–"],
      ["recall", `${plural(d.injected, "memory", "memories")} injected, in ${d.recall_ms.toFixed(1)} ms` + (d.degraded ? ` · degraded: ${d.degraded}` : "")],
      d.reused_from ? ["block", `recalled by ${d.reused_from}, an earlier request of this turn: its candidates are shown`] : null,
      ["upstream", `${d.upstream_status || "no answer"} in ${d.duration_ms.toFixed(0)} ms`],
    ].filter(Boolean);
    box.replaceChildren(
      el("h3", {text: `Request ${d.request_id} · ${d.method} ${d.path} · ${moment(d.at)}`}),
      el("dl", {}, facts.flatMap(([term, value]) => [el("dt", {text: term}), el("dd", {text: value})])),
      d.candidates.length
        ? el("div", {class: "table-wrap"}, el("table", {class: "candidates"},
            el("caption", {class: "sr-only", text: "Candidate memories"}),
            el("thead", {}, el("tr", {}, COLUMNS.map(
              ([h, title], i) => el("th", {scope: "col", class: i > 1 ? "num" : null, title, text: h})))),
            el("tbody", {}, d.candidates.map(candidateRow))))
        : el("p", {class: "muted", text: "No candidates: recall did not run for this request, or found nothing."}));
  } catch (err) {
    box.replaceChildren(el("p", {class: "status error", text: err.status === 404 ? `No record of ${id} (it may have expired).` : err.message}));
  }
}

// ---- wiring ----------------------------------------------------------------------------------

function typing(target) {
  return target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement || target.isContentEditable;
}

async function signInFromLink() {
  // `tap ui` prints /ui#code=…: a one-time code (the part after # never leaves the browser), traded
  // here for a session token; the code leaves the address bar at once. A #token=… link still works.
  const params = new URLSearchParams(location.hash.slice(1));
  const code = params.get("code"), fromLink = params.get("token");
  if (!code && !fromLink) return false;
  history.replaceState(null, "", location.pathname + location.search);
  if (fromLink) { sessionStorage.setItem(TOKEN_KEY, fromLink.trim()); return true; }
  const response = await fetch("/tap/session", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({code: code.trim()})});
  const data = await response.json().catch(() => ({}));
  if (!response.ok || !data.token) { showAuth(data.error || "The sign-in code was not accepted: run `tap ui` again."); return false; }
  sessionStorage.setItem(TOKEN_KEY, data.token);
  return true;
}

async function init() {
  const linked = window.location.hash.length > 1;
  if (linked && !(await signInFromLink())) { wire(); return; }
  window.addEventListener("hashchange", async () => { if (await signInFromLink()) connect(); });
  wire();
  connect();
}

function wire() {
  options($("new-kind"), KINDS, "fact");
  options($("new-importance"), [1, 2, 3, 4, 5], 3);
  $("new-scope").value = "default";

  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const typed = $("token").value.trim();
    if (typed) sessionStorage.setItem(TOKEN_KEY, typed);
    connect();
  });
  $("sign-out").addEventListener("click", () => {
    fetch("/tap/session", {method: "DELETE", headers: {"Authorization": "Bearer " + token()}}).catch(() => {});
    sessionStorage.removeItem(TOKEN_KEY);
    showAuth("Signed out.");
  });
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => showView(tab.dataset.view));

  $("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    state.query = $("q").value.trim();
    state.offset = 0;
    loadMemories();
  });
  $("q").addEventListener("keydown", (e) => {
    if (e.key === "Escape" && $("q").value) { e.preventDefault(); $("q").value = ""; state.query = ""; state.offset = 0; loadMemories(); }
  });
  for (const id of ["layer", "archived", "versions"]) $(id).addEventListener("change", () => { state.offset = 0; loadMemories(); });
  $("layer").addEventListener("change", renderScopes);
  $("page-size").addEventListener("change", () => { state.limit = Number($("page-size").value); state.offset = 0; loadMemories(); });
  $("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - state.limit); loadMemories(); });
  $("next").addEventListener("click", () => { state.offset += state.limit; loadMemories(); });

  $("add-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const content = $("new-content").value.trim();
    if (!content) return;
    const body = {scope: $("new-scope").value.trim() || "default", content, kind: $("new-kind").value, importance: Number($("new-importance").value)};
    try {
      const added = await api("POST", "/tap/memories", body);
      $("new-content").value = "";
      state.offset = 0;
      await Promise.all([loadScopes(), loadMemories()]);
      say("status", `Added ${added.id} to scope “${added.scope}”.`, "ok");
    } catch (err) { say("status", err.message, "error"); }
  });
  $("new-content").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); $("add-form").requestSubmit(); }
  });

  $("history-close").addEventListener("click", () => $("history").close());
  for (const dialog of document.querySelectorAll("dialog")) {
    dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close("cancel"); }); // a click on the backdrop
  }

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || document.querySelector("dialog[open]") || $("app").hidden) return;
    if (e.key === "/") {
      e.preventDefault();
      if (state.view === "memories") $("q").focus(); else showView("memories").then(() => $("q").focus());
    }
    else if (e.key === "n" && state.view === "memories" && !$("next").disabled) $("next").click();
    else if (e.key === "p" && state.view === "memories" && !$("prev").disabled) $("prev").click();
  });
}

init();
