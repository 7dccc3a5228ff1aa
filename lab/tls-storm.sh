#!/usr/bin/env bash
# TLS storms: what a restart does to session resumption, and what each
# handshake costs the target. Runs `stampede run` against a wss:// target
# with an abrupt restart, one run per case, and prints for each: the
# handshakes of the reconnects after the restart (full and resumed, from
# timeline.csv), the target's CPU per reconnect and R99 (summary.json).
#
#   rsa-2048, keys in memory     every reconnect should be full (>= 99 %)
#   rsa-2048, --tls-ticket-keys  kept across the restart: resumed (>= 90 %)
#   ecdsa-p256, keys in memory   the full herd with the cheaper certificate
#
# then Go's crypto/tls server CPU per handshake, full and resumed, per
# kind, measured in the same run (lab/tlscost), and their ratio.
#
#   lab/tls-storm.sh [-n N]     default: -n 10000 (run it under the heavy lock)
#
# STAMPEDE=path uses a built binary. Exit status 1 when a case misses its
# share.
set -euo pipefail

n=10000
while [ $# -gt 0 ]; do
	case "$1" in
		-n) n=$2; shift 2 ;;
		-h|--help) sed -n '2,18p' "$0"; exit 0 ;;
		*) echo "tls-storm.sh: unknown argument $1 (use -n N)" >&2; exit 2 ;;
	esac
done

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exe=${STAMPEDE:-}
if [ -z "$exe" ]; then
	go build -o "$tmp/stampede" ./cmd/stampede
	exe=$tmp/stampede
fi
go -C lab build -o "$tmp/tlscost" ./tlscost

# A ramp of 500 a second: an RSA-2048 full handshake costs the target
# about 1.5 ms of CPU, and the loadgen shares its two cores, so the first
# connects take their time; the restart comes 10 s after they end, and the
# herd of full handshakes gets a minute to come back.
ramp=500
at=$(( n / ramp + 10 ))
dur=$(( at + 60 ))

# after DIR: full and resumed handshakes from the restart's bucket on.
after() {
	awk -F, 'NR==1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		$h["event"] ~ /restart/ { on = 1 }
		on { f += $h["tls_full"]; r += $h["tls_resumed"] }
		END { printf "%d %d\n", f, r }' "$1/timeline.csv"
}

# figures DIR: the target's CPU per reconnect (µs) and R99 (s).
figures() {
	python3 -c 'import json,sys
s = json.load(open(sys.argv[1] + "/summary.json"))
t = s["resources"]["target"]
r = s["recovery"][0] if s["recovery"] else {}
print(t.get("cpu_us_per_reconnect") or 0, r.get("r99_s") or 0)' "$1"
}

fail=0
printf '%-28s %8s %8s %9s %12s %8s\n' "case" "full" "resumed" "resumed%" "cpu/reconn" "R99 s"
while read -r name kind keys want; do
	out=$tmp/$name
	args=(--clients "$n" --ramp "$ramp" --tls-cert-kind "$kind" --chaos "at ${at}s restart abrupt down=1s" --duration "${dur}s" --out "$out" -q)
	if [ "$keys" = kept ]; then args+=(--tls-ticket-keys "$tmp/$name.keys"); fi
	"$exe" run "${args[@]}" >"$tmp/$name.log" 2>&1 || true
	read -r full resumed < <(after "$out")
	read -r cpu r99 < <(figures "$out")
	share=$(awk -v f="$full" -v r="$resumed" 'BEGIN { if (f + r) printf "%.1f", 100 * r / (f + r); else print 0 }')
	printf '%-28s %8d %8d %9s %12.0f %8.2f\n' "$name" "$full" "$resumed" "$share" "$cpu" "$r99"
	case "$want" in
		full) awk -v s="$share" 'BEGIN { exit !(s <= 1) }' || { echo "  FAIL: fewer than 99 % full"; fail=1; } ;;
		resumed) awk -v s="$share" 'BEGIN { exit !(s >= 90) }' || { echo "  FAIL: fewer than 90 % resumed"; fail=1; } ;;
	esac
	if [ $(( full + resumed )) -lt "$n" ]; then echo "  FAIL: $(( full + resumed )) of $n came back"; fail=1; fi
done <<'CASES'
rsa-2048-keys-in-memory rsa-2048 memory full
rsa-2048-keys-kept rsa-2048 kept resumed
ecdsa-p256-keys-in-memory ecdsa-p256 memory full
CASES

echo
echo "Go crypto/tls server CPU per handshake, this machine, now:"
"$tmp/tlscost" -n 200
exit $fail
