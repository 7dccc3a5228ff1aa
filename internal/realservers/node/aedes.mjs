// aedes, an MQTT broker, over WebSocket (websocket-stream) for the
// realservers tests: user "u" with password "pw" only, and GET /stats with
// the broker's own counts (clients connected, clients subscribed to both
// t/a and t/b).
// Usage: node aedes.mjs PORT
import http from "node:http";
import { Aedes } from "aedes";
import websocketStream from "websocket-stream";

const port = Number(process.argv[2]);
const aedes = await Aedes.createBroker();
aedes.authenticate = (client, username, password, done) => {
  const ok = username === "u" && password && password.toString() === "pw";
  if (ok) return done(null, true);
  const err = new Error("bad user name or password");
  err.returnCode = 4;
  done(err, false);
};
const subs = new Map();
aedes.on("subscribe", (list, client) => {
  const s = subs.get(client.id) || new Set();
  for (const sub of list) s.add(sub.topic);
  subs.set(client.id, s);
});
aedes.on("clientDisconnect", (client) => subs.delete(client.id));
const srv = http.createServer((req, res) => {
  if (req.url !== "/stats") {
    res.writeHead(404).end();
    return;
  }
  let both = 0;
  for (const s of subs.values()) if (s.has("t/a") && s.has("t/b")) both++;
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ joined: aedes.connectedClients, subscribed: both }));
});
websocketStream.createServer({ server: srv }, (stream, req) => aedes.handle(stream, req));
srv.listen(port, "127.0.0.1", () => console.log("listening " + srv.address().port));
