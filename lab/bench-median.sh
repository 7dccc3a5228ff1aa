#!/usr/bin/env bash
# The bench's jittered storm at 10,000 clients, real and modelled: the
# real R99 of RUNS runs and their median and spread, beside the
# simulator's median and spread over SEEDS seeds of the same storm
# (docs/simulator.md, "The bench's storm, real against modelled").
#
#   STAMPEDE_LOCK=FILE lab/bench-median.sh
#   STAMPEDE_LOCK=FILE RUNS=5 SEEDS=9 OUT=DIR lab/bench-median.sh
#   SIM_ONLY=DIR lab/bench-median.sh     # the model against runs already in DIR
#
# Each real run is `stampede bench --policies JITTERED --seed i` (10,000
# clients, backlog 128, 2,000 accepts/s, abrupt restart at 8 s with 2 s
# down, TCP_SYNCNT 2, 5 s upgrade timeout: the bench's defaults), i = 1 to
# RUNS, each under the shared heavy-run lock (flock on STAMPEDE_LOCK,
# taken and released per run; NO_LOCK=1 on a machine nobody shares).
# The model is `stampede simulate` with the same flags and seeds 1 to
# SEEDS, its loadgen's reactors at the real runs' own CPU per attempt
# (--reactor-cost: the median of their resources.loadgen.cpu_us_per_attempt),
# and beside it the same seeds without the reactors' queue (simulate's
# default); each median is judged against the real one (within 10 %). The
# spread is the lowest to the highest, and its width relative to the median.
# Environment: RUNS (5), SEEDS (9), OUT (the results folders; default a
# new folder under /tmp, kept), STAMPEDE=path (a built binary with
# stampede-worker beside it; default: build both), SIM_FLAGS (more flags
# of the simulation), REACTOR_COST (a duration in place of the runs' own).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
SEEDS=${SEEDS:-9}
SIM_FLAGS=${SIM_FLAGS:-}
POLICY='exp:initial=1s,multiplier=2,max=60s,jitter=0.5,spread=100ms-500ms'
STORM=(--clients 10000 --backlog 128 --accept-rate 2000 --syn-retries 2 --handshake-timeout 5s
	--chaos 'at 8s restart abrupt down=2s' --duration 45s)
command -v python3 >/dev/null || { echo "bench-median: needs python3" >&2; exit 3; }
if [ -z "${SIM_ONLY:-}" ] && [ "${NO_LOCK:-}" != 1 ] && [ -z "${STAMPEDE_LOCK:-}" ]; then
	echo "bench-median: set STAMPEDE_LOCK to the machine's heavy-run lock file (lab/README.md), or NO_LOCK=1" >&2
	exit 3
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exe=${STAMPEDE:-}
if [ -z "$exe" ]; then
	exe=$tmp/stampede
	go build -o "$exe" ./cmd/stampede
	CGO_ENABLED=0 go build -o "$tmp/stampede-worker" ./cmd/stampede-worker
fi
OUT=${SIM_ONLY:-${OUT:-$(mktemp -d /tmp/stampede-bench-median.XXXXXX)}}
echo "machine: $(nproc) cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "storm: ${STORM[*]} --policy $POLICY"

if [ -z "${SIM_ONLY:-}" ]; then
	for i in $(seq 1 "$RUNS"); do
		lock=(env)
		[ "${NO_LOCK:-}" = 1 ] || lock=(flock -o "$STAMPEDE_LOCK")
		rm -rf "$OUT/real$i"
		# the time and load once the lock is held, then the run
		"${lock[@]}" sh -c 'echo "real $1: $(date -u +%H:%M:%S) UTC, load $(cut -d" " -f1-3 /proc/loadavg)"; log=$2; shift 2; exec "$@" >"$log" 2>&1' \
			_ "$i" "$tmp/real$i.log" "$exe" bench --policies "$POLICY" --seed "$i" "${STORM[@]}" --out "$OUT/real$i" ||
			{ echo "real $i failed:"; tail -n 5 "$tmp/real$i.log"; }
	done
fi
# The loadgen's CPU per attempt, the median over the real runs: what an
# attempt costs its reactor in the model.
cost=${REACTOR_COST:-$(python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
xs = []
for p in glob.glob(os.path.join(sys.argv[1], "real*", "*", "summary.json")):
    v = ((json.load(open(p)).get("resources") or {}).get("loadgen") or {}).get("cpu_us_per_attempt")
    if v:
        xs.append(v)
print("%.1fus" % statistics.median(xs) if xs else "")
PY
)}
[ -n "$cost" ] || { echo "bench-median: no real run gave the loadgen's CPU per attempt; set REACTOR_COST" >&2; exit 1; }
echo "model: --reactor-cost $cost (the loadgen's CPU per attempt$([ -n "${REACTOR_COST:-}" ] && echo ", given" || echo ", the real runs' median"))"
for s in $(seq 1 "$SEEDS"); do
	for m in sim noq; do
		flags=(--reactor-cost "$cost")
		[ "$m" = sim ] || flags=()
		# shellcheck disable=SC2086 # SIM_FLAGS is words
		"$exe" simulate "${STORM[@]}" --policy "$POLICY" --seed "$s" "${flags[@]}" $SIM_FLAGS --force --out "$OUT/$m$s" >"$tmp/sim.log" 2>&1 ||
			{ echo "simulation $s failed:"; tail -n 5 "$tmp/sim.log"; exit 1; }
	done
done

python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
def r99(path):
    s = json.load(open(path))
    rec = s["recovery"][0] if s.get("recovery") else None
    return None if rec is None or rec.get("r99_s") is None else rec["r99_s"]
def show(label, xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        print(f"{label}: none")
        return None
    med = statistics.median(xs)
    print(f"{label}: " + " ".join("%.2f" % x for x in xs))
    print(f"  median {med:.2f} s, spread {min(xs):.2f}-{max(xs):.2f} s ({(max(xs) - min(xs)) / med * 100:.0f} % of the median)")
    return med
runs = sorted(p for p in glob.glob(os.path.join(out, "real*", "*", "summary.json")) if "-sim" not in p)
for p in runs:
    s = json.load(open(p))
    m, e = s.get("machine") or {}, (s["events"] or [{}])[0]
    share = m.get("other_cpu_share")
    print(f"{os.path.relpath(p, out).split(os.sep)[0]}: R99 {r99(p):.2f} s, handshake timeouts {(e.get('failures') or {}).get('handshake_timeout', 0)}, "
          f"other processes {'-' if share is None else '%.0f %%' % (share * 100)} of the CPU")
real = [r99(p) for p in runs]
rm = show(f"real R99, {len([x for x in real if x is not None])} runs", real)
def model(label, m):
    paths = [os.path.join(out, f"{m}{i}", "summary.json") for i in range(1, 1000)]
    paths = [p for p in paths if os.path.exists(p)]
    med = show(f"{label}, {len(paths)} seeds", [r99(p) for p in paths])
    hs = [((json.load(open(p))["events"] or [{}])[0].get("failures") or {}).get("handshake_timeout", 0) for p in paths]
    print(f"  handshake timeouts {min(hs)}-{max(hs)}")
    return med
nq = model("model R99 without the reactors' queue", "noq")
sm = model("model R99", "sim")
# simulate's default is the model without the reactors' queue
# (docs/simulator.md): both are judged, each on its own line.
for label, med in (("model median", sm), ("model median without the reactors' queue", nq)):
    if rm and med:
        print(f"{label} against real median: {(med - rm) / rm * 100:+.1f} % ({'within' if abs(med - rm) <= 0.1 * rm else 'outside'} 10 %)")
PY
