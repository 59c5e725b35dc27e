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
  const state = { filters: [], hits: [], health: null, openId: null, lastFocus: null, searching: 0,
    overrides: {}, readFor: null, last: null };
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

  async function api(path, options) {
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    let response;
    try {
      response = await fetch(path, Object.assign({ headers, cache: "no-store" }, options || {}));
    } catch (err) {
      throw new ApiError(0, "The radsift server cannot be reached. Is it still running?");
    }
    let body = null;
    try {
      body = await response.json();
    } catch (err) {
      body = null;
    }
    if (response.status === 401) {
      await askForToken(token ? "That token was not accepted. Check it and try again." : null);
      return api(path, options);
    }
    if (!response.ok) {
      const detail = body && body.detail ? (typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)) : "";
      throw new ApiError(response.status, detail || "The server answered " + response.status + ".");
    }
    return body;
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

  function saveToHash(p) {
    // The fragment never reaches the server, so queries stay out of its logs.
    const h = new URLSearchParams({ q: p.q, target: p.target, mode: p.mode, level: p.level, k: p.k });
    if (p.negation === "ignore") h.set("negation", "ignore");
    overrideParams(p.q).forEach((o) => h.append("reading", o));
    history.replaceState(null, "", "#" + h.toString());
  }

  function loadFromHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    if (!h.get("q")) return false;
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

  async function search() {
    const p = currentParams();
    if (!p.q) {
      qInput.focus();
      return;
    }
    if (state.readFor !== p.q) state.overrides = {}; // a new query is read afresh
    saveToHash(p);
    const params = new URLSearchParams({ q: p.q, k: p.k, mode: p.mode, level: p.level, target: p.target,
      negation: p.negation });
    state.filters.forEach((f) => params.append("where", f.key + f.op + f.value));
    overrideParams(p.q).forEach((o) => params.append("reading", o));
    const ticket = ++state.searching;
    document.body.classList.add("busy");
    setStatus("Searching…");
    try {
      const result = await api("/api/search?" + params.toString());
      if (ticket !== state.searching) return; // a newer search has started
      state.readFor = p.q;
      state.last = { result, p };
      renderReading(result);
      renderResults(result, p);
    } catch (err) {
      if (ticket !== state.searching) return;
      if (err.status === 422 && Object.keys(state.overrides).length && /^reading:/.test(err.message)) {
        state.overrides = {}; // an override the query no longer names (an edited link): read it afresh
        return search();
      }
      showError(err);
    } finally {
      if (ticket === state.searching) document.body.classList.remove("busy");
    }
  }

  function setStatus(text, kind) {
    clear(statusBox);
    statusBox.className = "status" + (kind ? " " + kind : "");
    if (text) statusBox.append(text);
  }

  function showError(err) {
    welcome.hidden = true;
    clear(hitList);
    clear(statusBox);
    statusBox.className = "status error";
    statusBox.append(
      el("strong", { text: err.status ? "The search service reported an error (" + err.status + ")" : "Connection problem" }),
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
        : f.source === "linked" ? "understood from “" + f.via + "” (similarity " + Number(f.score).toFixed(2) + ")"
          : "lexicon finding";
      chips.append(readingChip(f.finding, source, f.cue, status, STATUSES, f.status, f.source === "linked"));
    });
    if (asRead.side) {
      chips.append(readingChip("side", "side words in the query", null, result.reading.side ? asRead.side : "ignore",
        [asRead.side, "ignore"], asRead.side));
    }
    const notes = [];
    if (result.reading.note) notes.push(result.reading.note);
    if (result.negation === "ignore" && asRead.findings.length) notes.push("negation ignored: ranked by similarity only");
    $("reading-note").textContent = notes.join(" · ");
    row.hidden = !asRead.findings.length && !asRead.side && !notes.length;
  }

  // One chip: the finding, where its reading came from, and a menu to flip its status.
  function readingChip(finding, source, cue, status, choices, readStatus, linked) {
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
    linked ? el("span", { class: "chip-op", text: "understood as" }) : null, linked ? " " : null,
    el("span", { class: "chip-key", text: finding }), " ", select);
  }

  $("negation").addEventListener("change", () => {
    showNegation();
    if (qInput.value.trim()) search();
  });

  const TARGET_WORDS = { findings: "findings", impression: "impressions", report: "whole reports" };
  const MODE_WORDS = { hybrid: "hybrid", dense: "semantic", bm25: "keyword" };

  function renderResults(result, p) {
    welcome.hidden = true;
    clear(hitList);
    state.hits = result.hits;
    const filtersNote = state.filters.length ? " with " + state.filters.length + " filter" + (state.filters.length > 1 ? "s" : "") : "";
    if (!result.hits.length) {
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
    result.hits.forEach((hit, i) => hitList.append(renderHit(hit, i)));
  }

  function renderHit(hit, i) {
    const sentence = hit.sentence;
    const sectionName = hit.section || (sentence && sentence.section) || "";
    // Show the other half of the findings/impression pair beside the match: the diagnosis
    // that goes with matched findings, or the findings behind a matched impression.
    const other = sectionName === "findings" ? "impression" : sectionName === "impression" ? "findings" : null;
    const context = other && hit.sections && hit.sections[other] ? hit.sections[other] : null;
    const meta = Object.entries(hit.metadata || {}).filter(([, v]) => v !== "" && v !== null).slice(0, 4);

    const item = el("li", {
      class: "hit", tabindex: "0", "data-report-id": hit.report_id, "aria-label": "Result " + hit.rank + ", report " + hit.report_id,
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
    },
    el("div", { class: "hit-head" },
      el("span", { class: "rank", text: hit.rank }),
      el("span", { class: "report-id", text: hit.report_id }),
      sectionName ? el("span", { class: "badge badge-" + sectionName, text: titleCase(sectionName) }) : null,
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
      const last = state.last;
      const params = new URLSearchParams();
      if (last && last.result.reading.findings.length) {
        params.set("q", last.p.q);
        params.set("negation", last.p.negation);
        params.set("mode", last.p.mode);
        overrideParams(last.p.q).forEach((o) => params.append("reading", o));
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
    if (meta.length) {
      const dl = el("dl", { class: "meta-table" });
      meta.forEach(([k, v]) => dl.append(el("dt", { text: k }), el("dd", { text: v === "" ? "—" : String(v) })));
      panelBody.append(el("section", { class: "report-section" }, el("h3", { text: "Details" }), dl));
    }
    // Bring the matched sentence into view inside the panel only (scrollIntoView would move the page).
    const matched = panelBody.querySelector(".matched");
    if (matched) panelBody.scrollTop = Math.max(0, matched.offsetTop - panelBody.clientHeight / 3);
  }

  function closeReport() {
    if (panel.hidden) return;
    panel.hidden = true;
    state.openId = null;
    document.body.classList.remove("panel-open");
    document.querySelectorAll(".hit.active").forEach((n) => n.classList.remove("active"));
    if (state.lastFocus && document.body.contains(state.lastFocus)) state.lastFocus.focus();
  }

  $("report-close").addEventListener("click", closeReport);

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

  // -- start ----------------------------------------------------------------------------------
  loadHealth().then(() => {
    if (loadFromHash()) search();
    else qInput.focus();
  });
})();
