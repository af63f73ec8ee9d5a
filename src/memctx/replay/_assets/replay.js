"use strict";
(function () {
  const data = JSON.parse(document.getElementById("memctx-replay-data").textContent);
  const nf = new Intl.NumberFormat("en-US");
  const fmt = (n) => nf.format(n);
  const pct = (x) => (100 * x).toFixed(1) + "%";
  const money = (x) => x.toFixed(4);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function kind(event) {
    const e = event.toLowerCase();
    if (e.includes("compact")) return "compaction";
    if (e.includes("clear")) return "clearing";
    if (e.includes("skip") || e.includes("calibrat")) return null; // nothing changed
    return "other";
  }

  function totals(report) {
    const dl = el("dl", "totals");
    const rows = [
      ["requests", fmt(report.requests.length)],
      ["input tokens", fmt(report.input_tokens)],
      ["read from cache", pct(report.cache_read_share)],
      ["written", fmt(report.cache_write_tokens)],
      ["uncached", fmt(report.uncached_tokens)],
      ["cost", money(report.cost) + " " + report.currency],
      ["without cache", money(report.cost_without_cache) + " " + report.currency],
      ["cost ratio", report.cost_ratio.toFixed(3) + "x"],
      ["cache breaks", fmt(report.cache_breaks)],
      ["compactions", fmt(report.compactions)],
      ["clearings", fmt(report.clearings)],
      ["peak tokens", fmt(report.peak_tokens)],
      ["over budget", fmt(report.budget_violations)],
      ["orphaned tool calls", fmt(report.orphaned_tool_calls)],
    ];
    for (const [name, value] of rows) {
      const row = el("div");
      row.dataset.key = name;
      row.append(el("dt", "", name), el("dd", "", value));
      dl.append(row);
    }
    return dl;
  }

  function chart(report) {
    const box = el("div", "chart");
    const plot = el("div", "plot");
    box.append(plot);
    const top = Math.max(1, report.peak_tokens, report.budget || 0);
    for (const r of report.requests) {
      const bar = el("div", "bar");
      bar.dataset.index = String(r.index);
      bar.title =
        "request " + r.index + ": " + fmt(r.input_tokens) + " tokens (" +
        fmt(r.cache_read_tokens) + " read, " + fmt(r.cache_write_tokens) + " written, " +
        fmt(r.uncached_tokens) + " uncached); cost " + money(r.cost) +
        (r.events.length ? "; " + r.events.join(", ") : "") +
        (r.cache_break ? "; cache break" : "") +
        (r.budget_violation ? "; over budget" : "");
      for (const [cls, tokens] of [
        ["read", r.cache_read_tokens],
        ["written", r.cache_write_tokens],
        ["uncached", r.uncached_tokens],
      ]) {
        const seg = el("span", "seg " + cls);
        seg.style.height = (100 * tokens) / top + "%";
        seg.dataset.tokens = String(tokens);
        bar.append(seg);
      }
      for (const event of r.events) {
        if (kind(event) === null) continue;
        const mark = el("i", "marker " + kind(event));
        mark.dataset.event = event;
        bar.append(mark);
      }
      if (r.cache_break) bar.append(el("i", "marker break"));
      plot.append(bar);
    }
    if (report.budget) {
      const line = el("div", "budget-line");
      line.style.bottom = (100 * report.budget) / top + "%";
      line.append(el("span", "", "budget " + fmt(report.budget)));
      plot.append(line);
    }
    return box;
  }

  function table(report) {
    const details = el("details");
    details.append(el("summary", "", "Every request"));
    const t = el("table");
    const head = el("tr");
    for (const name of ["#", "input", "read", "written", "uncached", "cost", "events"]) {
      head.append(el("th", name === "events" || name === "#" ? "" : "num", name));
    }
    const thead = el("thead");
    thead.append(head);
    const body = el("tbody");
    for (const r of report.requests) {
      const row = el("tr", r.budget_violation ? "over" : "");
      const marks = [...r.events];
      if (r.cache_break) marks.push("cache break");
      if (r.budget_violation) marks.push("over budget");
      row.append(
        el("td", "", r.index),
        el("td", "num", fmt(r.input_tokens)),
        el("td", "num", fmt(r.cache_read_tokens)),
        el("td", "num", fmt(r.cache_write_tokens)),
        el("td", "num", fmt(r.uncached_tokens)),
        el("td", "num", money(r.cost)),
        el("td", "", marks.join(", ")),
      );
      body.append(row);
    }
    t.append(thead, body);
    details.append(t);
    return details;
  }

  const main = document.getElementById("reports");
  for (const report of data.reports) {
    const section = el("section", "report");
    section.dataset.label = report.label;
    const budget = report.budget ? fmt(report.budget) + " tokens" : "the model's window";
    section.append(el("h2", "", report.label + " \u00b7 " + report.model + " \u00b7 " + budget));
    section.append(totals(report), chart(report), table(report));
    main.append(section);
  }
  document.getElementById("summary").textContent =
    data.reports.length + " replay" + (data.reports.length === 1 ? "" : "s") +
    ": one bar per request (height: input tokens), events marked above it.";
  requestAnimationFrame(() => requestAnimationFrame(() => {
    document.body.dataset.painted = "1";
  }));
})();
