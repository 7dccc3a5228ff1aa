#!/usr/bin/env bash
# session-scale.sh: the session protocols at scale (docs/protocols.md). Heavy:
# run it under the shared lock,
#   flock "$STAMPEDE_LOCK" lab/session-scale.sh [--clients N] [--out DIR]
#
# Two runs of --clients (default 50,000) against the bundled target, one
# after the other, with the same abrupt restart: plain (no session), then
# --protocol socketio, the target serving it (namespace /chat with a token,
# two rooms joined with acknowledgements after every connect). Prints, and
# exits 1 when one fails:
#   - every client of the socketio run back and re-joined (recovery[0] and
#     its resubscribed figures);
#   - the loadgen's memory per connection at most 1.5 KiB in the socketio
#     run: its peak anonymous memory (summary.json peak_anon_bytes,
#     baselines included) over the clients connected. The whole-process
#     RSS is printed beside it; it also holds each process's mapped pages
#     of its binary (about 8 MiB of stampede-worker, 26 MiB of stampede),
#     shared through the page cache, which vary from boot to boot and do
#     not grow with connections;
#   - the loadgen's CPU per connect in the socketio run at most twice the
#     plain run's.
# STAMPEDE=path uses a built binary instead of building ./cmd/stampede.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=50000 out=""
while [ $# -gt 0 ]; do
	case $1 in
	--clients) clients=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	*) echo "session-scale.sh: unknown argument $1" >&2 && exit 2 ;;
	esac
done
[ -n "$out" ] || out=$(mktemp -d /tmp/stampede-session-scale.XXXXXX)
mkdir -p "$out"
bin=${STAMPEDE:-}
if [ -z "$bin" ]; then
	bin=$out/stampede
	go build -o "$bin" ./cmd/stampede
	CGO_ENABLED=0 go build -o "$out/stampede-worker" ./cmd/stampede-worker
fi
[ -x "$(dirname "$bin")/stampede-worker" ] ||
	echo "note: no stampede-worker beside $bin: the loadgen processes run $bin itself, whose mapped pages add to their RSS (not to their anonymous memory)" >&2
printf '%s\n' 'protocol: socketio' 'socketio:' '  namespace: /chat' '  auth: {token: s3cret}' \
	'  events: [["join", "r1"], ["join", "r2"]]' '  ack: true' >"$out/socketio.yaml"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $(date -u +%FT%TZ)"
common=(run --clients "$clients" --ramp 5000 --backlog 4096 --policy exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms
	--chaos 'at 20s restart abrupt down=2s' --duration 45s --force -q)
for mode in plain socketio; do
	extra=()
	[ "$mode" = socketio ] && extra=(--config "$out/socketio.yaml")
	echo "+ stampede ${common[*]} ${extra[*]} --out $out/$mode"
	"$bin" "${common[@]}" "${extra[@]}" --out "$out/$mode" >"$out/$mode.txt" 2>&1 || true
done
python3 - "$clients" "$out/plain" "$out/socketio" <<'PY'
import json, sys
n, plain, sio = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def load(d):
    s = json.load(open(d + "/summary.json"))
    r = s["recovery"][0] if s.get("recovery") else {}
    return s, r, r.get("resubscribed") or {}, s["resources"]["loadgen"]
ps, pr, _, pl = load(plain)
ss, sr, sx, sl = load(sio)
# Memory per connection: the loadgen's peak anonymous memory (and its peak
# RSS), baselines included, over the fleet's own count of clients connected
# before the restart (the socket count summary.json divides by can miss a
# session fleet's sockets).
for r, l in ((pr, pl), (sr, sl)):
    c = max(1, r.get("connected_before") or 0)
    l["rss_per_conn_bytes"] = l["peak_rss_bytes"] / c
    l["anon_per_conn_bytes"] = l["peak_anon_bytes"] / c
back = sr.get("connected_before") == n and sr.get("recovered") == n and sx.get("recovered") == n
mem = 0 < sl["anon_per_conn_bytes"] <= 1536
cpu = sl["cpu_us_per_connect"] <= 2 * pl["cpu_us_per_connect"]
v = lambda ok: "ok" if ok else "FAILED"
print(f"plain:    back {pr.get('recovered')}/{n} R99 {pr.get('r99_s', 0):.2f}s; loadgen memory/conn {pl['anon_per_conn_bytes']:.0f} B (RSS {pl['rss_per_conn_bytes']:.0f} B), CPU/connect {pl['cpu_us_per_connect']:.1f} us")
print(f"socketio: back {sr.get('recovered')}/{n} R99 {sr.get('r99_s', 0):.2f}s, re-joined {sx.get('recovered')}/{n} R99 {sx.get('r99_s', 0):.2f}s; loadgen memory/conn {sl['anon_per_conn_bytes']:.0f} B (RSS {sl['rss_per_conn_bytes']:.0f} B), CPU/connect {sl['cpu_us_per_connect']:.1f} us")
print(f"{v(back)}: every client back and re-joined")
print(f"{v(mem)}: loadgen memory per connection {sl['anon_per_conn_bytes']:.0f} B <= 1536 B (peak anonymous memory, baselines included)")
print(f"{v(cpu)}: loadgen CPU per connect {sl['cpu_us_per_connect']:.1f} us <= 2 x {pl['cpu_us_per_connect']:.1f} us (plain)")
m = ss.get("machine") or {}
print(f"machine during the socketio run: {json.dumps(m)[:300]}")
sys.exit(0 if back and mem and cpu else 1)
PY
echo "results: $out"
