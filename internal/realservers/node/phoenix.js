// A stand-in for a Phoenix channels server (no Elixir here), written from
// Phoenix's documents (serializer v2: [join_ref, ref, topic, event,
// payload]): phx_join answered ok when the payload's token is "s3cret",
// else an error with reason "unauthorized"; heartbeats on topic "phoenix"
// answered ok; a socket silent for TIMEOUT_MS dropped, as Phoenix drops
// one after 60 s; GET /stats with its own counts (sockets with a topic
// joined, sockets with both room:a and room:b joined).
// Usage: node phoenix.js PORT TIMEOUT_MS
"use strict";
const http = require("http");
const { WebSocketServer } = require("ws");

const [port, timeout] = process.argv.slice(2).map(Number);
const socks = new Set();
const srv = http.createServer((req, res) => {
  if (req.url !== "/stats") {
    res.writeHead(404).end();
    return;
  }
  let joined = 0, both = 0;
  for (const s of socks) {
    if (s.topics.size > 0) joined++;
    if (s.topics.has("room:a") && s.topics.has("room:b")) both++;
  }
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ joined, subscribed: both }));
});
const wss = new WebSocketServer({ server: srv, path: "/socket/websocket" });
wss.on("connection", (ws) => {
  const s = { ws, topics: new Set(), seen: Date.now() };
  socks.add(s);
  ws.on("close", () => socks.delete(s));
  ws.on("message", (data) => {
    s.seen = Date.now();
    let m;
    try {
      m = JSON.parse(data.toString());
    } catch {
      ws.close(1003, "bad frame");
      return;
    }
    const [joinRef, ref, topic, event, payload] = m;
    const reply = (status, response) => ws.send(JSON.stringify([joinRef, ref, topic, "phx_reply", { status, response }]));
    if (topic === "phoenix" && event === "heartbeat") return reply("ok", {});
    if (event === "phx_join") {
      if (!payload || payload.token !== "s3cret") return reply("error", { reason: "unauthorized" });
      s.topics.add(topic);
      return reply("ok", {});
    }
  });
});
setInterval(() => {
  const now = Date.now();
  for (const s of socks) if (now - s.seen > timeout) s.ws.terminate();
}, Math.max(10, timeout / 4));
srv.listen(port, "127.0.0.1", () => console.log("listening " + srv.address().port));
