#!/usr/bin/env bash
# What the live page costs a run (docs/cli.md, "The live page"): a run of
# N clients (default 50,000) against the bundled target with a restart,
# three times: the page open (a reader of its stream), the page open and
# a second one that never reads, and the page served but not open. The
# coordinator's CPU is profiled (lab/livecost runs storm.Run in-process);
# the samples under the pprof label stampede=live are the page's own CPU,
# set against the run's CPU over every role (summary.json resources). The
# stalled page must change neither R99 (beyond the runs' own spread) nor
# the run's length.
#
#   lab/live-cost.sh [-n N] [-duration D]     defaults: -n 50000 -duration 40s
#
# Run it under the heavy lock on a shared machine. Prints one line per run
# and the live share; exit status 1 when the share is above 1 %.
set -euo pipefail

n=50000
duration=40s
while [ $# -gt 0 ]; do
	case "$1" in
		-n) n=$2; shift 2 ;;
		-duration) duration=$2; shift 2 ;;
		-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
		*) echo "live-cost.sh: unknown argument $1 (use -n N, -duration D)" >&2; exit 2 ;;
	esac
done

cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/stampede" ./cmd/stampede
go -C lab build -o "$work/livecost" ./livecost

status=0
for mode in open stall none; do
	args=(-exe "$work/stampede" -clients "$n" -duration "$duration" -profile "$work/$mode.pprof")
	case $mode in
		stall) args+=(-stall) ;;
		none) args+=(-no-page) ;;
	esac
	line=$("$work/livecost" "${args[@]}" 2>"$work/$mode.log") || { echo "live-cost: $mode run failed:" >&2; tail -5 "$work/$mode.log" >&2; exit 2; }
	# "stampede: Total 80ms" (or 1.2s) in the profile's label breakdown.
	livecpu=$(go tool pprof -tags "$work/$mode.pprof" 2>/dev/null | awk '$1 == "stampede:" && $2 == "Total" { v=$3; if (v ~ /ms$/) { sub(/ms$/, "", v); v/=1000 } else sub(/s$/, "", v); print v }')
	livecpu=${livecpu:-0}
	runcpu=$(printf '%s' "$line" | sed -n 's/.*"run_cpu_s":\([0-9.e+-]*\).*/\1/p')
	share=$(awk -v a="$livecpu" -v b="$runcpu" 'BEGIN { printf "%.3f", (b > 0 ? 100 * a / b : 0) }')
	echo "$mode: $line live_cpu_s=$livecpu live_share_pct=$share"
	if [ "$mode" != none ] && awk -v s="$share" 'BEGIN { exit !(s > 1) }'; then status=1; fi
done
exit $status
