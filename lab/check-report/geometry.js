// geometry.js: appended to a copy of a report.html by check-report.sh, it
// measures the laid-out page as a person at 1,400 px would see it and
// writes what it found as JSON into <pre id="geometry">:
//   cut      tables wider than the window, or than a scrolling wrapper
//   midword  unbreakable parts of folder names and policies (.nw) that wrapped
//   overlaps event labels of one chart that overlap (data-labels boxes)
//   outside  event labels not inside their plot (data-plot)
//   labels   the number of event labels drawn
// The charts are drawn when the page's own script ends; this runs later.
"use strict";
setTimeout(() => {
  const g = { viewport: window.innerWidth, page: document.documentElement.scrollWidth,
    cut: [], midword: [], overlaps: [], outside: [], labels: 0 };
  document.querySelectorAll("table").forEach(t => {
    const right = t.getBoundingClientRect().right;
    const wrap = t.closest(".wide");
    const head = t.rows.length ? t.rows[0].textContent.trim().slice(0, 40) : "";
    if (right > window.innerWidth + 0.5 || (wrap && wrap.scrollWidth > wrap.clientWidth + 0.5)) {
      g.cut.push({ table: head, right: right, window: window.innerWidth });
    }
  });
  document.querySelectorAll(".nw").forEach(s => {
    if (s.getClientRects().length > 1) g.midword.push(s.textContent);
  });
  document.querySelectorAll("[data-labels]").forEach(el => {
    const labels = JSON.parse(el.getAttribute("data-labels"));
    const p = JSON.parse(el.getAttribute("data-plot"));
    const chart = el.getAttribute("data-chart") + (el.getAttribute("data-run") || "");
    g.labels += labels.length;
    labels.forEach((a, i) => {
      if (a.x < p.x - 0.5 || a.x + a.w > p.x + p.w + 0.5 || a.y < p.y - 0.5 || a.y + a.h > p.y + p.h + 0.5) {
        g.outside.push([chart, a.name]);
      }
      labels.slice(i + 1).forEach(b => {
        if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) {
          g.overlaps.push([chart, a.name, b.name]);
        }
      });
    });
  });
  const pre = document.createElement("pre");
  pre.id = "geometry";
  pre.textContent = JSON.stringify(g);
  document.body.appendChild(pre);
}, 200);
