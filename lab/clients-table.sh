#!/usr/bin/env bash
# clients-table.sh: docs/clients.md's table of the herd each client
# library's default rule makes: the bench's storm (10,000 clients, backlog
# 128, 2,000 accepts/s, an abrupt restart at 8 s with 2 s down, 45 s) once
# per preset, one bench run each, and the table in Markdown. Heavy: every
# run takes the shared lock itself, one run at a time (about a minute
# each), so do not wrap the script in flock:
#   STAMPEDE_LOCK=/path/to/lock lab/clients-table.sh [--clients N] [--presets LIST] [--out DIR]
#
# LIST is comma-separated (default every preset; actioncable needs the
# actioncable protocol's pings and runs with --protocol actioncable, which
# the bundled target serves). Each row: the command that made it and its date, R99 and
# R100 from ready, the herd's peak per 100 ms, peak:mean, wasted attempts
# per client, and the clients that gave up (attempts_exhausted) and those
# still retrying at the end. Results folders go to --out (default a
# temporary folder, kept and printed). STAMPEDE=path uses a built binary
# instead of bin/stampede.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=10000 out=""
presets="socketio,signalr,phoenix,centrifuge,graphql-ws,reconnecting-websocket,actioncable,pusher,ably,mqttjs,paho,nats,grpc,stompjs,sgcwebsockets"
while [ $# -gt 0 ]; do
	case $1 in
	--clients) clients=$2 && shift 2 ;;
	--presets) presets=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	*) echo "clients-table.sh: unknown argument $1" >&2 && exit 2 ;;
	esac
done
bin=${STAMPEDE:-bin/stampede}
[ -x "$bin" ] || go build -o "$bin" ./cmd/stampede
[ -n "$out" ] || out=$(mktemp -d /tmp/stampede-clients.XXXXXX)
mkdir -p "$out"
locked() {
	if [ -n "${STAMPEDE_LOCK:-}" ]; then flock -o "$STAMPEDE_LOCK" "$@"; else "$@"; fi
}
echo "| preset | R99 s | R100 s | herd peak /100 ms | peak:mean | wasted /client | gave up | still retrying | command, date |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
IFS=, read -ra list <<<"$presets"
for p in "${list[@]}"; do
	extra=()
	[ "$p" = actioncable ] && extra=(--protocol actioncable)
	cmd="stampede bench --clients $clients --policies $p ${extra[*]}"
	day=$(date -u +%Y-%m-%d)
	# A preset whose fleet never comes back fails the bench's checks: the
	# row still says what it did.
	locked timeout 300 "$bin" bench --clients "$clients" --policies "$p" "${extra[@]}" \
		--out "$out/$p" --force -q >"$out/$p.txt" 2>&1 || true
	python3 - "$p" "$out/$p" "${cmd% }" "$day" "$out/$p.txt" <<'PY'
import glob, json, sys
name, folder, cmd, day, log = sys.argv[1:]
runs = glob.glob(folder + "/1-*/summary.json")
if not runs:
    last = open(log).read().strip().splitlines()[-1:] or ["no output"]
    print(f"| `{name}` | - | - | - | - | - | - | - | not run: {last[0]} |")
    sys.exit()
s = json.load(open(runs[0]))
r = (s.get("recovery") or [{}])[0]
f = lambda v, d=2: "never" if v is None else f"{v:.{d}f}"
print(f"| `{name}` | {f(r.get('r99_s'))} | {f(r.get('r100_s'))} | {r.get('herd_peak_per_100ms', 0):.0f} | "
      f"{f(r.get('herd_peak_to_mean'), 1)} | {f(r.get('wasted_attempts_per_client'))} | "
      f"{r.get('attempts_exhausted', 0)} | {r.get('still_retrying', 0)} | `{cmd}`, {day} |")
PY
done
echo "results: $out" >&2
