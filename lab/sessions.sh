#!/usr/bin/env bash
# sessions.sh: the session protocols' acceptance (docs/protocols.md). Heavy:
# run it under the shared lock,
#   flock "$STAMPEDE_LOCK" lab/sessions.sh [--clients N] [--servers LIST] [--out DIR]
#
# For each real server of internal/realservers (LIST, comma-separated, of
# socketio, graphql-ws, aedes, mochi, phoenix, signalr, actioncable,
# rabbit-stomp, rabbit-mqtt, centrifuge; default all), with its default
# heartbeats: a drill of --clients (default 1,000) clients speaking its
# protocol, the server killed (SIGKILL to its process group) and started
# again on the same port by the drill's --restart-cmd after its first
# heartbeat timeout would have fired (Socket.IO: at 50 s of 85 s, its
# timeouts firing at 45 s; ActionCable: at 12 s of 30 s, its pings every
# 3 s, a client stale after 6 s; centrifuge-go: at 55 s of 95 s, its
# pings every 25 s, the first between 12.5 s and 25 s, each wanting its
# pong within 8 s). RabbitMQ is a node of the script's own
# (its own node name, ports, database, logs and plugins file under --out),
# never the machine's service. Checks, printed one line each, exit 1 if
# one fails:
#   - no disconnect before the deploy (timeline.csv);
#   - the server's own count of sessions joined and subscribed is --clients
#     before the deploy and again at the end (its GET /stats, 3 s before;
#     RabbitMQ: rabbitmqctl eval of its direct connections and of the
#     bindings on amq.topic, two per client, 12 s before, rabbitmqctl
#     taking seconds on a busy machine);
#   - every client was dropped by the deploy (none never down), and is
#     back and re-subscribed (recovery[0], and its resubscribed figures);
#   - R99 to re-subscribed printed beside R99 to back.
# Results folders go to --out (default a temporary folder, kept and
# printed). STAMPEDE=path uses a built binary instead of bin/stampede.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=1000 servers="socketio,graphql-ws,aedes,mochi,phoenix,signalr,actioncable,rabbit-stomp,rabbit-mqtt,centrifuge" out=""
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
build() { # build NAME: a server module of internal/realservers, once per --out
	[ -x "$out/bin/$1" ] || (cd "internal/realservers/$1" && go build -o "$out/bin/$1" .)
}
fail=0

# httpstats PORT: a server's own counts, from its GET /stats.
httpstats() { curl -sf "http://127.0.0.1:$1/stats"; }

# one NAME PORT STATS AT DURATION PROTOCOL URLPATH SECTION SERVER-COMMAND...
# STATS is a command printing the server's counts as JSON ({"joined": N,
# "subscribed": M}) and failing until the server answers; it runs $lead
# seconds (default 3) before the deploy and before the end. The server runs
# in a session of its own (setsid), which writes its ID to NAME.pid: the
# deploy kills that process group whole (kill -9 -ID).
one() {
	local name=$1 port=$2 stats=$3 at=$4 dur=$5 proto=$6 path=$7 section=$8
	shift 8
	local dir=$out/$name pidf=$out/$name.pid
	mkdir -p "$dir"
	printf 'protocol: %s\n%s\n' "$proto" "$section" >"$out/$name.yaml"
	local start="setsid sh -c 'echo \$\$ >$pidf; exec $*'"
	rm -f "$pidf"
	sh -c "$start >$out/$name.log 2>&1 &"
	for _ in $(seq 1 600); do $stats >/dev/null 2>&1 && break; sleep 0.2; done
	local l=${lead:-3} # how long STATS may take
	(sleep "$((at - l))"; $stats >"$out/$name.before.json") &
	(sleep "$((dur - l))"; $stats >"$out/$name.after.json") &
	"$bin" drill --url "ws://127.0.0.1:$port$path" --config "$out/$name.yaml" --clients "$clients" \
		--policy exp:initial=1s,max=10s,jitter=0.5 --duration "${dur}s" --at "${at}s" \
		--restart-cmd "kill -9 -\$(cat $pidf); sleep 1; $start >>$out/$name.log 2>&1 &" \
		--out "$dir" --force -q >"$out/$name.txt" 2>&1 || true
	wait
	kill -9 -- "-$(cat "$pidf")" 2>/dev/null || true
	python3 - "$name" "$clients" "$at" "$dir" "$out/$name.before.json" "$out/$name.after.json" <<'PY' || fail=1
import csv, json, sys
name, n, at, d, before, after = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
s = json.load(open(d + "/summary.json"))
early = sum(int(r["disconnects"]) for r in csv.DictReader(open(d + "/timeline.csv")) if float(r["t_s"]) < at)
b, a = json.load(open(before)), json.load(open(after))
r = s["recovery"][0] if s["recovery"] else {}
x = r.get("resubscribed") or {}
# every client dropped by the deploy (none never down), back and
# re-subscribed, each with its R99
ok = early == 0 and b["joined"] == n == b["subscribed"] and a["joined"] == n == a["subscribed"] and \
    r.get("never_down") == 0 and r.get("recovered") == n and x.get("recovered") == n and \
    r.get("r99_s") is not None and x.get("r99_s") is not None
r99 = lambda v: "-" if v is None else f"{v:.2f}"
print(f"{name}: {'ok' if ok else 'FAILED'}: disconnects before the deploy {early}; server before {b}, after {a}; "
      f"never down {r.get('never_down')}; back {r.get('recovered')}/{n} R99 {r99(r.get('r99_s'))}s, "
      f"re-subscribed {x.get('recovered')}/{n} R99 {r99(x.get('r99_s'))}s")
sys.exit(0 if ok else 1)
PY
}

