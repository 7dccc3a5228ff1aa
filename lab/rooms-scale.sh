#!/usr/bin/env bash
# Rooms across processes at scale: `stampede run` in
# --mode stampede on at least 7 target processes sharing one store, with a
# SIGKILL of the group every 10 s, once per store, and prints per store the
# figures that matter: lost, dup_delivered, acked, deliveries, resumes.
#
#   lab/rooms-scale.sh [CLIENTS [ROOMS [DURATION]]]    default 100000 10000 60s
#
# STORES="jetstream redis postgres" chooses the stores (jetstream is the
# embedded default, run by the target group's owner in the results folder;
# redis and postgres use the servers on 127.0.0.1). PROCS=7 the target
# processes, RATE=1 messages/s per client. NODEDUPE=1 adds a --no-dedupe
# run on the embedded store (dup_delivered must then be above 0).
# Heavy: run it under the shared lock, `flock "$STAMPEDE_LOCK" ...`
# on the development machine. STAMPEDE=path uses a built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-100000}
rooms=${2:-10000}
duration=${3:-60s}
procs=${PROCS:-7}
rate=${RATE:-1}
stores=${STORES:-jetstream redis postgres}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exe=${STAMPEDE:-}
if [ -z "$exe" ]; then
	exe=$tmp/stampede
	go build -o "$exe" ./cmd/stampede
	go build -o "$tmp/stampede-worker" ./cmd/stampede-worker
fi
echo "machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "run: --clients $clients --rooms $rooms --msg-rate $rate --procs $procs --chaos 'every 10s restart kill down=1s' --duration $duration"
tag=$(date +%s)
runs=()
for s in $stores; do runs+=("$s"); done
[ "${NODEDUPE:-0}" = 1 ] && runs+=("jetstream-no-dedupe")
status=0
for r in "${runs[@]}"; do
	extra=()
	case $r in
	jetstream) ;;
	jetstream-no-dedupe) extra=(--no-dedupe) ;;
	redis) extra=(--store "redis://127.0.0.1:6379/0?prefix=stampede-rooms-$tag:") ;;
	postgres) extra=(--store "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&table=stampede_rooms_$tag") ;;
	*) echo "unknown store $r" >&2; exit 2 ;;
	esac
	out=$tmp/$r
	"$exe" run --clients "$clients" --rooms "$rooms" --msg-rate "$rate" --procs "$procs" \
		--chaos 'every 10s restart kill down=1s' --duration "$duration" --out "$out" "${extra[@]}" \
		>"$tmp/$r.log" 2>&1 || true
	if [ ! -f "$out/summary.json" ]; then
		echo "$r: no summary.json"; tail -5 "$tmp/$r.log"; status=1; continue
	fi
	python3 - "$r" "$out/summary.json" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
m = d["messages"]
c = d.get("connect", {})
procs = d.get("config", {}).get("sizing", {}).get("target_procs")
print(f"{name:20s} target_procs {procs}  sent {m['sent']}  acked {m['acked']}  lost {m['lost']}  dup_delivered {m['dup_delivered']}  "
      f"dup_suppressed {m['dup_suppressed']}  deliveries {m['received']}/{m['expected']}  unsynced {m.get('unsynced')}  "
      f"resumed {m['resumed']}  unacked {m['unacked']}  complete {d.get('complete')}")
PY
done
exit $status
