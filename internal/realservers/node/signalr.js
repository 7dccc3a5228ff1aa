// A stand-in for an ASP.NET Core SignalR hub (no .NET here), written from
// the SignalR hub protocol documents (JSON records ending in 0x1e), the
// WebSocket transport without negotiate: the handshake answered {} (or an
// error for another protocol), JoinGroup invocations completed, the
// server's pings {"type":6} every KEEPALIVE_MS, a connection whose
// handshake is late or that is silent for TIMEOUT_MS closed, as the
// server's HandshakeTimeout and ClientTimeoutInterval do; GET /stats with
// its own counts (connections past the handshake, connections in both
// groups g1 and g2).
// Usage: node signalr.js PORT KEEPALIVE_MS TIMEOUT_MS
"use strict";
const http = require("http");
const { WebSocketServer } = require("ws");

const [port, keepAlive, timeout] = process.argv.slice(2).map(Number);
const RS = "\x1e";
const conns = new Set();
const srv = http.createServer((req, res) => {
  if (req.url !== "/stats") {
    res.writeHead(404).end();
    return;
  }
  let joined = 0, both = 0;
  for (const c of conns) {
    if (c.shook) joined++;
    if (c.groups.has("g1") && c.groups.has("g2")) both++;
  }
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ joined, subscribed: both }));
});
const wss = new WebSocketServer({ server: srv, path: "/hub" });
wss.on("connection", (ws) => {
  const c = { ws, shook: false, groups: new Set(), seen: Date.now(), born: Date.now() };
  conns.add(c);
  ws.on("close", () => conns.delete(c));
  ws.on("message", (data) => {
    c.seen = Date.now();
    for (const rec of data.toString().split(RS)) {
      if (rec === "") continue;
      const m = JSON.parse(rec);
      if (!c.shook) {
        if (m.protocol !== "json") {
          ws.send(JSON.stringify({ error: "The protocol '" + m.protocol + "' is not supported." }) + RS);
          ws.close(1000);
          return;
        }
        c.shook = true;
        ws.send("{}" + RS);
        continue;
      }
      if (m.type === 1 && m.target === "JoinGroup") {
        c.groups.add(m.arguments[0]);
        if (m.invocationId) ws.send(JSON.stringify({ type: 3, invocationId: m.invocationId, result: null }) + RS);
      }
    }
  });
});
setInterval(() => {
  const now = Date.now();
  for (const c of conns) {
    if ((!c.shook && now - c.born > timeout) || now - c.seen > timeout) {
      c.ws.close(1000);
      continue;
    }
    if (c.shook) c.ws.send(JSON.stringify({ type: 6 }) + RS);
  }
}, keepAlive);
srv.listen(port, "127.0.0.1", () => console.log("listening " + srv.address().port));
