#!/usr/bin/env bash
# drill-lb.sh: the drill's acceptance through a real load balancer
# (docs/loadbalancer.md). Heavy: run it under the shared lock,
#   flock "$STAMPEDE_LOCK" lab/drill-lb.sh [--clients N] [--out DIR] [--duration D] [--accept-rate R]
#       [--lb 'LB.SH FLAGS'] [--deploy 'ROLLING-DEPLOY.SH FLAGS'] [--policies jittered,fixed] [--no-wss]
#
# For each policy, on fresh infrastructure (scripts/lb.sh up DIR --backlog 64
# --accept-rate 500: two HAProxy instances in front of three bundled
# targets), --clients (default 10,000) clients hold connections through
# HAProxy while scripts/rolling-deploy.sh restarts every backend from 10 s
# into the run (--accept-rate R changes each backend's rate, for a smaller
# trial at the same clients-to-capacity ratio; --lb passes more flags to
# lb.sh up, e.g. --lb '--rate-limit off' or --lb '--queue 64'; --deploy
# passes flags to rolling-deploy.sh, e.g. --deploy '--signal KILL'), gated by
# --slo recovered_share==100% --slo 'wasted_attempts<0.1':
#   jittered  exp:initial=1s,max=30s,jitter=0.5,spread=100ms-500ms  (expected: exit 0)
#   fixed     fixed:initial=1s                                      (expected: exit 1)
# With `stampede drill` the deploy is its --restart-cmd at --at 10s and a
# JUnit file is written; without it (before drill exists) `stampede
# loadgen` holds the fleet and the deploy starts 10 s after the fleet does.
# --policies runs a subset. Then (unless --no-wss), with --tls
# infrastructure, the wss line: --ca works, no CA fails with the tls class,
# --insecure works with a warning.
# It prints one block of figures per policy and the verdict. Results
# folders go to --out (default a temporary folder, kept and printed).
# STAMPEDE=path uses a built binary instead of bin/stampede.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=10000 out="" duration=120s rate=500 lbflags=() deployflags=() policies="jittered fixed" wss=1
while [ $# -gt 0 ]; do
	case $1 in
	--clients) clients=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	--duration) duration=$2 && shift 2 ;;
	--accept-rate) rate=$2 && shift 2 ;;
	--lb) lbflags+=($2) && shift 2 ;;
	--deploy) deployflags+=($2) && shift 2 ;;
	--policies) policies=${2//,/ } && shift 2 ;;
	--no-wss) wss=0 && shift ;;
	*)
		echo "usage: $0 [--clients N] [--out DIR] [--duration D] [--accept-rate R] [--lb 'LB.SH FLAGS'] [--deploy 'ROLLING-DEPLOY.SH FLAGS'] [--policies jittered,fixed] [--no-wss]" >&2
		exit 2
		;;
	esac
done
exe=${STAMPEDE:-bin/stampede}
[ -x "$exe" ] || make build >/dev/null
exe=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
[ -n "$out" ] || out=$(mktemp -d /tmp/drill-lb-XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)
has_drill=0
# The first connects at the rate HAProxy admits (two backends' worth,
# docs/loadbalancer.md): 10,000 clients are connected at about 10 s.
ramp=$(awk -v r="$rate" 'BEGIN { printf "%d", r * 2 }')
"$exe" drill --help >/dev/null 2>&1 && has_drill=1

lbdir=""
cleanup() { [ -z "$lbdir" ] || scripts/lb.sh down "$lbdir" >/dev/null 2>&1 || true; }
trap cleanup EXIT

echo "machine: $(nproc) cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), haproxy $(haproxy -v 2>/dev/null | head -1 | cut -d' ' -f3)"
echo "drill: $clients clients through HAProxy (2 instances) to 3 targets of backlog 64, accept rate $rate/s; rolling deploy at 10 s; $([ $has_drill = 1 ] && echo "stampede drill" || echo "stampede loadgen + rolling-deploy.sh in the background (no drill command yet)")"

