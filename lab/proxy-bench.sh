#!/usr/bin/env bash
# proxy-bench.sh: is the fault proxy a bottleneck? One run measures the message
# round trip of an echo fleet at CLIENTS connections twice: straight to the target,
# then through `stampede proxy` with no fault active, and prints both.
#
#   lab/proxy-bench.sh                      # 10,000 clients, 20 s each way
#   CLIENTS=2000 DURATION=10s lab/proxy-bench.sh
#   ROUNDS=3 lab/proxy-bench.sh             # alternate direct/proxy 3 times
#
# The proxy relays each connection with two sockets (two open files), so 10,000
# connections need two proxy processes under the 20,000 open-file limit: it runs as
# an SO_REUSEPORT group of PROXY_PROCS processes (default: 7,500 connections each).
# Exit status 1 when the proxy adds more than MAX_ADDED_MS (default 1) to the p50.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-10000}
DURATION=${DURATION:-20s}
MSG_RATE=${MSG_RATE:-1}
ROUNDS=${ROUNDS:-1}
PROXY_PROCS=${PROXY_PROCS:-$(( (CLIENTS + 7499) / 7500 ))}
TARGET_PROCS=${TARGET_PROCS:-$(( (CLIENTS + 14999) / 15000 ))}
MAX_ADDED_MS=${MAX_ADDED_MS:-1}
EXE=${STAMPEDE:-bin/stampede} # STAMPEDE=path uses that binary instead of building bin/stampede

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# free_port prints a loopback port in 7000-7999 (below the ephemeral range) that
# nothing listens on.
free_port() {
	for _ in $(seq 1 200); do
		local p=$(( 7000 + RANDOM % 1000 ))
		if ! ss -Hltn "sport = :$p" | grep -q .; then echo "$p"; return; fi
	done
	echo "proxy-bench: no free port in 7000-7999" >&2; exit 2
}

# ready waits (at most 15 s) for the JSON ready line a process writes to $1.
ready() {
	for _ in $(seq 1 150); do
		if [ -s "$1" ]; then return; fi
		sleep 0.1
	done
	echo "proxy-bench: no ready line in $1" >&2; cat "${1%.json}.err" >&2; exit 2
}

if [ -z "${STAMPEDE:-}" ]; then go build -o "$EXE" ./cmd/stampede; fi

TARGET_PORT=${TARGET_PORT:-$(free_port)}
"$EXE" target --addr "127.0.0.1:$TARGET_PORT" --backlog 4096 --procs "$TARGET_PROCS" \
	>"$work/target.json" 2>"$work/target.err" &
pids+=($!)
ready "$work/target.json"

PROXY_PORT=${PROXY_PORT:-$(free_port)}
"$EXE" proxy --listen "127.0.0.1:$PROXY_PORT" --upstream "127.0.0.1:$TARGET_PORT" --procs "$PROXY_PROCS" \
	>"$work/proxy.json" 2>"$work/proxy.err" &
pids+=($!)
ready "$work/proxy.json"
proxy_pids=$(jq -r '(.children // [.]) | .[].pid' "$work/proxy.json")

echo "proxy-bench: $CLIENTS echo clients at $MSG_RATE msg/s for $DURATION per run;" \
	"target $TARGET_PROCS process(es) on :$TARGET_PORT, proxy $PROXY_PROCS process(es) on :$PROXY_PORT" \
	"($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"

fleet() { # fleet NAME URL: one loadgen run into $work/NAME
	"$EXE" loadgen --url "$2" --clients "$CLIENTS" --mode echo --msg-rate "$MSG_RATE" \
		--duration "$DURATION" --progress 0 --out "$work/$1" >"$work/$1.txt" 2>&1 ||
		{ echo "proxy-bench: loadgen $1 failed:" >&2; cat "$work/$1.txt" >&2; exit 2; }
}

printf '\n%-10s %9s %10s %9s %9s %9s %9s\n' path connected messages "p50 ms" "p90 ms" "p99 ms" "max ms"
row() { # row LABEL NAME
	jq -r --arg l "$1" '[$l, .connect.successes, .latency_ms.message_rtt.count,
		.latency_ms.message_rtt.p50, .latency_ms.message_rtt.p90, .latency_ms.message_rtt.p99,
		.latency_ms.message_rtt.max] | @tsv' "$work/$2/summary.json" |
		awk -F'\t' '{printf "%-10s %9d %10d %9.3f %9.3f %9.3f %9.1f\n", $1, $2, $3, $4, $5, $6, $7}'
}
for r in $(seq 1 "$ROUNDS"); do
	fleet "direct-$r" "ws://127.0.0.1:$TARGET_PORT/"
	row direct "direct-$r"
	fleet "proxy-$r" "ws://127.0.0.1:$PROXY_PORT/"
	row proxy "proxy-$r"
done

# The proxy's cost: peak RSS and CPU of its processes over the whole run.
hz=$(getconf CLK_TCK)
for p in $proxy_pids; do
	rss=$(awk '/VmHWM/ {print $2}' "/proc/$p/status")
	cpu=$(awk -v hz="$hz" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$p/stat")
	echo "proxy process $p: peak RSS $((rss / 1024)) MiB, CPU ${cpu} s"
done

# Median over rounds of each path's p50, then the difference.
p50s() { for r in $(seq 1 "$ROUNDS"); do jq .latency_ms.message_rtt.p50 "$work/$1-$r/summary.json"; done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
direct=$(p50s direct)
proxied=$(p50s proxy)
awk -v d="$direct" -v p="$proxied" -v lim="$MAX_ADDED_MS" 'BEGIN {
	added = p - d
	printf "\nproxy adds %.3f ms to the message round-trip p50 (direct %.3f ms, via proxy %.3f ms; limit %s ms): %s\n",
		added, d, p, lim, (added <= lim ? "PASS" : "FAIL")
	exit (added <= lim ? 0 : 1)
}'
