// radsift search page: plain JavaScript, no build step.
// Report text is only ever put into the page as text nodes (never parsed as HTML), so a report
// containing markup is shown as written and cannot run anything.
"use strict";

(function () {
  const TOKEN_KEY = "radsift-token";
  const $ = (id) => document.getElementById(id);

  const form = $("search-form");
  const qInput = $("q");
  const hitList = $("hit-list");
  const statusBox = $("status");
  const welcome = $("welcome");
  const panel = $("report-panel");
  const panelBody = $("report-body");
  const panelTitle = $("report-title");

  // overrides: {finding: status} flipped on the reading chips; they belong to the query in readFor.
  // view: what the results area shows ("search", or "saved" for a saved search's run); exportParams:
  // the /api/export parameters of what it shows; reportQuery: the query an opened report is read with.
  const state = { filters: [], hits: [], health: null, openId: null, lastFocus: null, searching: 0,
    overrides: {}, readFor: null, last: null, view: null, exportParams: null, exportInclude: null,
    reportQuery: null, saved: [], hashOffset: 0 };
  const STATUSES = ["present", "absent", "uncertain", "ignore"];

  // -- DOM helpers --------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  // Highlight ranges ([start, end] of matched words) as mark ranges.
  function highlightRanges(spans, shift) {
    return (spans || []).map(([a, b]) => ({ start: a + (shift || 0), end: b + (shift || 0) }));
  }

  // Mentions of the query's findings ({finding, status, cue, start, end}) as mark ranges that say their status.
  function mentionRanges(mentions) {
    return (mentions || []).map((m) => ({
      start: m.start, end: m.end, cls: "mention st-" + m.status,
      title: m.finding + ": " + m.status + (m.cue ? " (cue: " + m.cue + ")" : ""),
      data: { finding: m.finding, status: m.status },
    }));
  }

  // text[from, to) with ranges wrapped in <mark>. Ranges are clamped and sorted defensively; where two
  // overlap the earlier in the list wins (mentions are listed before word highlights).
  function marked(text, ranges, from, to) {
    from = from || 0;
    to = to === undefined ? text.length : to;
    const frag = document.createDocumentFragment();
    const taken = [];
    (ranges || []).forEach((r, order) => {
      const a = Math.max(from, Math.min(r.start, to));
      const b = Math.max(from, Math.min(r.end, to));
      if (b > a && !taken.some((t) => a < t.b && t.a < b)) taken.push({ a, b, r, order });
    });
    taken.sort((x, y) => x.a - y.a);
    let pos = from;
    for (const { a, b, r } of taken) {
      if (a > pos) frag.append(document.createTextNode(text.slice(pos, a)));
      const attrs = { class: r.cls || null, title: r.title || null, text: text.slice(a, b) };
      for (const [k, v] of Object.entries(r.data || {})) attrs["data-" + k] = v;
      frag.append(el("mark", attrs));
      pos = b;
    }
    if (pos < to) frag.append(document.createTextNode(text.slice(pos, to)));
    return frag;
  }

  function titleCase(name) {
    return name ? name.charAt(0).toUpperCase() + name.slice(1).replace(/_/g, " ") : "";
  }

  function shorten(text, limit) {
    const flat = text.replace(/\s+/g, " ").trim();
    return flat.length > limit ? flat.slice(0, limit).replace(/\s+\S*$/, "") + " …" : flat;
  }

  // -- API ----------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  // One call with the token (asked for, then the call repeated, on a 401); the raw response.
  async function send(path, options) {
    const opts = options || {};
    const headers = Object.assign({ Accept: "application/json" }, opts.headers || {});
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    let response;
    try {
      response = await fetch(path, Object.assign({ cache: "no-store" }, opts, { headers }));
    } catch (err) {
      throw new ApiError(0, "The radsift server cannot be reached. Is it still running?");
    }
    if (response.status === 401) {
      await askForToken(token ? "That token was not accepted. Check it and try again." : null);
      return send(path, options);
    }
    return response;
  }

  // The error of a failed response: its JSON "detail" when it has one.
  async function failure(response) {
    let body = null;
    try {
      body = await response.json();
    } catch (err) {
      body = null;
    }
    const detail = body && body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : "";
    return new ApiError(response.status, detail || "The server answered " + response.status + ".");
  }

  async function api(path, options) {
    const response = await send(path, options);
    if (!response.ok) throw await failure(response);
    try {
      return await response.json();
    } catch (err) {
      return null;
    }
  }

  let tokenWaiters = null;
  function askForToken(error) {
    const dialog = $("token-dialog");
    const errorBox = $("token-error");
    sessionStorage.removeItem(TOKEN_KEY);
    errorBox.hidden = !error;
    errorBox.textContent = error || "";
    if (!tokenWaiters) {
      tokenWaiters = [];
      $("token-input").value = "";
      dialog.showModal();
    }
    return new Promise((resolve) => tokenWaiters.push(resolve));
  }

  $("token-form").addEventListener("submit", (event) => {
    const value = $("token-input").value.trim();
    if (!value) {
      event.preventDefault();
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, value);
    const waiters = tokenWaiters || [];
    tokenWaiters = null;
    waiters.forEach((resolve) => resolve());
  });
  // The token cannot be skipped: Esc on the dialog would leave every call failing.
  $("token-dialog").addEventListener("cancel", (event) => event.preventDefault());

  // -- health and filters -------------------------------------------------------------------
  async function loadHealth() {
    try {
      const health = await api("/api/health");
      state.health = health;
      const idx = health.index;
      const reports = (idx.counts.reports || 0).toLocaleString();
      $("index-info").textContent = reports + " reports · " + (idx.model || "unknown model") + (health.auth ? " · token" : "");
      $("version").textContent = health.version;
      setupFilters(idx.metadata_keys || []);
      $("timeline-form").hidden = !(idx.metadata_keys || []).includes("patient");
      setupTargets(idx.sections || []);
    } catch (err) {
      $("index-info").textContent = "not connected";
      showError(err);
    }
  }

  function setupTargets(sections) {
    for (const target of ["findings", "impression"]) {
      const radio = $("target-" + target);
      const missing = sections.length > 0 && !sections.includes(target);
      radio.disabled = missing;
      if (missing && radio.checked) $("target-report").checked = true;
    }
  }

  function setupFilters(keys) {
    const select = $("filter-key");
    clear(select);
    keys.forEach((key) => select.append(el("option", { value: key, text: key })));
    $("filters-row").hidden = keys.length === 0;
  }

  function addFilter() {
    const key = $("filter-key").value;
    // "~": any part of the value, in any case (key~value); "=": exactly the value (key=value).
    const op = $("filter-op").value === "=" ? "=" : "~";
    const value = $("filter-value").value.trim();
    if (!key || !value) {
      $("filter-value").focus();
      return;
    }
    if (!state.filters.some((f) => f.key === key && f.op === op && f.value === value)) state.filters.push({ key, op, value });
    $("filter-value").value = "";
    renderFilters();
    if (qInput.value.trim()) search();
  }

  function renderFilters() {
    const chips = $("filter-chips");
    clear(chips);
    state.filters.forEach((f, i) => {
      const words = f.op === "~" ? "contains" : "is";
      chips.append(el("li", { class: "chip" },
        el("span", { class: "chip-key", text: f.key }), " ", el("span", { class: "chip-op", text: words }), " ",
        el("span", { text: f.value }),
        el("button", {
          type: "button", class: "chip-remove", "aria-label": "Remove filter " + f.key + " " + words + " " + f.value,
          onclick: () => {
            state.filters.splice(i, 1);
            renderFilters();
            if (qInput.value.trim()) search();
          },
        }, "✕")));
    });
  }

  $("filter-add").addEventListener("click", addFilter);
  $("filter-value").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      addFilter();
    }
  });

  // -- search -------------------------------------------------------------------------------
  function currentParams() {
    const target = form.querySelector("input[name=target]:checked");
    return {
      q: qInput.value.trim(),
      target: target ? target.value : "report",
      mode: $("mode").value,
      level: $("level").value,
      k: $("k").value,
      negation: $("negation").checked ? "aware" : "ignore",
    };
  }

  // The reading overrides as the API takes them: finding=status (only those that belong to this query).
  function overrideParams(q) {
    if (state.readFor !== q) return [];
    return Object.entries(state.overrides).map(([f, s]) => f + "=" + s);
  }

  function saveToHash(p, offset) {
    // The fragment never reaches the server, so queries stay out of its logs.
    const h = new URLSearchParams({ q: p.q, target: p.target, mode: p.mode, level: p.level, k: p.k });
    if (p.negation === "ignore") h.set("negation", "ignore");
    overrideParams(p.q).forEach((o) => h.append("reading", o));
    if (offset > 0) h.set("offset", String(offset));
    history.replaceState(null, "", "#" + h.toString());
  }

  // The search in the link (false when it names none); its page's offset in state.hashOffset.
  function loadFromHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    if (!h.get("q")) return false;
    const offset = Number(h.get("offset"));
    state.hashOffset = Number.isInteger(offset) && offset > 0 ? offset : 0;
    qInput.value = h.get("q");
    const radio = $("target-" + h.get("target"));
    if (radio) radio.checked = true;
    for (const name of ["mode", "level", "k"]) {
      const select = $(name);
      if (h.get(name) && [...select.options].some((o) => o.value === h.get(name))) select.value = h.get(name);
    }
    $("negation").checked = h.get("negation") !== "ignore";
    showNegation();
    state.overrides = {};
    for (const item of h.getAll("reading")) {
      const cut = item.lastIndexOf("=");
      if (cut > 0 && STATUSES.includes(item.slice(cut + 1))) state.overrides[item.slice(0, cut)] = item.slice(cut + 1);
    }
    state.readFor = qInput.value.trim();
    return true;
  }

  // Run the search in the form; offset: the page (hits to skip). Anything but the pager starts
  // at the first page, so a changed query or option never lands on a later page of another list.
  async function search(offset) {
    offset = Number.isInteger(offset) && offset > 0 ? offset : 0;
    const p = currentParams();
    if (!p.q) {
      qInput.focus();
      return;
    }
    if (state.readFor !== p.q) state.overrides = {}; // a new query is read afresh
    saveToHash(p, offset);
    if (p.level === "passage") return searchPassages(p);
    const params = new URLSearchParams({ q: p.q, k: p.k, mode: p.mode, level: p.level, target: p.target,
      negation: p.negation });
    state.filters.forEach((f) => params.append("where", f.key + f.op + f.value));
    overrideParams(p.q).forEach((o) => params.append("reading", o));
    const key = params.toString(); // the search without its page
    // The band of the hit just before this page, when it is the page shown now (paging forward).
    const last = state.view === "search" ? state.last : null;
    const before = last && last.key === key && last.result.hits.length &&
      last.result.offset + last.result.count === offset ? last.result.hits[last.result.hits.length - 1].band : null;
    if (offset) params.set("offset", String(offset));
    const ticket = ++state.searching;
    document.body.classList.add("busy");
    setStatus("Searching…");
    try {
      const result = await api("/api/search?" + params.toString());
      if (ticket !== state.searching) return; // a newer search has started
      state.readFor = p.q;
      state.last = { result, p, key };
      state.view = "search";
      state.exportParams = exportParamsOf(p.q, { mode: p.mode, target: p.target, negation: p.negation,
        where: state.filters.map((f) => f.key + f.op + f.value), reading: overrideParams(p.q) });
      state.exportInclude = null; // the Cohort menu decides
      state.reportQuery = result.reading.findings.length
        ? { q: p.q, negation: p.negation, mode: p.mode, reading: overrideParams(p.q) } : null;
      renderReading(result);
      renderResults(result, p, before);
    } catch (err) {
      if (ticket !== state.searching) return;
      if (err.status === 422 && Object.keys(state.overrides).length && /^reading:/.test(err.message)) {
        state.overrides = {}; // an override the query no longer names (an edited link): read it afresh
        return search(offset);
      }
      showError(err);
    } finally {
      if (ticket === state.searching) document.body.classList.remove("busy");
    }
  }

  // Section passages (GET /api/passages): "entity | aspect" or a question; one ranked list, no pages.
  async function searchPassages(p) {
    const params = new URLSearchParams({ q: p.q, k: p.k, mode: p.mode });
    state.filters.forEach((f) => params.append("where", f.key + f.op + f.value));
    const ticket = ++state.searching;
    document.body.classList.add("busy");
    setStatus("Searching passages…");
    try {
      const result = await api("/api/passages?" + params.toString());
      if (ticket !== state.searching) return;
      state.view = "passages";
      state.last = null;
      state.exportParams = null;
      state.reportQuery = null;
      $("reading-row").hidden = true;
      renderPassages(result, p);
    } catch (err) {
      if (ticket === state.searching) showError(err);
    } finally {
      if (ticket === state.searching) document.body.classList.remove("busy");
    }
  }

  function renderPassages(result, p) {
    welcome.hidden = true;
    clear(hitList);
    hideResultBar();
    state.hits = result.hits;
    const about = result.aspect ? "“" + result.entity + "” · aspect " + result.aspect : "question";
    if (!result.hits.length) {
      clear(statusBox);
      statusBox.className = "status empty";
      statusBox.append(el("strong", { text: "No passages match “" + result.query + "”" }),
        el("div", { text: (result.aspect ? "No section of aspect “" + result.aspect + "” was found near it. " : "") +
          "Try another aspect, a plain question, or other words." }));
      return;
    }
    setStatus(result.hits.length + " passage" + (result.hits.length === 1 ? "" : "s") + " · " + about + " · " +
      MODE_WORDS[p.mode] + " · " + Math.round(result.took_ms) + " ms");
    result.hits.forEach((hit) => hitList.append(renderPassage(hit)));
  }

  // A passage: its note, heading and aspect, the text with the sentences naming the entity
  // underlined and its words marked.
  function renderPassage(hit) {
    const body = el("p", { class: "passage-text" });
    const words = highlightRanges(hit.highlights);
    let pos = 0;
    for (const [a, b] of hit.sentences || []) {
      if (a > pos) body.append(document.createTextNode(hit.text.slice(pos, a)));
      body.append(el("span", { class: "matched-sentence" }, marked(hit.text, words, a, b)));
      pos = b;
    }
    if (pos < hit.text.length) body.append(document.createTextNode(hit.text.slice(pos)));
    const item = hitItem(hit, "hit passage-hit",
      el("div", { class: "hit-head" },
        el("span", { class: "rank", text: hit.rank }),
        el("span", { class: "report-id", text: hit.report_id }),
        el("span", { class: "badge badge-heading", text: titleCase(hit.heading) }),
        el("span", { class: "badge badge-aspect", "data-aspect": hit.aspect, title: "aspect of this heading",
          text: hit.aspect }),
        el("span", { class: "score", title: "retrieval score (comparable within this search only)", text: hit.score.toFixed(3) })),
      body,
      el("div", { class: "hit-foot" },
        el("span", { class: "meta", text: (hit.sentences || []).length + " matching sentence" +
          ((hit.sentences || []).length === 1 ? "" : "s") }),
        el("button", { type: "button", class: "link open", onclick: () => openReport(hit, item) }, "Open note →")));
    return item;
  }

  // /api/export parameters for a query and its options (mode, target, negation, where, reading,
  // alpha, concepts: those a search and a saved search share).
  function exportParamsOf(q, options) {
    const params = new URLSearchParams({ q });
    for (const name of ["mode", "target", "negation", "alpha", "concepts"]) {
      const value = options[name];
      if (value !== null && value !== undefined && value !== "") params.set(name, String(value));
    }
    (options.where || []).forEach((w) => params.append("where", w));
    (options.reading || []).forEach((r) => params.append("reading", r));
    return params;
  }

  function setStatus(text, kind) {
    clear(statusBox);
    statusBox.className = "status" + (kind ? " " + kind : "");
    if (text) statusBox.append(text);
  }

  // An error in the status box; a failed search also clears the results, a failed export
  // (keepResults, with its own title) leaves them.
  function showError(err, keepResults, title) {
    if (!keepResults) {
      welcome.hidden = true;
      clear(hitList);
      hideResultBar();
    }
    clear(statusBox);
    statusBox.className = "status error";
    statusBox.append(
      el("strong", { text: err.status ? (title || "The search service reported an error") + " (" + err.status + ")"
        : "Connection problem" }),
      el("div", { text: err.message }));
  }

  // -- the query's reading: chips the user can flip ----------------------------------------------
  const STATUS_WORDS = { present: "present", absent: "absent", uncertain: "uncertain", ignore: "ignored" };

  function showNegation() {
    const on = $("negation").checked;
    $("negation-word").textContent = on ? "aware" : "ignored";
    $("reading-row").classList.toggle("is-off", !on);
  }

  function renderReading(result) {
    const row = $("reading-row");
    const chips = $("reading-chips");
    clear(chips);
    const asRead = result.read_as || result.reading;
    const now = {};
    (result.reading.findings || []).forEach((f) => { now[f.finding] = f.status; });
    asRead.findings.forEach((f) => {
      const status = now[f.finding] || "ignore";
      const source = f.source === "open" ? "read outside the lexicon"
        : f.source === "linked" ? "understood from “" + f.via + "” (similarity " + Number(f.score).toFixed(2) + ")" +
          (f.beside ? "; beside your words “" + f.beside + "”, which rank first (set either to ignored to drop it)" : "")
          : f.source === "symptom" ? "a cause of “" + f.via + "”, or " + (f.any_of || []).join(", ") +
            (f.beside ? "; beside your words “" + f.beside + "”, which rank first (set either to ignored to drop it)" : "")
          : "lexicon finding";
      const op = f.beside ? "also" : f.source === "linked" || f.source === "symptom" ? "understood as" : null;
      chips.append(readingChip(f.finding, source, f.cue, status, STATUSES, f.status, op));
    });
    if (asRead.side) {
      chips.append(readingChip("side", asRead.chamber ? "a heart chamber's side in the query (asked of the chambers)"
        : "side words in the query", null, result.reading.side ? asRead.side : "ignore",
        [asRead.side, "ignore"], asRead.side));
    }
    if (asRead.location) {
      chips.append(readingChip("location", "lobe, base, apex or body place in the query", null,
        result.reading.location ? asRead.location : "ignore", [asRead.location, "ignore"], asRead.location));
    }
    if (asRead.change) {
      chips.append(readingChip("change", "a change since the last study in the query", null,
        result.reading.change ? asRead.change : "ignore", [asRead.change, "ignore"], asRead.change));
    }
    if (asRead.degree) {
      chips.append(readingChip("degree", "a degree of the finding in the query (mild, small, severe ...)", null,
        result.reading.degree ? asRead.degree : "ignore", [asRead.degree, "ignore"], asRead.degree));
    }
    if (asRead.pattern) {
      chips.append(readingChip("pattern", "a pattern of the finding's look in the query (streaky, platelike ...)", null,
        result.reading.pattern ? asRead.pattern : "ignore", [asRead.pattern, "ignore"], asRead.pattern));
    }
    if (asRead.alone && asRead.findings.length) {
      chips.append(readingChip("alone", "nothing else in the query (otherwise normal): fewest other findings first",
        null, result.reading.alone ? "nothing else" : "ignore", ["nothing else", "ignore"], "nothing else"));
    }
    const notes = [];
    if (result.reading.note) notes.push(result.reading.note);
    if (result.negation === "ignore" && asRead.findings.length) notes.push("negation ignored: ranked by similarity only");
    $("reading-note").textContent = notes.join(" · ");
    row.hidden = !asRead.findings.length && !asRead.side && !asRead.location && !asRead.change && !notes.length;
  }

  // One chip: the finding, where its reading came from, and a menu to flip its status.
  // op: the word before the finding ("understood as" a link in the words' place, "also" one beside them).
  function readingChip(finding, source, cue, status, choices, readStatus, op) {
    const select = el("select", {
      class: "chip-status st-" + status, "aria-label": "Read " + finding + " as",
      onchange: () => {
        const value = select.value;
        if (value === readStatus) delete state.overrides[finding];
        else state.overrides[finding] = value;
        state.readFor = qInput.value.trim();
        search();
      },
    }, ...choices.map((c) => el("option", { value: c, text: STATUS_WORDS[c] || c, selected: c === status })));
    const title = source + (cue ? "; cue in the query: “" + cue + "”" : "") +
      (status !== readStatus ? "; read as " + readStatus + ", changed by you" : "");
    return el("li", { class: "chip reading-chip" + (status !== readStatus ? " flipped" : ""), "data-finding": finding,
      "data-status": status, title },
    op ? el("span", { class: "chip-op", text: op }) : null, op ? " " : null,
    el("span", { class: "chip-key", text: finding }), " ", select);
  }

  $("negation").addEventListener("change", () => {
    showNegation();
    if (qInput.value.trim()) search();
  });

  const TARGET_WORDS = { findings: "findings", impression: "impressions", report: "whole reports" };
  const MODE_WORDS = { hybrid: "hybrid", dense: "semantic", bm25: "keyword" };

  // before: the band of the hit ranked just before this page, when known.
  function renderResults(result, p, before) {
    welcome.hidden = true;
    clear(hitList);
    state.hits = result.hits;
    const filtersNote = state.filters.length ? " with " + state.filters.length + " filter" + (state.filters.length > 1 ? "s" : "") : "";
    $("saved-notes").hidden = true;
    if (!result.hits.length && result.offset > 0) {
      // Past the end of the list (a link to a page that no longer exists): the pager leads back.
      setStatus("No more results: the ranked list holds " + fmt(result.total) + ".", "empty");
      showResultBar(result, true);
      return;
    }
    if (!result.hits.length) {
      hideResultBar();
      clear(statusBox);
      statusBox.className = "status empty";
      statusBox.append(
        el("strong", { text: "No reports match “" + result.query + "”" }),
        el("div", {
          text: "in " + TARGET_WORDS[p.target] + filtersNote + ". " +
            (state.filters.length ? "Remove a filter, or " : "") +
            (p.mode === "bm25" ? "try Hybrid or Semantic mode (keyword mode needs a shared word), or " : "") +
            "search the whole report with other words.",
        }));
      return;
    }
    const unit = result.level === "sentence" ? "sentence" : "report";
    const plural = result.count === 1 ? unit : unit + "s";
    setStatus(result.count + " " + plural + " · " + TARGET_WORDS[p.target] + " · " + MODE_WORDS[p.mode] +
      filtersNote + " · " + Math.round(result.took_ms) + " ms");
    showResultBar(result, true);
    // Every report stating the reading ranks first: when this page starts (or ends) exactly where
    // they end, the boundary lies on the page's edge.
    const statesEnd = result.matching !== null && result.matching !== undefined && !result.matching_is_lower_bound
      ? result.matching : null;
    if (!before && result.offset > 0 && statesEnd === result.offset) before = "states";
    let previous = before;
    result.hits.forEach((hit, i) => {
      const boundary = bandBoundary(previous, hit.band);
      if (boundary) hitList.append(boundary);
      hitList.append(renderHit(hit, i));
      previous = hit.band;
    });
    if (previous === "states" && result.more && statesEnd === result.offset + result.count) {
      hitList.append(bandBoundary("states", "next-page")); // what follows is on the next page
    }
  }

  function fmt(n) {
    return Number(n).toLocaleString();
  }

  // "23 reports state the reading · 3,826 ranked · showing 1–25"
  function countsText(result) {
    const unit = result.level === "sentence" ? "sentence" : "report";
    const parts = [];
    if (result.matching !== null && result.matching !== undefined) {
      const n = result.matching;
      parts.push((result.matching_is_lower_bound ? "at least " : "") + fmt(n) + " " + unit + (n === 1 ? "" : "s") +
        (n === 1 ? " states" : " state") + " the reading");
    }
    parts.push(fmt(result.total) + " ranked");
    if (result.count) parts.push("showing " + fmt(result.offset + 1) + "–" + fmt(result.offset + result.count));
    return parts.join(" · ");
  }

  // The bar above the hits: counts, Export, and the pager (paging: whether this view pages).
  function showResultBar(result, paging) {
    $("result-bar").hidden = false;
    $("counts").textContent = countsText(result);
    $("export-note").textContent = "";
    const hasPrev = paging && result.offset > 0;
    const hasNext = paging && !!result.more;
    $("pager").hidden = !paging;
    $("pager-bottom").hidden = !paging || !result.count || !(hasPrev || hasNext);
    for (const suffix of ["", "-bottom"]) {
      $("prev" + suffix).disabled = !hasPrev;
      $("next" + suffix).disabled = !hasNext;
    }
  }

  function hideResultBar() {
    $("result-bar").hidden = true;
    $("pager-bottom").hidden = true;
    $("saved-notes").hidden = true;
  }

  function turnPage(direction, fromBottom) {
    const last = state.last;
    if (state.view !== "search" || !last) return;
    const r = last.result;
    const offset = direction > 0 ? r.offset + r.count : Math.max(0, r.offset - r.k);
    if (direction > 0 && !r.more) return;
    search(offset).then(() => {
      if (fromBottom) $("results").scrollIntoView({ block: "start" });
    });
  }

  $("prev").addEventListener("click", () => turnPage(-1, false));
  $("next").addEventListener("click", () => turnPage(1, false));
  $("prev-bottom").addEventListener("click", () => turnPage(-1, true));
  $("next-bottom").addEventListener("click", () => turnPage(1, true));

  // A line across the list where one band ends: the reports stating the reading, or the related ones.
  const BOUNDARY_WORDS = {
    states: "The reports stating the query's reading end here",
    related: "Related reports end here",
  };

  function bandBoundary(from, to) {
    if (!from || !to || from === to) return null;
    if (!(from === "states" || (from === "related" && to === "unlikely"))) return null;
    const words = BOUNDARY_WORDS[from];
    return el("li", { class: "band-boundary", role: "separator", "aria-label": words, "data-testid": "band-boundary",
      "data-from": from, "data-to": to }, el("span", { text: words }));
  }

  const BAND_TITLES = {
    states: "States the query's reading",
    related: "Does not state the reading, but reports like it were often relevant",
    unlikely: "Unlikely to be relevant (or states the opposite)",
  };

  // "states · 95%": the hit's band and its relevance estimate.
  function bandLabel(band, relevance) {
    if (!band) return null;
    const pct = relevance === null || relevance === undefined ? "" : " · " + Math.round(relevance * 100) + "%";
    return el("span", { class: "band-label band-" + band, "data-band": band,
      title: (BAND_TITLES[band] || band) + (pct ? "; estimated relevance " + Math.round(relevance * 100) + "%" : "") },
    band + pct);
  }

  // A result line that opens its report on click, Enter or Space (buttons inside it keep their own action).
  function hitItem(hit, className, ...children) {
    const item = el("li", {
      class: className, tabindex: "0", "data-report-id": hit.report_id, "aria-label": "Result " + hit.rank + ", report " + hit.report_id,
      onclick: (event) => {
        if (event.target.closest("button")) return;
        openReport(hit, item);
      },
      onkeydown: (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          openReport(hit, item);
        }
      },
    }, ...children);
    return item;
  }

  function renderHit(hit, i) {
    const sentence = hit.sentence;
    const sectionName = hit.section || (sentence && sentence.section) || "";
    // Show the other half of the findings/impression pair beside the match: the diagnosis
    // that goes with matched findings, or the findings behind a matched impression.
    const other = sectionName === "findings" ? "impression" : sectionName === "impression" ? "findings" : null;
    const context = other && hit.sections && hit.sections[other] ? hit.sections[other] : null;
    const meta = Object.entries(hit.metadata || {}).filter(([, v]) => v !== "" && v !== null).slice(0, 4);

    const item = hitItem(hit, "hit",
    el("div", { class: "hit-head" },
      el("span", { class: "rank", text: hit.rank }),
      el("span", { class: "report-id", text: hit.report_id }),
      sectionName ? el("span", { class: "badge badge-" + sectionName, text: titleCase(sectionName) }) : null,
      bandLabel(hit.band, hit.relevance),
      el("span", { class: "score", title: "retrieval score (comparable within this search only)", text: hit.score.toFixed(3) })),
    el("p", { class: "sentence" },
      sentence ? marked(sentence.text, mentionRanges(hit.reading).concat(highlightRanges(hit.highlights))) : ""),
    statusTags(hit.reading),
    context ? el("p", { class: "context" }, el("span", { class: "context-label", text: titleCase(other) + ": " }), shorten(context, 220)) : null,
    el("div", { class: "hit-foot" },
      el("ul", { class: "meta" }, ...meta.map(([k, v]) => el("li", {}, el("span", { class: "meta-key", text: k }), " ", shorten(String(v), 40)))),
      el("button", { type: "button", class: "link open", onclick: () => openReport(hit, item) }, "Open report →")));
    return item;
  }

  // What the matched sentence states about the query's findings: one tag per finding and status.
  function statusTags(mentions) {
    const seen = new Map();
    (mentions || []).forEach((m) => {
      const key = m.finding + "\u0000" + m.status;
      if (!seen.has(key)) seen.set(key, m);
    });
    if (!seen.size) return null;
    return el("ul", { class: "status-tags", "aria-label": "What this sentence states" },
      ...[...seen.values()].map((m) => el("li", {
        class: "status-tag st-" + m.status, "data-finding": m.finding, "data-status": m.status,
        title: m.cue ? "decided by “" + m.cue + "”" : "no negation or uncertainty cue",
      }, m.finding + ": " + m.status + (m.cue ? " · “" + m.cue + "”" : ""))));
  }

  // "pneumothorax: 1 present, 2 absent" for the mentions marked in an opened report.
  function mentionSummary(mentions) {
    const counts = new Map();
    mentions.forEach((m) => {
      const c = counts.get(m.finding) || {};
      c[m.status] = (c[m.status] || 0) + 1;
      counts.set(m.finding, c);
    });
    return el("ul", { class: "status-tags mention-summary", "aria-label": "Mentions of the query's findings" },
      ...[...counts.entries()].map(([finding, c]) => el("li", { class: "status-tag" }, finding + ": ",
        ...["present", "absent", "uncertain"].filter((st) => c[st]).map((st, i) =>
          el("span", { class: "st-text st-" + st, text: (i ? ", " : "") + c[st] + " " + st })))));
  }

  // -- full report panel ----------------------------------------------------------------------
  async function openReport(hit, item) {
    state.lastFocus = item || document.activeElement;
    document.querySelectorAll(".hit.active").forEach((n) => n.classList.remove("active"));
    if (item) item.classList.add("active");
    state.openId = hit.report_id;
    panel.hidden = false;
    document.body.classList.add("panel-open");
    panelTitle.textContent = hit.report_id;
    clear(panelBody);
    panelBody.append(el("p", { class: "muted", text: "Loading report…" }));
    try {
      // With the query (and its flipped reading): every mention of its findings comes back with its status.
      const rq = state.reportQuery;
      const params = new URLSearchParams();
      if (rq) {
        params.set("q", rq.q);
        params.set("negation", rq.negation || "aware");
        params.set("mode", rq.mode || "hybrid");
        (rq.reading || []).forEach((o) => params.append("reading", o));
      }
      const query = params.toString();
      const report = await api("/api/reports/" + encodeURIComponent(hit.report_id) + (query ? "?" + query : ""));
      if (state.openId !== hit.report_id) return;
      renderReport(report, hit);
    } catch (err) {
      clear(panelBody);
      panelBody.append(el("div", { class: "status error" },
        el("strong", { text: err.status === 404 ? "Report not found" : "Could not load the report" }),
        el("div", { text: err.message })));
    }
    panel.focus({ preventScroll: true });
  }

  function renderReport(report, hit) {
    clear(panelBody);
    const s = hit.sentence;
    const mentions = report.mentions || {};
    const all = Object.values(mentions).flat();
    if (all.length) panelBody.append(mentionSummary(all));
    for (const [name, text] of Object.entries(report.sections)) {
      if (!text || !text.trim()) continue;
      const body = el("p", { class: "section-text" });
      const ranges = mentionRanges(mentions[name]);
      if (s && hit.section === name && s.end <= text.length && text.slice(s.start, s.end) === s.text) {
        const withWords = ranges.concat(highlightRanges(hit.highlights, s.start));
        body.append(marked(text, withWords, 0, s.start),
          el("span", { class: "matched" }, marked(text, withWords, s.start, s.end)),
          marked(text, withWords, s.end, text.length));
      } else {
        body.append(marked(text, ranges));
      }
      panelBody.append(el("section", { class: "report-section" + (hit.section === name ? " is-match" : "") },
        el("h3", { text: titleCase(name) }), body));
    }
    const meta = Object.entries(report.metadata || {});
    if (report.metadata && report.metadata.patient) {
      panelBody.append(el("button", { type: "button", class: "secondary timeline-open", "data-testid": "open-timeline",
        onclick: () => openTimeline(report.metadata.patient) }, "Timeline of patient " + report.metadata.patient));
    }
    if (meta.length) {
      const dl = el("dl", { class: "meta-table" });
      meta.forEach(([k, v]) => dl.append(el("dt", { text: k }), el("dd", { text: v === "" ? "—" : String(v) })));
      panelBody.append(el("section", { class: "report-section" }, el("h3", { text: "Details" }), dl));
    }
    // Bring the matched sentence into view inside the panel only (scrollIntoView would move the page).
    const matched = panelBody.querySelector(".matched");
    if (matched) panelBody.scrollTop = Math.max(0, matched.offsetTop - panelBody.clientHeight / 3);
  }

  // -- a patient's timeline (GET /api/timeline/{patient}: the data of `radsift timeline`) ----------------
  async function openTimeline(patient) {
    state.lastFocus = document.activeElement;
    state.openId = "timeline:" + patient;
    panel.hidden = false;
    document.body.classList.add("panel-open");
    panelTitle.textContent = "Patient " + patient;
    clear(panelBody);
    panelBody.append(el("p", { class: "muted", text: "Loading timeline…" }));
    try {
      const timeline = await api("/api/timeline/" + encodeURIComponent(patient));
      if (state.openId !== "timeline:" + patient) return;
      renderTimeline(timeline);
    } catch (err) {
      clear(panelBody);
      panelBody.append(el("div", { class: "status error", "data-testid": "timeline-error" },
        el("strong", { text: err.status === 404 ? "Patient not found" : "Could not load the timeline" }),
        el("div", { text: err.message })));
    }
    panel.focus({ preventScroll: true });
  }

  // One row per report (oldest first), one column per finding any report mentions; a cell says the
  // status in that report and carries the sentence deciding it as its title.
  function renderTimeline(timeline) {
    clear(panelBody);
    panelBody.append(el("p", { class: "muted", text: timeline.count + " reports, oldest first · " +
      (timeline.findings.length ? timeline.findings.length + " findings mentioned" : "no finding mentioned") }));
    const head = el("tr", {}, el("th", { scope: "col", text: "Date" }), el("th", { scope: "col", text: "Report" }),
      ...timeline.findings.map((f) => el("th", { scope: "col", class: "tl-finding", text: f })));
    const body = el("tbody");
    timeline.reports.forEach((r) => {
      const open = el("button", { type: "button", class: "link", onclick: () => openReport({ report_id: r.report_id }, open) },
        r.report_id);
      body.append(el("tr", { "data-report-id": r.report_id },
        el("td", { class: "tl-date", text: r.date || "(no date)" }),
        el("td", {}, open, r.exam ? el("div", { class: "muted tl-exam", text: r.exam }) : null),
        ...timeline.findings.map((f) => {
          const status = r.findings[f] || "not mentioned";
          return el("td", { class: "tl-status st-" + status.replace(" ", "-"), "data-finding": f, "data-status": status,
            title: r.evidence[f] ? "“" + r.evidence[f] + "”" : null, text: status === "not mentioned" ? "·" : status });
        })));
    });
    panelBody.append(el("div", { class: "tl-wrap" },
      el("table", { class: "timeline", "data-testid": "timeline" }, el("thead", {}, head), body)));
  }

  $("timeline-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const patient = $("timeline-patient").value.trim();
    if (patient) openTimeline(patient);
  });

  // quietly: leave the focus where it is (the results are being replaced).
  function closeReport(quietly) {
    if (panel.hidden) return;
    panel.hidden = true;
    state.openId = null;
    document.body.classList.remove("panel-open");
    document.querySelectorAll(".hit.active").forEach((n) => n.classList.remove("active"));
    if (quietly !== true && state.lastFocus && document.body.contains(state.lastFocus)) state.lastFocus.focus();
  }

  $("report-close").addEventListener("click", () => closeReport());

  // -- keyboard -------------------------------------------------------------------------------
  document.addEventListener("keydown", (event) => {
    if ($("token-dialog").open) return;
    const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
    if (event.key === "Escape") {
      closeReport();
      return;
    }
    if (event.key === "/" && !typing) {
      event.preventDefault();
      qInput.focus();
      qInput.select();
      return;
    }
    if ((event.key === "ArrowDown" || event.key === "ArrowUp") && !typing) {
      const items = [...hitList.querySelectorAll(".hit")];
      if (!items.length) return;
      event.preventDefault();
      const at = items.indexOf(document.activeElement.closest(".hit"));
      const next = event.key === "ArrowDown" ? Math.min(at + 1, items.length - 1) : Math.max(at - 1, 0);
      items[at < 0 ? 0 : next].focus();
    }
  });
  qInput.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown") {
      const first = hitList.querySelector(".hit");
      if (first) {
        event.preventDefault();
        event.stopPropagation(); // the document's arrow handler would move one further
        first.focus();
      }
    }
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    search();
  });
  // Changing an option re-runs the current search straight away.
  form.querySelectorAll("input[name=target], select#mode, select#level, select#k").forEach((control) =>
    control.addEventListener("change", () => {
      if (qInput.value.trim()) search();
    }));
  document.querySelectorAll(".example").forEach((button) =>
    button.addEventListener("click", () => {
      qInput.value = button.textContent;
      search();
    }));

  // -- export: the cohort of what the results show, as CSV with its provenance ------------------
  // A file from memory, saved through a temporary link (no page navigation, nothing inline).
  function download(blob, name) {
    const url = URL.createObjectURL(blob);
    const link = el("a", { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  async function exportCohort() {
    if (!state.exportParams) return;
    const params = new URLSearchParams(state.exportParams);
    const include = state.exportInclude !== null ? state.exportInclude : $("include").value;
    if (include) params.set("include", include);
    params.set("format", "csv");
    const button = $("export");
    const note = $("export-note");
    button.disabled = true;
    note.textContent = "Exporting…";
    try {
      const response = await send("/api/export?" + params.toString(), { headers: { Accept: "text/csv, application/json" } });
      if (!response.ok) throw await failure(response);
      const blob = await response.blob();
      const header = response.headers.get("X-Radsift-Provenance");
      let provenance = null;
      try {
        provenance = header ? JSON.parse(header) : null;
      } catch (err) {
        provenance = null;
      }
      download(blob, "cohort.csv");
      if (header) {
        const text = provenance ? JSON.stringify(provenance, null, 1) + "\n" : header;
        download(new Blob([text], { type: "application/json" }), "cohort.csv.provenance.json");
      }
      const rows = provenance && Number.isInteger(provenance.rows) ? provenance.rows : null;
      note.textContent = (rows === null ? "Exported" : "Exported " + fmt(rows) + " report" + (rows === 1 ? "" : "s")) +
        " to cohort.csv" + (header ? " (provenance: cohort.csv.provenance.json)" : "");
    } catch (err) {
      note.textContent = "";
      showError(err, true, "The export was refused");
    } finally {
      button.disabled = false;
    }
  }

  $("export").addEventListener("click", exportCohort);

  // -- saved searches -----------------------------------------------------------------------------
  function showSavedError(message) {
    const box = $("saved-error");
    box.textContent = message || "";
    box.hidden = !message;
  }

  async function loadSaved(fresh) {
    try {
      const answer = await api("/api/saved");
      state.saved = (answer && answer.saved) || [];
      renderSaved(fresh);
    } catch (err) {
      showSavedError("Saved searches could not be loaded: " + err.message);
    }
  }

  // "findings · hybrid · 1 filter · negation ignored": a saved search's options in words.
  function optionWords(options, include) {
    const o = options || {};
    const words = [];
    if (o.target) words.push(TARGET_WORDS[o.target] || o.target);
    if (o.mode) words.push(MODE_WORDS[o.mode] || o.mode);
    const where = o.where || [];
    if (where.length) words.push(where.join(", "));
    if (o.negation === "ignore") words.push("negation ignored");
    (o.reading || []).forEach((r) => words.push("read " + r.replace("=", " as ")));
    if (include) words.push("cohort: " + include);
    return words.join(" · ");
  }

  function renderSaved(fresh) {
    const list = $("saved-list");
    clear(list);
    $("saved-count").textContent = state.saved.length ? "(" + state.saved.length + ")" : "";
    if (!state.saved.length) {
      list.append(el("li", { class: "saved-empty muted", text: "None yet: search, name it and save it to run it again later." }));
      return;
    }
    state.saved.forEach((s) => {
      const newOnly = el("input", { type: "checkbox", "data-testid": "saved-new" });
      const last = s.last_run && s.last_run.time ? "last run " + s.last_run.time.replace("T", " ").replace(/\+00:00$/, " UTC") : "never run";
      list.append(el("li", { class: "saved-item" + (s.name === fresh ? " fresh" : ""), "data-name": s.name, "data-testid": "saved-item" },
        el("div", { class: "saved-main" },
          el("span", { class: "saved-name", text: s.name }),
          el("span", { class: "saved-query", text: "“" + s.query + "”" }),
          el("span", { class: "saved-opts", text: [optionWords(s.options, s.include), last].filter(Boolean).join(" · ") })),
        el("div", { class: "saved-actions" },
          el("label", { class: "saved-new", title: "Only reports added to the index since this search's last run" },
            newOnly, " new only"),
          el("button", { type: "button", class: "secondary", "data-testid": "saved-run", "aria-label": "Run saved search " + s.name,
            onclick: () => runSaved(s, newOnly.checked) }, "Run"),
          el("button", { type: "button", class: "secondary danger", "data-testid": "saved-remove",
            "aria-label": "Remove saved search " + s.name, onclick: () => removeSaved(s.name) }, "Remove"))));
    });
  }

  async function saveSearch(event) {
    event.preventDefault();
    const name = $("saved-name").value.trim();
    const p = currentParams();
    if (!p.q) {
      showSavedError("Type a query to save first.");
      qInput.focus();
      return;
    }
    if (p.level === "passage") {
      showSavedError("Saved searches keep report searches: set Show to reports or sentences to save one.");
      return;
    }
    if (!name) {
      showSavedError("Name the search to save it.");
      $("saved-name").focus();
      return;
    }
    const include = $("include").value;
    const body = { name, q: p.q, mode: p.mode, target: p.target, negation: p.negation,
      where: state.filters.map((f) => f.key + f.op + f.value), reading: overrideParams(p.q), include: include || null };
    const button = $("save-search");
    button.disabled = true;
    try {
      await api("/api/saved", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      showSavedError("");
      $("saved-name").value = "";
      $("saved-box").open = true;
      await loadSaved(name);
    } catch (err) {
      showSavedError(err.message);
      $("saved-name").focus();
    } finally {
      button.disabled = false;
    }
  }

  $("save-form").addEventListener("submit", saveSearch);

  async function removeSaved(name) {
    try {
      await api("/api/saved/" + encodeURIComponent(name), { method: "DELETE" });
      showSavedError("");
    } catch (err) {
      showSavedError(err.message);
    }
    await loadSaved();
  }

  // Run a saved search: its cohort (or only the reports new since its last run) in the results.
  async function runSaved(saved, newOnly) {
    const ticket = ++state.searching; // a search started meanwhile wins, and this one wins over older ones
    document.body.classList.add("busy");
    setStatus("Running saved search “" + saved.name + "”…");
    try {
      // POST .../run records the run, so the next "new only" lists only reports added after it.
      const run = await api("/api/saved/" + encodeURIComponent(saved.name) + "/run?new=" + (newOnly ? "true" : "false"),
                            { method: "POST" });
      if (ticket !== state.searching) return;
      showSavedError("");
      renderSavedRun(run, saved);
    } catch (err) {
      if (ticket !== state.searching) return;
      showError(err, false, "The saved search could not be run");
    } finally {
      if (ticket === state.searching) document.body.classList.remove("busy");
    }
  }

  function renderSavedRun(run, saved) {
    closeReport(true); // an open report was read with another query
    welcome.hidden = true;
    clear(hitList);
    const o = run.options || {};
    state.view = "saved";
    state.hits = [];
    state.exportParams = exportParamsOf(run.query, o);
    state.exportInclude = saved.include || ""; // the saved search's own cohort, not the menu's
    state.reportQuery = { q: run.query, negation: o.negation, mode: o.mode, reading: o.reading || [] };
    setStatus("Saved search “" + run.name + "”: “" + run.query + "”" + (optionWords(o) ? " · " + optionWords(o) : ""));
    const rows = run.rows || [];
    showResultBar({ level: "report", matching: run.matching, matching_is_lower_bound: false, total: run.total,
      offset: 0, count: 0 }, false);
    $("counts").textContent = countsText({ level: "report", matching: run.matching, total: run.total, count: 0 }) +
      " · " + fmt(rows.length) + (run.new_only ? " new" : "") + " in this cohort";

    const notes = $("saved-notes");
    clear(notes);
    if (run.new_only && run.first_run) {
      notes.append(el("p", { class: "note", "data-testid": "saved-first-run",
        text: "No earlier run of this search is recorded, so every report of its cohort is listed. This run is " +
          "recorded: the next “new only” run lists only reports added to the index after it." }));
    } else if (run.first_run) {
      notes.append(el("p", { class: "note", "data-testid": "saved-first-run",
        text: "No earlier run of this search is recorded." }));
    } else if (run.new_only) {
      const when = run.last_run && run.last_run.time ? " (" + run.last_run.time + ")" : "";
      notes.append(el("p", { class: "note", text: "Only reports added to the index since the last run" + when + "." }));
    }
    (run.warnings || []).forEach((w) => notes.append(el("p", { class: "note warning", role: "alert", text: "Warning: " + w })));
    notes.hidden = !notes.firstChild;

    if (!rows.length) {
      hitList.append(el("li", { class: "status empty saved-none",
        text: run.new_only ? "No new reports since the last run." : "No reports in this cohort." }));
      return;
    }
    let previous = null;
    rows.forEach((row) => {
      const boundary = bandBoundary(previous, row.band);
      if (boundary) hitList.append(boundary);
      hitList.append(renderRow(row));
      previous = row.band;
    });
  }

  // One row of a saved search's cohort: the report, its band, and the sentences that state the reading.
  function renderRow(row) {
    const best = row.best_sentence;
    const hit = { report_id: row.report_id, rank: row.rank, section: best ? best.section : null, sentence: best,
      highlights: [] };
    const evidence = (row.evidence || []).slice(0, 3);
    const meta = Object.entries(row.metadata || {}).filter(([, v]) => v !== "" && v !== null).slice(0, 4);
    const item = hitItem(hit, "hit saved-row",
    el("div", { class: "hit-head" },
      el("span", { class: "rank", text: row.rank }),
      el("span", { class: "report-id", text: row.report_id }),
      bandLabel(row.band, row.relevance),
      row.status ? el("span", { class: "status-tag st-" + row.status, text: row.status + (row.cue ? " · “" + row.cue + "”" : "") }) : null,
      el("span", { class: "score", title: "retrieval score (comparable within this search only)", text: Number(row.score).toFixed(3) })),
    evidence.length
      ? el("ul", { class: "evidence", "aria-label": "Sentences stating the reading" },
        ...evidence.map((e) => el("li", {},
          el("span", { class: "context-label", text: titleCase(e.section) + ": " }),
          marked(e.text, [{ start: e.mention_start - e.start, end: e.mention_end - e.start, cls: "mention st-" + e.status,
            title: e.finding + ": " + e.status + (e.cue ? " (cue: " + e.cue + ")" : ""),
            data: { finding: e.finding, status: e.status } }]))))
      : el("p", { class: "sentence" }, best ? best.text : ""),
    el("div", { class: "hit-foot" },
      el("ul", { class: "meta" }, ...meta.map(([k, v]) => el("li", {}, el("span", { class: "meta-key", text: k }), " ", shorten(String(v), 40)))),
      el("button", { type: "button", class: "link open", onclick: () => openReport(hit, item) }, "Open report →")));
    return item;
  }

  // -- ask the reports (POST /api/ask) -----------------------------------------------------------
  // The answer is put in as text; each citation [n] becomes a button that opens report n.
  function answerNodes(text, byNumber) {
    const out = [];
    const re = /\[(\d+(?:\s*,\s*\d+)*)\]/g;
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      out.push(document.createTextNode(text.slice(last, m.index)));
      const nums = m[1].split(",").map((x) => Number(x.trim()));
      out.push("[");
      nums.forEach((n, i) => {
        if (i) out.push(", ");
        const src = byNumber[n];
        out.push(src ? el("button", { type: "button", class: "cite", title: "Open report " + src.report_id,
          "data-report-id": src.report_id, onclick: (e) => openReport({ report_id: src.report_id, sentence: null,
            highlights: [] }, e.currentTarget) }, String(n)) : String(n));
      });
      out.push("]");
      last = m.index + m[0].length;
    }
    out.push(document.createTextNode(text.slice(last)));
    return out;
  }

  function renderAnswer(res) {
    const byNumber = {};
    (res.sources || []).forEach((s) => { byNumber[s.n] = s; });
    const cited = new Set((res.citations || []).map((c) => c.n));
    const answer = $("ask-answer");
    clear(answer);
    answer.append(...(res.answer ? answerNodes(res.answer, byNumber) : [el("span", { class: "muted", text: "(no text)" })]));
    const status = $("ask-status");
    status.className = "ask-status";
    status.textContent = res.status === "complete" ? "" : (res.status === "empty" ? "The model returned no text."
      : "Partial answer: cut short by the " + (res.finish_reason === "length" ? "token limit." : "timeout."));
    const notes = $("ask-notes");
    clear(notes);
    (res.notes || []).forEach((n) => notes.append(el("li", { text: n })));
    const base = $("ask-baseline");
    clear(base);
    base.hidden = !res.baseline;
    if (res.baseline) {
      base.append(el("strong", { text: "Retrieval only: " }), res.baseline.impression + " ",
        el("span", { class: "muted", text: "(report " + res.baseline.report_id + ")" }));
    }
    const list = $("ask-sources");
    clear(list);
    if (!(res.sources || []).length) list.append(el("li", { class: "muted", text: "None: the model answered alone." }));
    (res.sources || []).forEach((s) => {
      const flag = s.dropped ? " · left out: no room" : (s.truncated ? " · cut to fit" : "");
      const item = el("li", { class: cited.has(s.n) ? "cited" : null, "data-report-id": s.report_id },
        el("span", { class: "ask-num", text: "[" + s.n + "]" }),
        el("button", { type: "button", class: "link", onclick: (e) => openReport({ report_id: s.report_id,
          sentence: null, highlights: [] }, e.currentTarget) }, s.report_id),
        el("span", { class: "muted", text: (cited.has(s.n) ? " · cited" : "") + flag }));
      list.append(item);
    });
    $("ask-prompt").textContent = res.prompt || "";
    $("ask-meta").textContent = res.backend + " · " + res.model + " · " + (res.seconds || 0).toFixed(1) + " s" +
      (res.invalid_citations ? " · " + res.invalid_citations + " invalid citation(s) removed" : "");
  }

  $("ask-retrieval").addEventListener("change", () => {
    $("ask-retrieval-word").textContent = $("ask-retrieval").checked ? "on" : "off";
  });

  $("ask-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = $("ask-q").value.trim();
    const result = $("ask-result");
    result.hidden = false;
    const status = $("ask-status");
    if (!question) {
      status.className = "ask-status error";
      status.textContent = "Describe the findings or ask a question first.";
      return;
    }
    const button = $("ask-button");
    button.disabled = true;
    status.className = "ask-status";
    status.textContent = "Asking the model… (the offline model is loaded on the first question)";
    clear($("ask-answer"));
    try {
      const body = { question, task: $("ask-task").value, k: Number($("ask-k").value),
        retrieval: $("ask-retrieval").checked };
      const res = await api("/api/ask", { method: "POST", body: JSON.stringify(body),
        headers: { "Content-Type": "application/json" } });
      renderAnswer(res);
    } catch (err) {
      status.className = "ask-status error";
      status.textContent = err.message;
    } finally {
      button.disabled = false;
    }
  });

  // -- start ----------------------------------------------------------------------------------
  loadHealth().then(() => {
    loadSaved();
    if (loadFromHash()) search(state.hashOffset);
    else qInput.focus();
  });
})();
