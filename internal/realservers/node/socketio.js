// A Socket.IO 4 server for the realservers tests: namespace /chat behind
// an auth check (auth.token must be "s3cret"), an event "join" that joins
// a room and acknowledges, and GET /stats with the server's own counts.
// Usage: node socketio.js PORT PING_INTERVAL_MS PING_TIMEOUT_MS CONNECT_TIMEOUT_MS
"use strict";
const http = require("http");
const { Server } = require("socket.io");

const [port, pingInterval, pingTimeout, connectTimeout] = process.argv.slice(2).map(Number);
const srv = http.createServer((req, res) => {
  if (req.url !== "/stats") {
    res.writeHead(404).end();
    return;
  }
  const nsp = io.of("/chat");
  let rooms = 0;
  for (const s of nsp.sockets.values()) if (s.rooms.has("r1") && s.rooms.has("r2")) rooms++;
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ joined: nsp.sockets.size, subscribed: rooms, engine: io.engine.clientsCount }));
});
const io = new Server(srv, { transports: ["websocket"], pingInterval, pingTimeout, connectTimeout });
io.of("/chat").use((socket, next) => {
  if (socket.handshake.auth && socket.handshake.auth.token === "s3cret") return next();
  next(new Error("unauthorized"));
});
io.of("/chat").on("connection", (socket) => {
  socket.on("join", (room, ack) => {
    socket.join(room);
    if (typeof ack === "function") ack("ok");
  });
});
srv.listen(port, "127.0.0.1", () => console.log("listening " + srv.address().port));