# rabbit NAME: a RabbitMQ node of the script's own for server NAME, as
# internal/realservers/rabbitmq_test.go starts one: every file under
# $out/NAME.node, every port its own, web_stomp on 29109 and web_mqtt on
# 29110. It writes $out/NAME.node/run (the server command) and
# $out/NAME.node/stats (its counts: rabbitmqctl eval).
rabbit() {
	local d=$out/$1.node rb=/usr/lib/rabbitmq/bin
	[ -x "$rb/rabbitmq-server" ] || { echo "sessions.sh: RabbitMQ is not installed ($rb)" >&2; return 1; }
	rm -rf "$d" && mkdir -p "$d"
	cat >"$d/rabbitmq.conf" <<-CONF
		listeners.tcp.default = 127.0.0.1:29120
		mqtt.listeners.tcp.default = 127.0.0.1:29121
		stomp.listeners.tcp.default = 127.0.0.1:29122
		web_stomp.tcp.ip = 127.0.0.1
		web_stomp.tcp.port = 29109
		web_mqtt.tcp.ip = 127.0.0.1
		web_mqtt.tcp.port = 29110
	CONF
	echo '[rabbitmq_web_stomp,rabbitmq_web_mqtt].' >"$d/enabled_plugins"
	: >"$d/rabbitmq-env.conf" # not the machine's, which names its node
	cat >"$d/env" <<-ENV
		export HOME=$d RABBITMQ_MNESIA_BASE=$d/mnesia RABBITMQ_LOG_BASE=$d/log
		export RABBITMQ_FEATURE_FLAGS_FILE=$d/feature_flags RABBITMQ_ENABLED_PLUGINS_FILE=$d/enabled_plugins
		export RABBITMQ_CONFIG_FILE=$d/rabbitmq.conf RABBITMQ_CONF_ENV_FILE=$d/rabbitmq-env.conf
		export RABBITMQ_PID_FILE=$d/pid RABBITMQ_NODENAME=stampede-sessions-$1@localhost
		export RABBITMQ_NODE_PORT=29120 RABBITMQ_DIST_PORT=29123 ERL_EPMD_ADDRESS=127.0.0.1
		export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
	ENV
	printf '#!/bin/sh\n. %s/env\ncd %s\nexec %s/rabbitmq-server\n' "$d" "$d" "$rb" >"$d/run"
	cat >"$d/stats" <<-STATS
		#!/bin/bash
		. $d/env
		(exec 3<>/dev/tcp/127.0.0.1/$2) 2>/dev/null || exit 1
		for _ in 1 2 3; do # rabbitmqctl may time out on a busy machine
			$rb/rabbitmqctl -n stampede-sessions-$1@localhost -q eval \
				'{length(rabbit_direct:list()), length(rabbit_binding:list_for_source(rabbit_misc:r(<<"/">>, exchange, <<"amq.topic">>)))}.' \
				2>>$d/stats.err | sed -n 's/^{\([0-9]*\),\([0-9]*\)}$/{"joined": \1, "subscribed": \2}/p' | grep . |
				python3 -c 'import json,sys; m=json.load(sys.stdin); m["subscribed"]//=2; print(json.dumps(m))' && exit 0
			sleep 1
		done
		exit 1
	STATS
	chmod +x "$d/run" "$d/stats"
}

