// Feeds the report's page from the live server's stream (report/live):
// each frame's figures go into the #live panel, and on its element as
// data attributes (data-connected, data-events, ...) for a test to read;
// its data redraws the report's plots. The last frame ("final") carries
// report.html's data: the page takes report.html's body and draws it.
"use strict";
(function () {
  const panel = document.getElementById("live");
  if (!panel || !window.EventSource) return;
  const k = name => panel.querySelector('[data-k="' + name + '"]');
  const text = (name, v) => { const el = k(name); if (el) el.textContent = v; };
  const num = v => v == null ? "-" : String(v);
  const secs = v => v == null ? "-" : (+v).toFixed(2);

  function row(cells) {
    const tr = document.createElement("tr");
    cells.forEach(c => { const td = document.createElement("td"); td.textContent = c; tr.appendChild(td); });
    return tr;
  }

  function show(f) {
    panel.dataset.state = f.state;
    panel.dataset.seq = f.seq;
    panel.dataset.t = f.t_s;
    panel.dataset.clients = f.clients;
    panel.dataset.connected = f.connected;
    panel.dataset.arrivals = f.arrivals_per_100ms;
    panel.dataset.capacity = f.capacity_per_100ms == null ? "" : f.capacity_per_100ms;
    panel.dataset.events = JSON.stringify(f.events || []);
    panel.dataset.failures = JSON.stringify(f.failures || {});
    panel.dataset.recovery = JSON.stringify(f.recovery || []);
    panel.dataset.slo = JSON.stringify(f.slo || []);
    panel.dataset.http = f.http ? JSON.stringify(f.http) : "";
    subtitle(f);
    text("state", f.state === "final" ? "run over: this is report.html" : "running");
    text("t", f.t_s.toFixed(1));
    text("connected", f.connected);
    text("clients", f.clients);
    text("arrivals", f.arrivals_per_100ms);
    text("capacity", f.capacity_per_100ms == null ? "unknown" : f.capacity_per_100ms);
    const fails = Object.keys(f.failures || {}).sort((a, b) => f.failures[b] - f.failures[a]);
    text("failures", fails.length ? fails.map(c => c + " " + f.failures[c]).join(", ") : "none");
    text("exact", f.exact ? "(the summary's figures)" : "(estimated from the connected count until the run ends)");
    k("ws").hidden = !!f.http;
    k("http").hidden = !f.http;
    if (f.http) showHTTP(f.http);
    const ev = k("events");
    ev.replaceChildren();
    if (f.http) ev.appendChild(row(["none: an HTTP fleet's run has no chaos or deploy event", "", "", "", "", "", "", "", ""]));
    (f.events || []).forEach((e, i) => {
      const r = (f.recovery || []).find(x => x.event === i) || {};
      ev.appendChild(row([e.name, e.start_s.toFixed(2), e.ready_s == null ? "not yet" : e.ready_s.toFixed(2),
        r.connected_before == null ? "-" : r.back + " / " + r.connected_before, num(r.herd_peak_per_100ms),
        secs(r.r50_s), secs(r.r90_s), secs(r.r99_s), secs(r.r100_s)]));
    });
    const slo = k("slo");
    slo.replaceChildren();
    (f.slo || []).forEach(s => slo.appendChild(row([s.expr, s.state, s.detail])));
    if (!(f.slo || []).length) slo.appendChild(row(["none given (--slo)", "-", ""]));
  }

  // subtitle keeps the run's subtitle (its id, seed, fleet size, connected
  // count, length) the frame's: the page may have been served before the
  // first frame, with an empty run's.
  function subtitle(f) {
    const sub = document.querySelector("section.run p.sub");
    if (!sub) return;
    const part = (name, v) => { const el = sub.querySelector('[data-sub="' + name + '"]'); if (el) el.textContent = v; };
    const run = ((f.data || {}).runs || [])[0] || {};
    if (run.run_id) part("run_id", run.run_id);
    part("seed", f.seed);
    part("clients", f.clients);
    part("connected", f.http ? "" : " (" + f.connected + " connected)");
    part("duration", (+(+f.t_s).toFixed(2)) + " s");
  }
  function showHTTP(h) {
    const a = h.answers_per_100ms || {};
    text("http-sent", h.sent_per_100ms);
    text("http-ok", a["2xx"] || 0);
    text("http-offered", (+h.offered_per_100ms.toFixed(2)) + " per 100 ms");
    const kinds = Object.keys(a).filter(x => x !== "2xx");
    text("http-answers", kinds.length ? kinds.map(x => x + " " + a[x]).join(", ") : "all 2xx");
    text("http-peak", h.peak_sent_per_100ms);
    text("http-rejected", h.peak_rejected_per_100ms);
    text("http-seen", h.retry_after_seen);
    text("http-honoured", h.retry_after_honoured);
    text("http-early", h.early_retries);
    text("http-abandoned", h.abandoned);
    text("http-requests", h.requests);
    text("http-succeeded", h.succeeded);
    text("http-goodput", (+h.goodput_per_s.toFixed(2)));
    text("http-amp", (+h.amplification.toFixed(3)));
  }
  // becomes turns the page into report.html, fetched from the server, and
  // draws its plots from the final frame's data (report.html's own).
  function become(f) {
    fetch("report.html", { credentials: "same-origin" }).then(r => r.ok ? r.text() : Promise.reject(r.status)).then(html => {
      const doc = new DOMParser().parseFromString(html, "text/html");
      doc.querySelectorAll("script").forEach(s => s.remove());
      document.title = doc.title;
      const nodes = Array.from(doc.body.childNodes).map(n => document.adoptNode(n));
      document.body.replaceChildren(...nodes);
      const h1 = document.body.querySelector("h1");
      if (h1) h1.after(panel); else document.body.prepend(panel);
      window.stampedeReport.draw(f.data);
      panel.dataset.became = "report.html";
    }).catch(err => {
      window.stampedeReport.draw(f.data);
      panel.dataset.became = "failed: " + err;
    });
  }

  const es = new EventSource("events");
  es.addEventListener("frame", ev => {
    const f = JSON.parse(ev.data);
    show(f);
    if (f.state === "final") {
      es.close();
      become(f);
      return;
    }
    window.stampedeReport.draw(f.data);
  });
  es.onerror = () => { if (panel.dataset.state !== "final") panel.dataset.state = "lost"; };
})();
