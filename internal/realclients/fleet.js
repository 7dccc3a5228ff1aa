// fleet.js runs clients of one real client library, with its default
// reconnect rule, against the realclients test's server:
//
//	node fleet.js LIB URL FIRST COUNT
//
// Client i (FIRST <= i < FIRST+COUNT) connects to URL with ?c=i, so the
// server can tell its attempts apart. Every close event a client's
// WebSocket emits (the drop's and each failed attempt's) is recorded with
// the wall clock in microseconds; when stdin ends, the process prints one
// line "ID MICROS" per close and exits.
"use strict";

const path = require("path");
const WebSocket = require("ws");
const [lib, base, first, count] = [process.argv[2], process.argv[3], +process.argv[4], +process.argv[5]];

// Libraries that bring their own copy of ws (engine.io-client) get the
// same recording.
const closes = [];
const copies = new Set([WebSocket]);
try {
  copies.add(require(require.resolve("ws", { paths: [path.dirname(require.resolve("engine.io-client"))] })));
} catch {}
for (const WS of copies) {
  const emit = WS.prototype.emit;
  WS.prototype.emit = function (event, ...args) {
    if (event === "close") {
      const m = /[?&]c=(\d+)/.exec(this.url || this._url || "");
      if (m) closes.push(`${m[1]} ${wall()}`);
    }
    return emit.call(this, event, ...args);
  };
}
// A probe timer every 5 ms: a gap over 25 ms between its runs is a stall
// of this process, printed "S FROM TO CPU" with the CPU time (µs) the
// process used in it: little CPU means the machine gave it none (it
// starved), much means it was busy with its own work. A try of the test
// with a stall over 100 ms is void and runs again.
const wall = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
let last = wall(), lastCPU = cpu();
setInterval(() => {
  const now = wall(), used = cpu();
  if (now - last > 25000) closes.push(`S ${last} ${now} ${used - lastCPU}`);
  last = now;
  lastCPU = used;
}, 5);
process.stdin.on("data", () => {});
process.stdin.on("end", () => {
  process.stdout.write(closes.join("\n") + "\n", () => process.exit(0));
});

// Libraries log their reconnect errors; the test reads none of it.
console.error = () => {};
console.log = () => {};
process.on("unhandledRejection", () => {});

const url = (path, id) => `${base}${path}?c=${id}`;

const start = {
  socketio(id) {
    const { io } = require("socket.io-client");
    io(base, { transports: ["websocket"], query: { c: id }, forceNew: true });
  },
  phoenix(id) {
    const { Socket } = require("phoenix");
    new Socket(`${base}/socket`, { transport: WebSocket, params: { c: id } }).connect();
  },
  centrifuge(id) {
    const { Centrifuge } = require("centrifuge");
    const c = new Centrifuge(url("/connection/websocket", id), { websocket: WebSocket });
    c.on("error", () => {});
    c.connect();
  },
  "graphql-ws"(id) {
    const { createClient } = require("graphql-ws");
    createClient({ url: url("/graphql", id), webSocketImpl: WebSocket, lazy: false, onNonLazyError: () => {} });
  },
  "reconnecting-websocket"(id) {
    const RWS = require("reconnecting-websocket");
    const s = new RWS(url("/rws", id), [], { WebSocket });
    s.addEventListener("error", () => {});
  },
  mqttjs(id) {
    const mqtt = require("mqtt");
    const c = mqtt.connect(url("/mqtt", id), { protocolVersion: 4 });
    c.on("error", () => {});
  },
  stompjs(id) {
    const { Client } = require("@stomp/stompjs");
    new Client({
      webSocketFactory: () => new WebSocket(url("/stomp", id), ["v12.stomp"]),
      heartbeatIncoming: 0,
      heartbeatOutgoing: 0,
    }).activate();
  },
  nats(id) {
    globalThis.WebSocket = WebSocket;
    const { wsconnect } = require("@nats-io/nats-core");
    wsconnect({ servers: url("/nats", id), pingInterval: 3600000 }).catch(() => {});
  },
};

for (let i = first; i < first + count; i++) {
  start[lib](i);
}
setInterval(() => {}, 1 << 30);
