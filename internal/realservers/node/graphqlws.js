// A graphql-ws server (subprotocol graphql-transport-ws) on ws for the
// realservers tests: connection_init must carry {"token": "s3cret"}
// (else 4403), a subscription "greetings" that yields every 200 ms, the
// server's WebSocket pings every KEEPALIVE_MS, and GET /stats with its own
// counts (sessions acknowledged, sessions with a subscription).
// Usage: node graphqlws.js PORT KEEPALIVE_MS
"use strict";
const http = require("http");
const { WebSocketServer } = require("ws");
const { useServer } = require("graphql-ws/use/ws");
const { GraphQLSchema, GraphQLObjectType, GraphQLString } = require("graphql");

const [port, keepAlive] = process.argv.slice(2).map(Number);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: "Query", fields: { hello: { type: GraphQLString, resolve: () => "hi" } } }),
  subscription: new GraphQLObjectType({
    name: "Subscription",
    fields: {
      greetings: {
        type: GraphQLString,
        subscribe: async function* () {
          for (;;) {
            yield { greetings: "hi" };
            await sleep(200);
          }
        },
      },
    },
  }),
});
const acked = new Set();
const subscribed = new Map();
const srv = http.createServer((req, res) => {
  if (req.url !== "/stats") {
    res.writeHead(404).end();
    return;
  }
  let n = 0;
  for (const k of subscribed.values()) if (k > 0) n++;
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ joined: acked.size, subscribed: n }));
});
const wss = new WebSocketServer({ server: srv });
useServer(
  {
    schema,
    connectionInitWaitTimeout: 1000,
    onConnect: (ctx) => {
      if (!ctx.connectionParams || ctx.connectionParams.token !== "s3cret") return false;
      acked.add(ctx);
      return true;
    },
    onSubscribe: (ctx) => {
      subscribed.set(ctx, (subscribed.get(ctx) || 0) + 1);
    },
    onComplete: (ctx) => {
      subscribed.set(ctx, (subscribed.get(ctx) || 1) - 1);
    },
    onClose: (ctx) => {
      acked.delete(ctx);
      subscribed.delete(ctx);
    },
  },
  wss,
  keepAlive,
);
srv.listen(port, "127.0.0.1", () => console.log("listening " + srv.address().port));