# figures NAME RC RES prints the block of one policy.
figures() {
	local name=$1 rc=$2 res=$3
	echo "== $name: exit $rc"
	jq -r '.slo[] | "  slo \(.expr): value \(.value) -> \(if .pass then "pass" else "FAIL" end)"' "$res/summary.json"
	jq -r '.events[] | "  event \(.kind) \(.spec // .mode) \(.start_s)s-\(.end_s)s"' "$res/summary.json"
	jq -r '. as $s | .recovery[]? | ($s.events[.event]) as $e | "  recovery of \($e.kind) \(if $e.kind == "backend" then $e.spec else ($e.mode // "") end) at \($e.start_s * 100 | round / 100)s: back \(.recovered)/\(.connected_before) (\(.disconnected) down), r99 \(.r99_s // "-") r100 \(.r100_s // "-"), wasted/client \(.wasted_attempts_per_client // "-"), outage/client \(.outage_attempts_per_client // "-")"' "$res/summary.json"
	jq -r '"  connect: \(.connect.attempts) attempts, \(.connect.successes) successes; failures " + ([.connect.failures | to_entries[] | select(.value > 0) | "\(.key) \(.value)"] | join(", "))' "$res/summary.json"
	jq -r '"  disconnects: " + ([.events[].disconnects // {} | to_entries[] | select(.value > 0) | "\(.key) \(.value)"] | join(", "))' "$res/summary.json"
	jq -r '.haproxy.rows[]? | select(.server != "BACKEND") | "  haproxy \(.proxy)/\(.server): sessions \(.sessions) peak \(.sessions_peak), 5xx \(.http_5xx), connect errors \(.connect_errors), retries \(.retries), redispatches \(.redispatches), checks down \(.checks_down)"' "$res/summary.json"
	[ -s "$res/deploy.log" ] && sed 's/^/  deploy: /' "$res/deploy.log"
	[ -s "$res/junit.xml" ] && echo "  junit: $(grep -c '<testcase' "$res/junit.xml") testcases, $(grep -c '<failure' "$res/junit.xml") failed ($res/junit.xml)"
	return 0
}

declare -A spec=([jittered]="exp:initial=1s,max=30s,jitter=0.5,spread=100ms-500ms" [fixed]="fixed:initial=1s")
declare -A rcs=()
for name in $policies; do
	lbdir=$out/lb-$name
	res=$out/$name
	url=$(scripts/lb.sh up "$lbdir" --backlog 64 --accept-rate "$rate" "${lbflags[@]}" 2>/dev/null | tail -n 1)
	common=(--url "$url" --clients "$clients" --ramp "$ramp" --policy "${spec[$name]}" --duration "$duration"
		--slo 'recovered_share==100%' --slo 'wasted_attempts<0.1'
		--haproxy-socket "$lbdir/haproxy-*.sock" --out "$res" --progress 10s)
	set +e
	if [ $has_drill = 1 ]; then
		"$exe" drill "${common[@]}" --restart-cmd "scripts/rolling-deploy.sh $lbdir${deployflags[*]:+ ${deployflags[*]}}" --at 10s \
			--junit "$res/junit.xml" >"$out/$name.txt" 2>&1
		rc=$?
	else
		"$exe" loadgen "${common[@]}" >"$out/$name.txt" 2>&1 &
		fleet=$!
		mkdir -p "$res"
		(sleep 10 && scripts/rolling-deploy.sh "$lbdir" >"$out/$name.deploy.log" 2>&1) &
		deploy=$!
		wait $fleet
		rc=$?
		wait $deploy || echo "  rolling-deploy.sh failed: see $out/$name.deploy.log"
		cp "$out/$name.deploy.log" "$res/deploy.log"
	fi
	set -e
	rcs[$name]=$rc
	scripts/lb.sh down "$lbdir"
	lbdir=""
	figures "$name" "$rc" "$res"
done

# wss through HAProxy terminating TLS with a test CA.
if [ "$wss" = 1 ]; then
	lbdir=$out/lb-tls
	url=$(scripts/lb.sh up "$lbdir" --tls 2>/dev/null | tail -n 1)
	echo "== wss: $url, test CA $lbdir/tls/ca.pem"
	wss() {
		local name=$1
		shift
		set +e
		if [ $has_drill = 1 ]; then
			"$exe" drill --url "$url" --clients 20 --duration 3s --restart-cmd true --at 1s --quiet \
				--out "$out/wss-$name" "$@" >"$out/wss-$name.txt" 2>&1
		else
			"$exe" loadgen --url "$url" --clients 20 --duration 3s --quiet "$@" >"$out/wss-$name.txt" 2>&1
		fi
		local rc=$?
		set -e
		echo "  $name: exit $rc; $(grep -m1 '^connect:' "$out/wss-$name.txt")$(grep -m1 -i 'warning' "$out/wss-$name.txt" | sed 's/^/; /')"
	}
	if [ $has_drill = 1 ]; then
		wss with-ca --ca "$lbdir/tls/ca.pem"
	else
		echo "  with-ca: not run (this build has no drill --ca)"
	fi
	wss no-ca
	wss insecure --insecure
	scripts/lb.sh down "$lbdir"
	lbdir=""
fi

echo "verdict: jittered exit ${rcs[jittered]:-not run} (want 0), fixed exit ${rcs[fixed]:-not run} (want 1)"
echo "results: $out"
[ "${rcs[jittered]:-}" = 0 ] && [ "${rcs[fixed]:-}" = 1 ]
