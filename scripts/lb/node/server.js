// server.js: Node's `ws` WebSocket server as a backend behind
// scripts/lb.sh --backend node, so a drill also meets a server nobody on
// this project wrote.
//
//   node server.js PORT
//
// It listens on 127.0.0.1:PORT, echoes every message, answers GET /healthz
// with 200 (HAProxy's health check) and anything else that is not an
// upgrade with 426. When it accepts it prints one line on stdout:
//   {"ready":true,"addr":"127.0.0.1:PORT","pid":N}
// SIGTERM closes every client with 1001 (going away), as a deploy would,
// and exits 0 once they are closed (at most 5 s).
'use strict';
const http = require('http');
const { WebSocketServer } = require('ws');

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`server.js: want a port 1-65535 as the first argument, got ${JSON.stringify(process.argv[2])}`);
  process.exit(2);
}

const server = http.createServer((req, res) => {
  if (req.url === '/healthz') {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('ok\n');
    return;
  }
  res.writeHead(426, { 'Content-Type': 'text/plain', Upgrade: 'websocket' });
  res.end('WebSocket upgrade required\n');
});
const wss = new WebSocketServer({ server });
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  ws.on('error', () => {}); // a reset client is no reason to stop
});

server.listen({ host: '127.0.0.1', port, backlog: 511 }, () => {
  console.log(JSON.stringify({ ready: true, addr: `127.0.0.1:${port}`, pid: process.pid }));
});

process.on('SIGTERM', () => {
  server.close(); // no new connections
  for (const ws of wss.clients) ws.close(1001, 'going away');
  const done = () => process.exit(0);
  const check = setInterval(() => { if (wss.clients.size === 0) done(); }, 50);
  setTimeout(() => { clearInterval(check); done(); }, 5000).unref();
});
