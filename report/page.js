// Draws report.html's plots with uPlot from DATA (see data.go). Every
// element with data-chart gets one uPlot chart appended; nothing is fetched.
// The live page (report/live) draws the same charts again from each frame
// of its stream with window.stampedeReport.draw(data).
"use strict";
(function () {
  let cur = DATA; // the data drawn last
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939"];
  const EVENT_FILL = "rgba(214, 39, 40, 0.10)";
  const EVENT_LINE = "rgba(214, 39, 40, 0.85)";
  const LABEL_BACK = "rgba(255, 255, 255, 0.85)";
  const HEIGHT = 260;

  // Shades each event from its start to its ready time and labels it. The
  // labels are laid out so that none overlaps another (layoutLabels); the
  // boxes they take are left on the chart element as data-labels (CSS
  // pixels in the canvas) for the report's browser test.
  function eventsPlugin(events) {
    return {
      hooks: {
        draw: [u => {
          if (!events || !events.length) return;
          const ctx = u.ctx, dpr = window.devicePixelRatio || 1;
          ctx.save();
          ctx.font = (11 * dpr) + "px system-ui, sans-serif";
          events.forEach(e => {
            const x0 = u.valToPos(e.start, "x", true);
            const x1 = u.valToPos(Math.max(e.ready, e.start), "x", true);
            ctx.fillStyle = EVENT_FILL;
            ctx.fillRect(x0, u.bbox.top, Math.max(x1 - x0, 2 * dpr), u.bbox.height);
            ctx.strokeStyle = EVENT_LINE;
            ctx.lineWidth = 1.5 * dpr;
            ctx.beginPath();
            ctx.moveTo(x0, u.bbox.top);
            ctx.lineTo(x0, u.bbox.top + u.bbox.height);
            ctx.stroke();
          });
          // uPlot leaves its axes' alignment on the context: the boxes
          // are measured from the left edge, the text must start there.
          ctx.textAlign = "left";
          ctx.textBaseline = "alphabetic";
          const boxes = layoutLabels(ctx, u, events, dpr);
          boxes.forEach(b => {
            ctx.fillStyle = LABEL_BACK;
            ctx.fillRect(b.x - dpr, b.y, b.w + 2 * dpr, b.h);
            ctx.fillStyle = EVENT_LINE;
            ctx.fillText(b.name, b.x, b.y + b.h - 3 * dpr);
          });
          ctx.restore();
          const el = u.root.parentNode;
          if (el) {
            el.setAttribute("data-labels", JSON.stringify(boxes.map(b => ({
              name: b.name, x: b.x / dpr, y: b.y / dpr, w: b.w / dpr, h: b.h / dpr }))));
            el.setAttribute("data-plot", JSON.stringify({ x: u.bbox.left / dpr, y: u.bbox.top / dpr,
              w: u.bbox.width / dpr, h: u.bbox.height / dpr }));
          }
        }],
      },
    };
  }

  // Places each event's label (in canvas pixels) beside its start line, in
  // the first row from the top where it overlaps no label placed before:
  // events close in time ("deploy command" and the outage it caused) stack
  // instead of writing over each other. A label that would run past the
  // plot's right edge is put on the left of its line; one for which no row
  // is left (many events at once) is not drawn.
  function layoutLabels(ctx, u, events, dpr) {
    const pad = 4 * dpr, gap = 6 * dpr, lineH = 14 * dpr;
    const left = u.bbox.left, right = u.bbox.left + u.bbox.width;
    const rows = [], boxes = [];
    const maxRows = Math.max(1, Math.floor((u.bbox.height - 2 * dpr) / lineH));
    events.forEach(e => {
      if (!e.name) return;
      const x0 = u.valToPos(e.start, "x", true);
      const w = ctx.measureText(e.name).width;
      let x = x0 + pad;
      if (x + w > right) x = Math.max(left, x0 - pad - w);
      let r = 0;
      while (rows[r] && rows[r].some(b => x < b[1] + gap && b[0] < x + w + gap)) r++;
      if (r >= maxRows) return; // no room left: the event keeps its line and shade
      (rows[r] = rows[r] || []).push([x, x + w]);
      boxes.push({ name: e.name, x: x, y: u.bbox.top + 2 * dpr + r * lineH, w: w, h: lineH - dpr });
    });
    return boxes;
  }

  function width(el) {
    return Math.max(320, Math.floor(el.clientWidth || 600));
  }

  function secondsAxis() {
    return { label: "seconds from the start", values: (u, vals) => vals.map(v => +v.toFixed(1)) };
  }

  function line(label, i, extra) {
    return Object.assign({ label: label, stroke: COLORS[i % COLORS.length], width: 1.5, points: { show: false } }, extra || {});
  }

  // A percentile axis: x is 1/(1-q), labelled as the percentile.
  function pctLabel(v) {
    if (v >= 1e6) return "max";
    if (v <= 1) return "0%";
    const p = 100 - 100 / v;
    return (+p.toPrecision(6)) + "%";
  }

  function percentileOpts(el, title) {
    return {
      width: width(el), height: HEIGHT,
      scales: { x: { time: false, distr: 3, log: 10 }, y: { distr: 3, log: 10 } },
      axes: [
        {
          label: "percentile", values: (u, vals) => vals.map(pctLabel),
          // Only the decades: 0 %, 90 %, 99 %, 99.9 %, ..., max.
          splits: u => [1, 10, 100, 1e3, 1e4, 1e5, 1e6].filter(v => v >= u.scales.x.min && v <= u.scales.x.max),
        },
        { label: title || "ms", size: 60 },
      ],
      legend: { live: true },
      series: [{ label: "percentile", value: (u, v) => v == null ? "-" : pctLabel(v) }],
    };
  }

  function plot(el, opts, data) {
    try {
      return new uPlot(opts, data, el);
    } catch (err) {
      const p = document.createElement("p");
      p.className = "note drawn";
      p.textContent = "plot failed: " + err;
      el.appendChild(p);
    }
  }

  function timeOpts(el, run, yLabel) {
    return {
      width: width(el), height: HEIGHT,
      scales: { x: { time: false } },
      axes: [secondsAxis(), { label: yLabel, size: 60 }],
      plugins: [eventsPlugin(run ? run.events : [])],
      series: [{ label: "t (s)" }],
    };
  }

  const charts = {
    connected(el, run) {
      const opts = timeOpts(el, run, "connected");
      opts.scales.a = {};
      opts.axes.push({ scale: "a", side: 1, label: "attempts / 100 ms", size: 60, grid: { show: false } });
      opts.series.push(line("connected", 0, { width: 2 }));
      opts.series.push(line("attempts / 100 ms", 3, { scale: "a" }));
      opts.series.push(line("successes / 100 ms", 2, { scale: "a", show: false }));
      return plot(el, opts, [run.t, run.connected, run.attempts, run.successes]);
    },
    failures(el, run) {
      const opts = timeOpts(el, run, "failed attempts / 100 ms");
      const data = [run.t];
      Object.keys(run.failures).forEach((cls, i) => {
        opts.series.push(line(cls, i + 1));
        data.push(run.failures[cls]);
      });
      opts.series.push(line("disconnects", 0, { dash: [4, 3] }));
      data.push(run.disconnects);
      return plot(el, opts, data);
    },
    messages(el, run) {
      const opts = timeOpts(el, run, "messages / 100 ms");
      const data = [run.t];
      Object.keys(run.messages).forEach((k, i) => {
        opts.series.push(line(k, i));
        data.push(run.messages[k]);
      });
      return plot(el, opts, data);
    },
    latency(el, run) {
      const names = ["connect", "ttr", "message_rtt", "resume"].filter(n => run.latency[n]);
      if (!names.length) return note(el, "Nothing was recorded.");
      const opts = percentileOpts(el, "ms (log)");
      const data = [run.latency[names[0]].x];
      names.forEach((n, i) => {
        opts.series.push(line(n + " (" + run.latency[n].count + ")", i));
        data.push(run.latency[n].v);
      });
      return plot(el, opts, data);
    },
    rss(el, run) { return roles(el, run, "rss_mib", "MiB"); },
    cpu(el, run) { return roles(el, run, "cpu_pct", "% of one core"); },
    fds(el, run) { return roles(el, run, "fds", "open files"); },
    kernel(el, run) {
      const opts = timeOpts(el, run, "per second");
      const data = [run.kt];
      Object.keys(run.kernel).forEach((k, i) => {
        opts.series.push(line(k, i));
        data.push(run.kernel[k]);
      });
      return plot(el, opts, data);
    },
    "http-rate"(el, run) {
      const h = run.http;
      if (!h) return note(el, "No http_timeline.csv in the folder.");
      const opts = timeOpts(el, run, "per second");
      opts.series.push(line("goodput (2xx /s)", 2, { width: 2 }));
      opts.series.push(line("attempts /s", 3));
      return plot(el, opts, [h.t, h.goodput, h.attempts]);
    },
    "http-statuses"(el, run) {
      const h = run.http;
      if (!h) return note(el, "No http_timeline.csv in the folder.");
      const opts = timeOpts(el, run, "answers per second");
      const data = [h.t];
      const color = { "2xx": 2, "429": 3, "5xx": 1, "other status": 4, "no answer": 8 };
      Object.keys(h.statuses).forEach(k => {
        opts.series.push(line(k, color[k] == null ? 0 : color[k]));
        data.push(h.statuses[k]);
      });
      if (data.length === 1) return note(el, "No attempt was sent.");
      return plot(el, opts, data);
    },
    "http-latency"(el, run) {
      const names = [["http", "request"], ["http_attempt", "attempt"]].filter(n => run.latency[n[0]]);
      if (!names.length) return note(el, "Nothing was recorded.");
      const opts = percentileOpts(el, "ms (log)");
      const data = [run.latency[names[0][0]].x];
      names.forEach((n, i) => {
        opts.series.push(line(n[1] + " (" + run.latency[n[0]].count + ")", i));
        data.push(run.latency[n[0]].v);
      });
      return plot(el, opts, data);
    },
    "cmp-goodput"(el) { return overlayHTTP(el, h => h.goodput, "2xx / s"); },
    "cmp-http-attempts"(el) { return overlayHTTP(el, h => h.attempts, "attempts / s"); },
    "cmp-http-latency"(el) { return overlayPct(el, "http"); },
    "cmp-connected"(el) { return overlay(el, r => r.connected, "connected"); },
    "cmp-attempts"(el) { return overlay(el, r => r.attempts, "attempts / 100 ms"); },
    "cmp-ttr"(el) { return overlayPct(el, "ttr"); },
    "cmp-connect"(el) { return overlayPct(el, "connect"); },
  };

  function note(el, text) {
    const p = document.createElement("p");
    p.className = "drawn";
    p.textContent = text;
    el.appendChild(p);
  }

  function roles(el, run, key, yLabel) {
    const opts = timeOpts(el, run, yLabel);
    const data = [run.rt];
    Object.keys(run.resources).forEach((role, i) => {
      opts.series.push(line(role, i));
      data.push(run.resources[role][key]);
    });
    return plot(el, opts, data);
  }

  // Every run's series on the longest run's time axis; the first event of
  // each run is shaded.
  function overlay(el, pick, yLabel) {
    let longest = cur.runs[0];
    cur.runs.forEach(r => { if (r.t.length > longest.t.length) longest = r; });
    const opts = timeOpts(el, null, yLabel);
    opts.plugins = [eventsPlugin(cur.runs.filter(r => r.events.length).map(r => Object.assign({}, r.events[0], { name: "" })).slice(0, 1))];
    const data = [longest.t];
    cur.runs.forEach((r, i) => {
      opts.series.push(line(r.label, i));
      const s = pick(r).slice();
      while (s.length < longest.t.length) s.push(null);
      data.push(s);
    });
    return plot(el, opts, data);
  }

  // Every HTTP fleet's series on the longest one's time axis.
  function overlayHTTP(el, pick, yLabel) {
    const runs = cur.runs.filter(r => r.http);
    if (!runs.length) return note(el, "No http_timeline.csv in the folders.");
    let longest = runs[0];
    runs.forEach(r => { if (r.http.t.length > longest.http.t.length) longest = r; });
    const opts = timeOpts(el, null, yLabel);
    const data = [longest.http.t];
    runs.forEach(r => {
      opts.series.push(line(r.label, cur.runs.indexOf(r)));
      const s = pick(r.http).slice();
      while (s.length < longest.http.t.length) s.push(null);
      data.push(s);
    });
    return plot(el, opts, data);
  }

  function overlayPct(el, name) {
    const runs = cur.runs.filter(r => r.latency[name]);
    if (!runs.length) return note(el, "Nothing was recorded.");
    const opts = percentileOpts(el, "ms (log)");
    const data = [runs[0].latency[name].x];
    runs.forEach((r, i) => {
      opts.series.push(line(r.label, cur.runs.indexOf(r)));
      data.push(r.latency[name].v);
    });
    return plot(el, opts, data);
  }

  // draw (re)draws every chart from data; a chart drawn before is
  // replaced, so a live page redraws from each frame.
  function draw(data) {
    cur = data;
    document.querySelectorAll("[data-chart]").forEach(el => {
      const kind = el.getAttribute("data-chart");
      const i = el.getAttribute("data-run");
      const run = i == null ? null : cur.runs[+i];
      el.querySelectorAll(".uplot, .drawn").forEach(old => old.remove());
      if (charts[kind] && (i == null || run)) charts[kind](el, run);
    });
  }
  window.stampedeReport = { draw: draw, data: () => cur };
  draw(DATA);
})();
