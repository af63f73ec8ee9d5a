"use strict";
// The build report's page. Every text from the data (chunk content, ids, metadata)
// enters the DOM through textContent or an attribute value, never as markup.
(function () {
  performance.mark("memctx-start"); // the page is parsed; the data is not yet
  const data = JSON.parse(document.getElementById("memctx-data").textContent);
  const chunks = data.chunks;
  const units = data.units;
  const n = chunks.length;
  const ROW = 26;
  const OVERSCAN = 12;
  const LANES = 6;
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmt(value) {
    if (value === null || value === undefined) return "\u2013";
    return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ","); // 12,345 (no Intl start-up)
  }
  function pct(part, whole) {
    return whole > 0 ? Math.max(0, Math.min(100, (100 * part) / whole)) : 0;
  }
  const isIn = (c) => c.status === "included";
  // A chunk's XML is stored whole, or as the parts around its escaped content
  // (escaped exactly as escape_text in _inspect_data.py does).
  const escapeText = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;")
    .replace(/>/g, "&gt;").replace(/\r/g, "&#13;");
  const xmlOf = (c) => (c.xml !== undefined ? c.xml : c.xml_head + escapeText(c.content) + c.xml_tail);

  // -- summary and budget -------------------------------------------------------------
  const b = data.build;
  const budgetText = b.max_tokens === null ? "unlimited" : fmt(b.max_tokens);
  $("summary").textContent =
    (data.thread_id ? "thread " + data.thread_id + " \u00b7 " : "") +
    data.messages.length + " messages, " + fmt(b.token_count) + " tokens (" +
    (b.token_count_exact ? "exact" : "estimated") + ", " + b.tokenizer + "), budget " +
    budgetText + (b.reserve_tokens ? " (reserve " + fmt(b.reserve_tokens) + ")" : "") +
    ", strategy " + b.strategy + " \u00b7 " + fmt(b.included) + " of " + fmt(n) +
    " chunks included, " + fmt(b.excluded) + " left out";

  (function budget() {
    const bar = $("budget-bar");
    const legend = $("budget-legend");
    const whole = b.max_tokens === null ? b.token_count : b.max_tokens;
    const free = b.max_tokens === null ? null : Math.max(0, b.max_tokens - b.reserve_tokens - b.token_count);
    const parts = [["used", "seg-used", b.token_count], ["free", "seg-free", free],
      ["reserved", "seg-reserved", b.max_tokens === null ? null : b.reserve_tokens]];
    for (const [name, cls, value] of parts) {
      const seg = el("span", cls);
      seg.id = "budget-" + name;
      seg.dataset.tokens = value === null ? "" : String(value);
      seg.style.width = pct(value || 0, whole) + "%";
      seg.title = name + ": " + fmt(value);
      bar.appendChild(seg);
      const item = el("span");
      const sw = el("span", "swatch " + cls);
      item.appendChild(sw);
      item.appendChild(document.createTextNode(name + " "));
      item.appendChild(el("b", null, value === null ? (name === "free" ? "no limit" : "0") : fmt(value)));
      legend.appendChild(item);
    }
    const total = el("span", null, "budget " + budgetText);
    legend.appendChild(total);
  })();

  // -- totals -----------------------------------------------------------------------------
  function fillTable(tbody, rows) {
    for (const [key, cells] of rows) {
      const tr = el("tr");
      tr.dataset.key = key;
      cells.forEach((value, i) => tr.appendChild(el("td", i ? "num" : null, value)));
      tbody.appendChild(tr);
    }
  }
  fillTable($("totals-type").tBodies[0], Object.entries(data.totals.by_type).map(([type, t]) =>
    [type, [type, fmt(t.chunks), fmt(t.included), fmt(t.excluded), fmt(t.tokens)]]));
  fillTable($("totals-status").tBodies[0], Object.entries(data.totals.by_status).map(([s, t]) =>
    [s, [s, fmt(t.chunks), fmt(t.tokens), t.unmeasured ? fmt(t.unmeasured) : ""]]));

  // -- messages ---------------------------------------------------------------------------
  const messageStart = new Int32Array(n).fill(-1);
  data.messages.forEach((m, i) => {
    if (m.chunks.length) messageStart[m.chunks[0]] = i;
    const li = el("li", "msg role-" + m.role);
    li.appendChild(el("span", "role", m.role));
    li.appendChild(document.createTextNode(" \u00b7 " + m.chunks.length + " chunk" +
      (m.chunks.length === 1 ? "" : "s") + " \u00b7 " + fmt(m.chars) + " characters"));
    if (m.chunks.length) li.addEventListener("click", () => select(m.chunks[0], true));
    $("message-list").appendChild(li);
  });

  // -- units: one lane each while its span is open (greedy interval colouring) ------------
  const laneOf = new Int32Array(units.length);
  const lanes = [];
  for (let lane = 0; lane < LANES; lane++) lanes.push(new Int32Array(n).fill(-1));
  (function assignLanes() {
    const ends = new Array(LANES).fill(-1);
    const order = units.map((u, i) => i).sort((x, y) => units[x].members[0] - units[y].members[0]);
    for (const u of order) {
      const first = units[u].members[0];
      const last = units[u].members[units[u].members.length - 1];
      let lane = ends.findIndex((end) => end < first);
      if (lane < 0) lane = LANES - 1; // more overlapping units than lanes: share the last one
      ends[lane] = Math.max(ends[lane], last);
      laneOf[u] = lane;
      lanes[lane].fill(u, first, last + 1);
    }
  })();
  const unitColor = (u) => "hsl(" + ((u * 67) % 360) + ", 62%, 46%)";
  const unitLabel = (u) => units[u].kind + " " + units[u].key + " (" + units[u].members.length +
    " chunk" + (units[u].members.length === 1 ? "" : "s") + ")";

  // -- comparison -------------------------------------------------------------------------
  const cmp = data.compare;
  if (cmp) {
    document.body.classList.add("comparing");
    $("compare").hidden = false;
    $("compare-label").textContent = "compared with " + cmp.label;
    $("compare-prefix").textContent = fmt(cmp.shared_prefix_tokens);
    $("compare-prefix").dataset.tokens = String(cmp.shared_prefix_tokens);
    $("compare-counts").textContent = "of " + fmt(cmp.token_count) + " tokens now, " +
      fmt(cmp.previous_token_count) + " before (budget " +
      (cmp.previous_max_tokens === null ? "unlimited" : fmt(cmp.previous_max_tokens)) + ")";
    const list = (box, positions, extra) => {
      box.dataset.count = String(positions.length + extra.length);
      if (!positions.length && !extra.length) box.appendChild(el("span", "empty", "none"));
      for (const p of positions) {
        const button = el("button", null, chunks[p].id);
        button.type = "button";
        button.addEventListener("click", () => select(p, true));
        box.appendChild(button);
      }
      for (const gone of extra) box.appendChild(el("span", "empty", gone.id + " (not in this state) "));
    };
    $("entered-count").textContent = String(cmp.entered.length);
    $("left-count").textContent = String(cmp.left.length + cmp.left_elsewhere.length);
    list($("entered-ids"), cmp.entered, []);
    list($("left-ids"), cmp.left, cmp.left_elsewhere);
  }

  // -- filters ----------------------------------------------------------------------------
  const statusSelect = $("filter-status");
  const typeSelect = $("filter-type");
  const search = $("search");
  function option(select, value, label) {
    const o = el("option", null, label);
    o.value = value;
    select.appendChild(o);
  }
  option(statusSelect, "", "every status");
  option(statusSelect, "excluded", "left out (any reason)");
  for (const s of Object.keys(data.totals.by_status)) option(statusSelect, s, s);
  if (cmp) {
    option(statusSelect, "change:entered", "entered since " + cmp.label);
    option(statusSelect, "change:left", "left since " + cmp.label);
  }
  option(typeSelect, "", "every type");
  for (const t of Object.keys(data.totals.by_type)) option(typeSelect, t, t);

  let lowered = null; // lower-cased content, made on the first search
  let visible = chunks.map((c, i) => i);
  function applyFilters() {
    const status = statusSelect.value;
    const type = typeSelect.value;
    const query = search.value.toLowerCase();
    if (query && lowered === null) lowered = chunks.map((c) => c.content.toLowerCase());
    const out = [];
    for (let i = 0; i < n; i++) {
      const c = chunks[i];
      if (status === "excluded" ? isIn(c) : status.startsWith("change:")
        ? c.change !== status.slice(7) : status && c.status !== status) continue;
      if (type && c.type !== type) continue;
      if (query && !lowered[i].includes(query) && !c.id.toLowerCase().includes(query)) continue;
      out.push(i);
    }
    visible = out;
    $("shown-count").textContent = fmt(out.length) + " of " + fmt(n) + " chunks";
    $("shown-count").dataset.shown = String(out.length);
    spacer.style.height = out.length * ROW + "px";
    viewport.scrollTop = Math.min(viewport.scrollTop, Math.max(0, out.length * ROW - viewport.clientHeight));
    render();
  }
  let searchTimer = 0;
  statusSelect.addEventListener("change", applyFilters);
  typeSelect.addEventListener("change", applyFilters);
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(applyFilters, n > 2000 ? 200 : 0);
  });

  // -- the chunk list, rendered only where it is scrolled to ------------------------------
  const viewport = $("viewport");
  const spacer = $("spacer");
  const rowsBox = $("rows");
  let maxTokens = 1;
  for (const c of chunks) if (c.tokens !== null && c.tokens > maxTokens) maxTokens = c.tokens;
  let selected = -1;

  function makeRow(p) {
    const c = chunks[p];
    const row = el("div", "row role-" + (c.role || "none") + (isIn(c) ? "" : " out"));
    row.dataset.pos = String(p);
    row.dataset.id = c.id;
    row.dataset.status = c.status;
    if (messageStart[p] >= 0) row.classList.add("msg-start");
    if (p === selected) row.classList.add("selected");
    row.appendChild(el("span", "c-pos", p + 1));
    const unitCell = el("span", "c-unit");
    for (let lane = 0; lane < LANES; lane++) {
      const u = lanes[lane][p];
      if (u < 0 || laneOf[u] !== lane) continue;
      const members = units[u].members;
      const member = c.unit === u;
      const line = el("span", "lane " + (member ? "member" : "through"));
      if (member && members[0] === p) line.classList.add("first");
      if (member && members[members.length - 1] === p) line.classList.add("last");
      line.style.left = 4 + lane * 9 + "px";
      line.style.backgroundColor = unitColor(u);
      line.title = unitLabel(u);
      if (members.length > 1) unitCell.appendChild(line);
      if (member) {
        const dot = el("span", "dot");
        dot.style.left = 4 + lane * 9 + "px";
        dot.style.backgroundColor = unitColor(u);
        unitCell.appendChild(dot);
      }
    }
    if (c.unit !== null) unitCell.title = unitLabel(c.unit);
    row.appendChild(unitCell);
    row.appendChild(el("span", "c-id", c.id)).title = c.id;
    row.appendChild(el("span", "c-type", c.type));
    row.appendChild(el("span", "c-tag", c.tag));
    row.appendChild(el("span", "c-role", c.role));
    const msg = el("span", "c-msg", c.message === null ? "" :
      (messageStart[p] >= 0 ? "\u25b8 " : "") + (c.message + 1));
    row.appendChild(msg);
    const tokens = el("span", "c-tokens");
    const track = el("span", "track");
    const fill = el("span", "fill");
    fill.style.width = (c.tokens === null ? 0 : pct(c.tokens, maxTokens)) + "%";
    fill.style.display = "block";
    track.appendChild(fill);
    tokens.appendChild(track);
    tokens.appendChild(el("span", "n", c.tokens === null ? "\u2013" : fmt(c.tokens)));
    row.appendChild(tokens);
    const status = el("span", "c-status");
    status.appendChild(el("span", "status " + (isIn(c) ? "included" : "excluded"), c.status));
    row.appendChild(status);
    row.appendChild(el("span", "c-pin", c.pinned ? "pinned" : ""));
    row.appendChild(el("span", "c-repl", c.replaced ? c.replaced : ""));
    row.appendChild(el("span", "c-change" + (c.change ? " change-" + c.change : ""), c.change || ""));
    return row;
  }

  function render() {
    const top = viewport.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    const last = Math.min(visible.length, Math.ceil((top + viewport.clientHeight) / ROW) + OVERSCAN);
    const frag = document.createDocumentFragment();
    for (let i = first; i < last; i++) frag.appendChild(makeRow(visible[i]));
    rowsBox.style.transform = "translateY(" + first * ROW + "px)";
    rowsBox.replaceChildren(frag);
  }
  let frame = 0;
  viewport.addEventListener("scroll", () => {
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; render(); });
  });
  window.addEventListener("resize", render);
  // Up and down move the selection through the rows shown, Home and End jump.
  viewport.tabIndex = 0;
  viewport.addEventListener("keydown", (event) => {
    const steps = { ArrowDown: 1, ArrowUp: -1, PageDown: 20, PageUp: -20 };
    if (!visible.length) return;
    let index = visible.indexOf(selected);
    if (event.key in steps) index = Math.max(0, Math.min(visible.length - 1, index + steps[event.key]));
    else if (event.key === "Home") index = 0;
    else if (event.key === "End") index = visible.length - 1;
    else return;
    event.preventDefault();
    select(visible[index], true);
  });
  rowsBox.addEventListener("click", (event) => {
    const row = event.target.closest(".row");
    if (row) select(Number(row.dataset.pos), false);
  });

  // -- the selected chunk: its fields and its exact XML ------------------------------------
  function select(p, scroll) {
    selected = p;
    const c = chunks[p];
    const box = $("detail");
    box.replaceChildren();
    box.appendChild(el("h2", null, "chunk " + (p + 1) + " of " + n));
    const dl = el("dl");
    const field = (name, value) => {
      dl.appendChild(el("dt", null, name));
      const dd = el("dd", null, value);
      dd.dataset.field = name;
      dl.appendChild(dd);
      return dd;
    };
    field("id", c.id);
    field("type", c.type);
    field("tag", c.tag);
    field("role", c.role);
    field("status", c.status);
    field("tokens", c.tokens === null ? "not measured" : fmt(c.tokens));
    field("message", c.message === null ? "not sent" : "message " + (c.message + 1) + " (" +
      data.messages[c.message].role + ")");
    field("pinned", c.pinned ? "yes" : "no");
    field("replaced characters", String(c.replaced));
    field("priority", String(c.priority));
    field("created", c.created_at);
    if (c.change) field("since " + cmp.label, c.change);
    if (c.unit !== null) {
      const dd = field("unit", unitLabel(c.unit) + ": ");
      dd.classList.add("members");
      for (const m of units[c.unit].members) {
        const button = el("button", null, chunks[m].id);
        button.type = "button";
        button.addEventListener("click", () => select(m, true));
        dd.appendChild(button);
      }
    }
    if (Object.keys(c.metadata).length) field("metadata", JSON.stringify(c.metadata));
    box.appendChild(dl);
    box.appendChild(el("h2", null, isIn(c) ? "XML as sent" : "XML (not sent)"));
    const xml = el("pre", null, xmlOf(c));
    xml.id = "detail-xml";
    box.appendChild(xml);
    box.appendChild(el("h2", null, "content"));
    const content = el("pre", null, c.content);
    content.id = "detail-content";
    box.appendChild(content);
    const index = scroll ? visible.indexOf(p) : -1;
    if (index >= 0) {
      const top = index * ROW;
      if (top < viewport.scrollTop || top + ROW > viewport.scrollTop + viewport.clientHeight) {
        viewport.scrollTop = Math.max(0, top - viewport.clientHeight / 3);
      }
    }
    render();
  }

  applyFilters();
  // When the page is usable, and when its first frame is painted (for open-time measurements).
  document.body.dataset.ready = String(Math.round(performance.now()));
  requestAnimationFrame(() => setTimeout(() => {
    document.body.dataset.painted = String(Math.round(performance.now()));
  }, 0));
})();
