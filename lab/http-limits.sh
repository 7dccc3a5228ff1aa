#!/usr/bin/env bash
# http-limits.sh: honouring Retry-After against a real rate limiter. nginx
# limit_req at RATE requests/s (scripts/nginx-limit.sh) answers the rest
# 429 with Retry-After; an HTTP fleet offering three times that runs twice,
# honouring the hint and ignoring it (--no-retry-after), first without a
# deadline and then with one, and the script prints goodput, early retries
# and amplification side by side with the ratio of the amplifications.
# It also prints what each run cost: the attempt p90 (a limiter answers a
# 429 in about a millisecond here), the CPU seconds the fleet and nginx
# used, and the load average before it: on this 2-core machine the fleet
# costs about three times nginx's CPU per attempt, so a machine busy with
# other work slows the fleet's reads first (docs/cli.md, "A real rate
# limiter").
#
#   lab/http-limits.sh [--rate R] [--clients N] [--duration D] [--retry-after S] [--deadline D]
#
# Defaults: 500 r/s, 2,000 clients offering 1,500/s for 30 s, Retry-After:
# 5, deadline 4s. Everything runs on 127.0.0.1; nginx is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

rate=500 clients=2000 duration=30s retry_after=5 deadline=4s
while [ $# -gt 0 ]; do
	case $1 in
	--rate) rate=$2 && shift 2 ;;
	--clients) clients=$2 && shift 2 ;;
	--duration) duration=$2 && shift 2 ;;
	--retry-after) retry_after=$2 && shift 2 ;;
	--deadline) deadline=$2 && shift 2 ;;
	*) echo "usage: $0 [--rate R] [--clients N] [--duration D] [--retry-after S] [--deadline D]" >&2 && exit 2 ;;
	esac
done
offered=$((rate * 3))

make -s build
dir=$(mktemp -d /tmp/stampede-http-limits.XXXXXX)
trap 'bash scripts/nginx-limit.sh down "$dir/nginx" >/dev/null 2>&1 || true' EXIT
mkdir -p "$dir/nginx"
url=$(bash scripts/nginx-limit.sh up "$dir/nginx" --rate "$rate" --retry-after "$retry_after" | tail -1)
echo "nginx limit_req $rate r/s, 429 with Retry-After: $retry_after, at $url"
echo "fleet: $clients clients offering $offered/s for $duration"
echo

# field NAME FILE prints a number of summary.json's http object.
field() { grep -o "\"$1\": *[0-9.e+-]*" "$2" | head -1 | sed 's/.*: *//'; }
# attempt_p90 FILE prints the p90 of the attempt latency in ms.
attempt_p90() { sed -n '/"attempt_latency_ms"/,/}/p' "$1" | grep -o '"p90": *[0-9.e+-]*' | sed 's/.*: *//'; }
# nginx_ticks prints the CPU time (clock ticks) nginx's processes used so far.
nginx_ticks() {
	local pids p t=0
	pids="$(cat "$dir/nginx/nginx.pid") $(pgrep -P "$(cat "$dir/nginx/nginx.pid")" | tr '\n' ' ' || true)"
	for p in $pids; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
	echo "$t"
}
hz=$(getconf CLK_TCK)

echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-14s %12s %10s %14s %10s %12s %12s %10s %10s\n' deadline retry-after goodput/s early amplification abandoned "vs honoured" "attempt p90" "fleet cpu" "nginx cpu"
for dl in none "$deadline"; do
	honoured=""
	for mode in honoured ignored; do
		args=(--clients "$clients" --rate "$offered" --duration "$duration" --out "$dir/$dl-$mode")
		[ "$dl" = none ] || args+=(--deadline "$dl")
		[ "$mode" = honoured ] || args+=(--no-retry-after)
		n0=$(nginx_ticks)
		TIMEFORMAT='%U %S'
		fleet_cpu=$({ time bin/stampede http "${args[@]}" "$url" >"$dir/$dl-$mode.txt" 2>&1 || true; } 2>&1 | awk '{printf "%.1f", $1 + $2}')
		nginx_cpu=$(awk -v t=$(($(nginx_ticks) - n0)) -v hz="$hz" 'BEGIN { printf "%.1f", t / hz }')
		s=$dir/$dl-$mode/summary.json
		amp=$(field amplification "$s")
		ratio="-"
		if [ "$mode" = honoured ]; then honoured=$amp; else ratio=$(awk -v a="$amp" -v h="$honoured" 'BEGIN { printf "%.2fx", a / h }'); fi
		printf '%-10s %-14s %12.1f %10d %14.2f %10d %12s %10.1fms %9ss %9ss\n' "$dl" "$mode" "$(field goodput_per_s "$s")" \
			"$(field early_retries "$s")" "$amp" "$(field abandoned "$s")" "$ratio" "$(attempt_p90 "$s")" "$fleet_cpu" "$nginx_cpu"
	done
done
echo
echo "results in $dir (summary.json, http_timeline.csv, .hlog files per run)"
