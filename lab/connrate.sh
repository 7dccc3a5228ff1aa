#!/usr/bin/env bash
# Connection rate: how fast stampede's loadgen opens N WebSocket connections
# against the bundled target, next to the simplest Go client that does the
# same (lab/connrate: a goroutine per connection doing gobwas/ws Dial,
# nothing else). Both are measured in one run, alternating, each against a
# fresh `stampede target --backlog 4096` process on a new port (so no
# TIME_WAIT from an earlier round is in the way), and the script prints each
# rate, their spread and the ratio of the medians.
#
#   lab/connrate.sh [-n N] [-runs R]     defaults: -n 15000 -runs 3
#
# The loadgen's rate is its own "first connects: N clients within Ts of the
# start (R/s)" line; the minimal program's is the same measure (first dial
# to last upgrade). STAMPEDE=path uses a built stampede binary instead of
# building ./cmd/stampede. Exit status 1 when stampede did not connect all N
# clients in a round or the ratio is below 1.
set -euo pipefail

n=15000
runs=3
while [ $# -gt 0 ]; do
	case "$1" in
		-n) n=$2; shift 2 ;;
		-runs) runs=$2; shift 2 ;;
		-h|--help) sed -n '2,17p' "$0"; exit 0 ;;
		*) echo "connrate.sh: unknown argument $1 (use -n N, -runs R)" >&2; exit 2 ;;
	esac
done

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
tpid=""
cleanup() {
	if [ -n "$tpid" ]; then kill "$tpid" 2>/dev/null || true; wait "$tpid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

exe=${STAMPEDE:-}
if [ -z "$exe" ]; then
	exe=$tmp/stampede
	go build -o "$exe" ./cmd/stampede
fi
go -C lab build -o "$tmp/connrate" ./connrate

# start_target starts a target process on a free port and sets addr.
start_target() {
	: >"$tmp/target.out"
	"$exe" target --addr 127.0.0.1:0 --backlog 4096 >"$tmp/target.out" 2>"$tmp/target.err" &
	tpid=$!
	addr=""
	for _ in $(seq 100); do
		addr=$(sed -n 's/.*"addr":"\([^"]*\)".*/\1/p' "$tmp/target.out" | head -1)
		[ -n "$addr" ] && return 0
		sleep 0.1
	done
	echo "connrate.sh: the target did not print its ready line:" >&2
	cat "$tmp/target.err" >&2
	exit 1
}

stop_target() {
	kill "$tpid" 2>/dev/null || true
	wait "$tpid" 2>/dev/null || true
	tpid=""
}

fail=0
stampede_rates=()
minimal_rates=()
for i in $(seq "$runs"); do
	start_target
	out=$("$exe" loadgen --url "ws://$addr/" --clients "$n" --loadgen-procs 1 --duration 8s --progress 0 2>&1) || true
	line=$(grep '^first connects:' <<<"$out" || true)
	got=$(sed -n 's/^first connects: \([0-9]*\) clients.*/\1/p' <<<"$line")
	rate=$(sed -n 's/.*(\([0-9]*\)\/s)$/\1/p' <<<"$line")
	stop_target
	if [ "$got" != "$n" ] || [ -z "$rate" ]; then
		echo "round $i: stampede loadgen did not connect all $n clients:" >&2
		echo "$out" >&2
		fail=1
		rate=0
	fi
	stampede_rates+=("$rate")
	printf 'round %d  stampede loadgen  %s\n' "$i" "$line"

	start_target
	# A dial of the minimal program that fails (a reset when its burst
	# overflows the accept queue) is not retried; its rate still counts.
	line=$("$tmp/connrate" -url "ws://$addr/" -n "$n" 2>&1) || true
	rate=$(sed -n 's/.*(\([0-9]*\)\/s).*/\1/p' <<<"$line" | head -1)
	stop_target
	minimal_rates+=("${rate:-0}")
	printf 'round %d  minimal program   %s\n' "$i" "$line"
done

# stats prints "min median max" of its arguments.
stats() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END{m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%d %d %d", v[1], m, v[NR]}'; }
read -r smin smed smax <<<"$(stats "${stampede_rates[@]}")"
read -r mmin mmed mmax <<<"$(stats "${minimal_rates[@]}")"
echo
printf 'connections: %d per round, %d rounds, target: stampede target --backlog 4096 (1 process)\n' "$n" "$runs"
printf 'stampede loadgen: median %d/s  (min %d, max %d)\n' "$smed" "$smin" "$smax"
printf 'minimal program:  median %d/s  (min %d, max %d)\n' "$mmed" "$mmin" "$mmax"
ratio=$(awk -v s="$smed" -v m="$mmed" 'BEGIN{ if (m > 0) printf "%.2f", s/m; else print "inf" }')
printf 'ratio stampede/minimal (medians): %s\n' "$ratio"
if [ "$fail" = 1 ]; then exit 1; fi
awk -v r="$ratio" 'BEGIN{ exit !(r == "inf" || r >= 1.0) }' || { echo "ratio below 1.0" >&2; exit 1; }
