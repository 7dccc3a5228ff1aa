#!/usr/bin/env bash
# sessions.sh: the session protocols' acceptance (docs/protocols.md). Heavy:
# run it under the shared lock,
#   flock "$STAMPEDE_LOCK" lab/sessions.sh [--clients N] [--servers LIST] [--out DIR]
#
# For each real server of internal/realservers (LIST, comma-separated, of
# socketio, graphql-ws, aedes, mochi, phoenix, signalr, actioncable;
# default all), with
# its default heartbeats: a drill of --clients (default 1,000) clients
# speaking its protocol, the server killed (SIGKILL) and started again on
# the same port by the drill's --restart-cmd after its first heartbeat
# timeout would have fired (Socket.IO: at 50 s of 85 s, its timeouts firing
# at 45 s; ActionCable: at 12 s of 30 s, its pings every 3 s, a client
# stale after 6 s). Checks, printed one line each, exit 1 if one fails:
#   - no disconnect before the deploy (timeline.csv);
#   - the server's own count of sessions joined and subscribed is --clients
#     before the deploy and again at the end (its GET /stats);
#   - every client is back and re-subscribed (recovery[0], and its
#     resubscribed figures);
#   - R99 to re-subscribed printed beside R99 to back.
# Results folders go to --out (default a temporary folder, kept and
# printed). STAMPEDE=path uses a built binary instead of bin/stampede.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=1000 servers="socketio,graphql-ws,aedes,mochi,phoenix,signalr,actioncable" out=""
while [ $# -gt 0 ]; do
	case $1 in
	--clients) clients=$2 && shift 2 ;;
	--servers) servers=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	*) echo "sessions.sh: unknown argument $1" >&2 && exit 2 ;;
	esac
done
bin=${STAMPEDE:-bin/stampede}
[ -x "$bin" ] || go build -o "$bin" ./cmd/stampede
[ -n "$out" ] || out=$(mktemp -d /tmp/stampede-sessions.XXXXXX)
mkdir -p "$out"
node=internal/realservers/node
[ -d "$node/node_modules" ] || (cd "$node" && npm ci --no-audit --no-fund >/dev/null)
mochi=$out/mochi
[ -x "$mochi" ] || (cd internal/realservers/mochi && go build -o "$mochi" .)
fail=0

# one NAME PORT STATSPORT AT DURATION PROTOCOL URLPATH SECTION SERVER-COMMAND...
one() {
	local name=$1 port=$2 sport=$3 at=$4 dur=$5 proto=$6 path=$7 section=$8
	shift 8
	local dir=$out/$name pidf=$out/$name.pid
	mkdir -p "$dir"
	printf 'protocol: %s\n%s\n' "$proto" "$section" >"$out/$name.yaml"
	local start="$*"
	sh -c "$start >$out/$name.log 2>&1 & echo \$! >$pidf"
	for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$sport/stats" >/dev/null && break; sleep 0.2; done
	(sleep "$((at - 2))"; curl -s "http://127.0.0.1:$sport/stats" >"$out/$name.before.json") &
	(sleep "$((dur - 3))"; curl -s "http://127.0.0.1:$sport/stats" >"$out/$name.after.json") &
	"$bin" drill --url "ws://127.0.0.1:$port$path" --config "$out/$name.yaml" --clients "$clients" \
		--policy exp:initial=1s,max=10s,jitter=0.5 --duration "${dur}s" --at "${at}s" \
		--restart-cmd "kill -9 \$(cat $pidf); sleep 1; $start >>$out/$name.log 2>&1 & echo \$! >$pidf" \
		--out "$dir" --force -q >"$out/$name.txt" 2>&1 || true
	wait
	kill -9 "$(cat "$pidf")" 2>/dev/null || true
	python3 - "$name" "$clients" "$at" "$dir" "$out/$name.before.json" "$out/$name.after.json" <<'PY' || fail=1
import csv, json, sys
name, n, at, d, before, after = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
s = json.load(open(d + "/summary.json"))
early = sum(int(r["disconnects"]) for r in csv.DictReader(open(d + "/timeline.csv")) if float(r["t_s"]) < at)
b, a = json.load(open(before)), json.load(open(after))
r = s["recovery"][0] if s["recovery"] else {}
x = r.get("resubscribed") or {}
ok = early == 0 and b["joined"] == n == b["subscribed"] and a["joined"] == n == a["subscribed"] and r.get("recovered") == n and x.get("recovered") == n
print(f"{name}: {'ok' if ok else 'FAILED'}: disconnects before the deploy {early}; server before {b}, after {a}; "
      f"back {r.get('recovered')}/{n} R99 {r.get('r99_s')}s, re-subscribed {x.get('recovered')}/{n} R99 {x.get('r99_s')}s")
sys.exit(0 if ok else 1)
PY
}

for s in ${servers//,/ }; do
	case $s in
	socketio) one socketio 29101 29101 50 85 socketio '/socket.io/?EIO=4&transport=websocket' \
		$'socketio:\n  namespace: /chat\n  auth: {token: s3cret}\n  events: [["join", "r1"], ["join", "r2"]]\n  ack: true' \
		node $node/socketio.js 29101 25000 20000 45000 ;;
	graphql-ws) one graphql-ws 29102 29102 30 60 graphql-ws / \
		$'graphql-ws:\n  payload: {token: s3cret}\n  operations: [{query: "subscription { greetings }"}]' \
		node $node/graphqlws.js 29102 12000 ;;
	aedes) one aedes 29103 29103 50 100 mqtt / \
		$'mqtt:\n  keepalive: 30s\n  username: u\n  password: pw\n  topics: [t/a, t/b]\n  qos: 1' \
		node $node/aedes.mjs 29103 ;;
	mochi) one mochi 29104 29105 50 100 mqtt / \
		$'mqtt:\n  version: 5\n  keepalive: 30s\n  username: u\n  password: pw\n  topics: [t/a, t/b]\n  qos: 1' \
		"$mochi" 29104 29105 ;;
	phoenix) one phoenix 29106 29106 65 110 phoenix '/socket/websocket?vsn=2.0.0' \
		$'phoenix:\n  topics: ["room:a", "room:b"]\n  payload: {token: s3cret}' \
		node $node/phoenix.js 29106 60000 ;;
	signalr) one signalr 29107 29107 35 70 signalr /hub \
		$'signalr:\n  joins: [{target: JoinGroup, arguments: ["g1"]}, {target: JoinGroup, arguments: ["g2"]}]' \
		node $node/signalr.js 29107 15000 30000 ;;
	actioncable) one actioncable 29108 29108 12 30 actioncable '/cable?token=s3cret' \
		$'actioncable:\n  channels: [{channel: RoomChannel, room: a}, {channel: RoomChannel, room: b}]' \
		ruby internal/realservers/ruby/cable.rb 29108 ;;
	*) echo "sessions.sh: unknown server $s" >&2 && exit 2 ;;
	esac
done
echo "results: $out"
exit $fail