for s in ${servers//,/ }; do
	case $s in
	socketio) one socketio 29101 "httpstats 29101" 50 85 socketio '/socket.io/?EIO=4&transport=websocket' \
		$'socketio:\n  namespace: /chat\n  auth: {token: s3cret}\n  events: [["join", "r1"], ["join", "r2"]]\n  ack: true' \
		node $node/socketio.js 29101 25000 20000 45000 ;;
	graphql-ws) one graphql-ws 29102 "httpstats 29102" 30 60 graphql-ws / \
		$'graphql-ws:\n  payload: {token: s3cret}\n  operations: [{query: "subscription { greetings }"}]' \
		node $node/graphqlws.js 29102 12000 ;;
	aedes) one aedes 29103 "httpstats 29103" 50 100 mqtt / \
		$'mqtt:\n  keepalive: 30s\n  username: u\n  password: pw\n  topics: [t/a, t/b]\n  qos: 1' \
		node $node/aedes.mjs 29103 ;;
	mochi) build mochi && one mochi 29104 "httpstats 29105" 50 100 mqtt / \
		$'mqtt:\n  version: 5\n  keepalive: 30s\n  username: u\n  password: pw\n  topics: [t/a, t/b]\n  qos: 1' \
		"$out/bin/mochi" 29104 29105 ;;
	phoenix) one phoenix 29106 "httpstats 29106" 65 110 phoenix '/socket/websocket?vsn=2.0.0' \
		$'phoenix:\n  topics: ["room:a", "room:b"]\n  payload: {token: s3cret}' \
		node $node/phoenix.js 29106 60000 ;;
	signalr) one signalr 29107 "httpstats 29107" 35 70 signalr /hub \
		$'signalr:\n  joins: [{target: JoinGroup, arguments: ["g1"]}, {target: JoinGroup, arguments: ["g2"]}]' \
		node $node/signalr.js 29107 15000 30000 ;;
	actioncable) one actioncable 29108 "httpstats 29108" 12 30 actioncable '/cable?token=s3cret' \
		$'actioncable:\n  channels: [{channel: RoomChannel, room: a}, {channel: RoomChannel, room: b}]' \
		ruby internal/realservers/ruby/cable.rb 29108 ;;
	rabbit-stomp) rabbit rabbit-stomp 29109 && lead=12 one rabbit-stomp 29109 "$out/rabbit-stomp.node/stats" 30 90 stomp /ws \
		$'stomp:\n  login: guest\n  passcode: guest\n  destinations: [/topic/a, /topic/b]' \
		"$out/rabbit-stomp.node/run" ;;
	rabbit-mqtt) rabbit rabbit-mqtt 29110 && lead=12 one rabbit-mqtt 29110 "$out/rabbit-mqtt.node/stats" 50 110 mqtt /ws \
		$'mqtt:\n  keepalive: 30s\n  username: guest\n  password: guest\n  topics: [t/a, t/b]\n  qos: 1' \
		"$out/rabbit-mqtt.node/run" ;;
	centrifuge) build centrifuge && one centrifuge 29111 "httpstats 29111" 55 95 centrifuge /connection/websocket \
		$'centrifuge:\n  token: s3cret\n  channels: ["room:a", "room:b"]' \
		"$out/bin/centrifuge" 29111 ;;
	*) echo "sessions.sh: unknown server $s" >&2 && exit 2 ;;
	esac
done
echo "results: $out"
exit $fail
