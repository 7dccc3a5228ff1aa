#!/usr/bin/env bash
# A million clients restarted on this machine, and the kernel's own cost of
# a connection measured beside them (lab/records/measurements.md "A million
# connections").
#
#   STAMPEDE_LOCK=FILE lab/million.sh
#   STAMPEDE_LOCK=FILE CLIENTS=2000 DURATION=30s EVENT='at 10s restart abrupt down=2s' lab/million.sh
#
# 1. `stampede run --clients CLIENTS --chaos EVENT --duration DURATION
#    --backlog BACKLOG`, the default (jittered) policy, results in OUT.
# 2. lab/connbase in the same script run, on the same machine: CONNBASE_N
#    loopback TCP connections (the open-file limit less 100, at most
#    19,000) a round, CONNBASE_ROUNDS rounds (3), from source addresses
#    carrying as many as run gives one.
# 3. Prints recovered/connected, R50/R99/R100, each side's CPU µs per
#    connect and per reconnect (summary.json resources) and their ratio to
#    the baseline's: the loadgen's connect to connbase's connect_us, the
#    target's to accept_us; a reconnect is a close and a connect, so the
#    loadgen's to connect_us + close_client_us, the target's to accept_us +
#    close_server_us. Then the herd's CPU per attempt (against connect +
#    close) and per close (against close), each side's system calls per
#    attempt (summary.json syscalls_per_attempt, by kind) beside the fewest
#    a connect needs, and the CPU bound: CLIENTS x
#    (loadgen + target CPU per connect of the ramp) / cores, beside the
#    R99 (docs/performance.md); then the bound with the kernel's packet
#    work, which on loopback no process is charged: the machine's irq and
#    softirq time in the ramp (/proc/stat, sampled once a second) per
#    first connect, added to both ends'. Then each side's memory a connection:
#    whole-process peak RSS and peak anonymous memory over the peak
#    connections (summary.json), the marginal RSS and anonymous memory
#    ((peak - the role's first sample, before the first connect) / peak
#    connections, resources.csv), and the binary's mapped pages a process
#    (peak RSS - peak anonymous memory, over the processes): what varies
#    from boot to boot without growing with connections.
#
# Environment: CLIENTS (1000000), EVENT ('at 120s restart abrupt
# down=2s'), DURATION (600s), BACKLOG (each target process's listen
# backlog: 128, run's own default, the small queue make bench's storms
# fill on purpose; 4096 is a Go server's, whose net.Listen asks for
# net.core.somaxconn, 4096 by default since Linux 5.4, and a million's
# herd with advise's policy overflowed its 56 processes' queues of 128
# millions of times, of 4096 never: docs/performance.md "A backlog of
# 4,096 a process"), RUN_FLAGS (more flags of the run), OUT (the
# results folder; default a new one under /tmp, kept), TUNE=1 (apply
# `scripts/tune-host.sh --apply` first, as root; every setting it may
# change is read before and written back when the script exits),
# BASE_AT (seconds from the run's start, after its ramp and before its
# first event: take lab/connbase once more then, beside the connected
# fleet, in its namespace; the herd's figures are then printed against
# this baseline too, the kernel's cost of a connection with the fleet's
# sockets resident: docs/performance.md "The figures a run gives"),
# STAMPEDE=path (a built binary with stampede-worker beside it; default:
# build both), CONNBASE_N, CONNBASE_ROUNDS, NETNS (1, the default: as
# root, run both ends and the baseline in a network namespace of the
# script's own whose TCP established hash has EHASH buckets, default four
# a client and at least the host's; 0: the host's namespace).
#
# It takes the shared heavy-run lock itself (lab/README.md): flock on
# STAMPEDE_LOCK, waiting for whoever holds it; do not wrap it in flock.
# NO_LOCK=1 runs without (a machine nobody shares). Exit status: the run's.
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-1000000}
EVENT=${EVENT:-at 120s restart abrupt down=2s}
DURATION=${DURATION:-600s}
BACKLOG=${BACKLOG:-128}
RUN_FLAGS=${RUN_FLAGS:-}
CONNBASE_ROUNDS=${CONNBASE_ROUNDS:-3}
if [ -z "${CONNBASE_N:-}" ]; then
	CONNBASE_N=$(( $(ulimit -Hn) - 100 ))
	[ "$CONNBASE_N" -le 19000 ] || CONNBASE_N=19000
fi
command -v python3 >/dev/null || { echo "million: needs python3" >&2; exit 3; }

if [ "${NO_LOCK:-}" != 1 ]; then
	if [ -z "${STAMPEDE_LOCK:-}" ]; then
		echo "million: set STAMPEDE_LOCK to the machine's heavy-run lock file (lab/README.md), or NO_LOCK=1" >&2
		exit 3
	fi
	exec 9>>"$STAMPEDE_LOCK"
	if ! flock -n 9; then
		echo "million: waiting for the heavy-run lock $STAMPEDE_LOCK"
		flock 9
	fi
fi

tmp=$(mktemp -d)
nsname= # the run's network namespace, when it has one
bgpids=() # the /proc/stat sampler, and a baseline waiting for BASE_AT
saved=() # NAME=VALUE of every sysctl tune-host.sh may change, when TUNE=1
cleanup() {
	local kv name
	[ ${#bgpids[@]} = 0 ] || kill "${bgpids[@]}" 2>/dev/null || true
	for kv in "${saved[@]}"; do
		name=${kv%%=*}
		printf '%s\n' "${kv#*=}" >"/proc/sys/${name//.//}" 2>/dev/null ||
			echo "million: could not restore $name to ${kv#*=}" >&2
	done
	[ ${#saved[@]} = 0 ] || echo "million: host settings restored (${#saved[@]} sysctls)"
	[ -z "$nsname" ] || ip netns del "$nsname" 2>/dev/null || echo "million: could not delete network namespace $nsname" >&2
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${TUNE:-}" = 1 ]; then
	[ "$(id -u)" = 0 ] || { echo "million: TUNE=1 needs root" >&2; exit 3; }
	for name in $(sed -n 's/^want \([a-z0-9._-]*\) .*/\1/p' scripts/tune-host.sh); do
		path=/proc/sys/${name//.//}
		if [ -e "$path" ]; then
			saved+=("$name=$(tr -s '\t ' ' ' <"$path")")
		fi
	done
	scripts/tune-host.sh --apply
fi

# Both ends, and the baseline, in a network namespace of the script's own
# whose TCP established hash table is sized for the run: the host's is
# sized at boot (262,144 buckets on 24 GiB), and a million clients are two
# million sockets in it, eight a bucket, walked on every packet and every
# port connect() tries (docs/performance.md "A hash table sized for the
# fleet"). net.ipv4.tcp_child_ehash_entries gives a namespace created
# while it is set a table of its own; it is set back at once.
in_ns=()
if [ "${NETNS:-1}" = 1 ] && [ "$(id -u)" = 0 ] && [ -e /proc/sys/net/ipv4/tcp_child_ehash_entries ]; then
	host_ehash=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
	host_ehash=${host_ehash#-}
	buckets=${EHASH:-}
	if [ -z "$buckets" ]; then
		# four buckets a client (two sockets each), at least the host's
		buckets=1
		while [ "$buckets" -lt $((4 * CLIENTS)) ] && [ "$buckets" -lt $((1 << 24)) ]; do
			buckets=$((buckets * 2))
		done
		[ "$buckets" -ge "$host_ehash" ] || buckets=$host_ehash
	fi
	child_prev=$(cat /proc/sys/net/ipv4/tcp_child_ehash_entries)
	nsname=stampede-million-$$
	echo "$buckets" >/proc/sys/net/ipv4/tcp_child_ehash_entries
	ip netns add "$nsname" || { echo "$child_prev" >/proc/sys/net/ipv4/tcp_child_ehash_entries; exit 3; }
	echo "$child_prev" >/proc/sys/net/ipv4/tcp_child_ehash_entries
	ip -n "$nsname" link set lo up
	in_ns=(ip netns exec "$nsname")
	# the namespace's own copies of the per-namespace settings
	[ "${TUNE:-}" != 1 ] || "${in_ns[@]}" scripts/tune-host.sh --apply >/dev/null
fi

exe=${STAMPEDE:-}
if [ -z "$exe" ]; then
	exe=$tmp/stampede
	go build -o "$exe" ./cmd/stampede
	CGO_ENABLED=0 go build -o "$tmp/stampede-worker" ./cmd/stampede-worker
fi
go -C lab build -o "$tmp/connbase" ./connbase
OUT=${OUT:-$(mktemp -d /tmp/stampede-million.XXXXXX)/run}

echo "machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), open files $(ulimit -Hn), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$nsname" ]; then
	echo "network namespace: $nsname, TCP established hash $("${in_ns[@]}" cat /proc/sys/net/ipv4/tcp_ehash_entries) buckets (the host's $host_ehash)"
else
	echo "network namespace: the host's, TCP established hash $(cat /proc/sys/net/ipv4/tcp_ehash_entries 2>/dev/null || echo '?') buckets"
fi
echo "run: stampede run --clients $CLIENTS --chaos '$EVENT' --duration $DURATION --backlog $BACKLOG $RUN_FLAGS --out $OUT"
rc=0
# The machine's irq and softirq time (/proc/stat) once a second: on
# loopback the kernel's packet work for both ends, charged to no process
# (the CPU bound with the kernel's share, below).
( while :; do printf '%s %s\n' "$(date +%s.%N)" "$(head -n 1 /proc/stat)"; sleep 1; done ) >"$tmp/stat" &
statpid=$!
bgpids+=("$statpid")
until [ -s "$tmp/stat" ]; do sleep 0.05; done
resident=
launched=$(date +%s.%N) # the run's start, to the ramp's irq and softirq time
if [ -n "${BASE_AT:-}" ]; then
	# lab/connbase beside the connected fleet, BASE_AT s into the run
	( sleep "$BASE_AT" && "${in_ns[@]}" "$tmp/connbase" -n "$CONNBASE_N" -rounds "$CONNBASE_ROUNDS" >"$tmp/resident" 2>&1 ) &
	resident=$!
	bgpids+=("$resident")
fi
# shellcheck disable=SC2086 # RUN_FLAGS is words
"${in_ns[@]}" "$exe" run --clients "$CLIENTS" --chaos "$EVENT" --duration "$DURATION" --backlog "$BACKLOG" $RUN_FLAGS --out "$OUT" >"$tmp/run.log" 2>&1 || rc=$?
kill "$statpid" 2>/dev/null || true
tail -n 12 "$tmp/run.log"
echo "run: exit status $rc, $(date -u +%H:%M:%S) UTC"
base_resident=
if [ -n "$resident" ]; then
	wait "$resident" || true
	echo "baseline with the fleet connected, at ${BASE_AT} s: lab/connbase -n $CONNBASE_N -rounds $CONNBASE_ROUNDS"
	cat "$tmp/resident"
	base_resident=$(grep '^connbase:' "$tmp/resident" || true)
fi

echo "baseline: lab/connbase -n $CONNBASE_N -rounds $CONNBASE_ROUNDS"
base=$("${in_ns[@]}" "$tmp/connbase" -n "$CONNBASE_N" -rounds "$CONNBASE_ROUNDS")
echo "$base"

python3 - "$OUT/summary.json" "$base" "$(nproc)" "$OUT/resources.csv" "$base_resident" "$tmp/stat" "$(getconf CLK_TCK)" "$OUT/timeline.csv" "$launched" <<'PY'
import csv, json, sys
s = json.load(open(sys.argv[1]))
def figures(line):
    kv = dict(x.split("=", 1) for x in line.split()[1:])
    return {k: float(v) for k, v in kv.items() if k.endswith("_us")}
b = figures(sys.argv[2])
br = figures(sys.argv[5]) if sys.argv[5] else None
def num(v, f="%.2f"):
    return "never" if v is None else f % v
rec = s["recovery"][0] if s["recovery"] else None
if rec:
    print(f"recovered/connected: {rec['recovered']}/{rec['connected_before']} (of {s['clients']} clients)")
    print(f"R50/R99/R100: {num(rec['r50_s'])} / {num(rec['r99_s'])} / {num(rec['r100_s'])} s")
else:
    print("recovered/connected: - (no event)")
res = s["resources"]
if br is not None:
    # What the fleet's sockets, resident, add to the kernel's own cost.
    print("the kernel's cost with the fleet connected: " + ", ".join(
        f"{k} {br[k]:.1f} µs = {br[k] / b[k]:.2f}x"
        for k in ("connect_us", "accept_us", "close_client_us", "close_server_us") if b.get(k)) +
        " the baseline after the run")
# Each side's figure against the kernel's own cost of the same work, in
# the baseline base (whose: whose cost it is).
def against(key, keys_by_role, base, whose):
    parts = []
    for role, keys in keys_by_role.items():
        v = res.get(role, {}).get(key)
        k = sum(base[x] for x in keys)
        ratio = "-" if v is None or k <= 0 else "%.1fx" % (v / k)
        parts.append(f"{role} {num(v, '%.1f')} µs = {ratio} {whose} {k:.1f} µs ({' + '.join(keys)})")
    return "; ".join(parts)
pairs = [
    ("per connect", "cpu_us_per_connect", {"loadgen": ("connect_us",), "target": ("accept_us",)}),
    ("per reconnect", "cpu_us_per_reconnect", {"loadgen": ("connect_us", "close_client_us"), "target": ("accept_us", "close_server_us")}),
]
for label, key, by in pairs:
    print(f"CPU {label}: " + against(key, by, b, "the kernel's"))
# The herd's figures (docs/performance.md): an attempt against a connect
# plus close, a close against the kernel's close; and against the
# baseline beside the fleet, when there is one.
herd = [
    ("per attempt", "cpu_us_per_attempt", {"loadgen": ("connect_us", "close_client_us"), "target": ("accept_us", "close_server_us")}),
    ("per close", "cpu_us_per_close", {"loadgen": ("close_client_us",), "target": ("close_server_us",)}),
]
for label, key, by in herd:
    print(f"CPU {label} (herd): " + against(key, by, b, "the kernel's"))
    if br is not None:
        print(f"CPU {label} (herd), against the baseline with the fleet connected: " +
              against(key, by, br, "the resident kernel's"))
# System calls per attempt as each role's processes counted them, beside
# the fewest a connect needs (docs/performance.md "System calls per
# attempt"): socket, connect and close for the loadgen's TCP connect, and
# a write and a read more for its upgrade; accept4, a read, a write and
# close for the target's upgrade (its attempts are the connections it
# accepted).
fewest = {"loadgen": ("3", "socket + connect + close; 5 with the upgrade's write + read"),
          "target": ("4", "accept4 + read + write + close")}
parts = []
for role, (n, what) in fewest.items():
    v = res.get(role, {}).get("syscalls_per_attempt")
    kinds = res.get(role, {}).get("syscalls_by_kind") or {}
    detail = ", ".join(f"{k} {x:.2f}" for k, x in sorted(kinds.items(), key=lambda kv: -kv[1]))
    parts.append(f"{role} {num(v)} ({detail}) against the fewest {n} ({what})")
print("syscalls per attempt: " + "; ".join(parts))
# The CPU bound: the fleet times one successful connect and upgrade on
# both ends, as the ramp measured it (no wasted attempts), over the cores.
lg, tg = res.get("loadgen", {}).get("cpu_us_per_connect"), res.get("target", {}).get("cpu_us_per_connect")
cores = int(sys.argv[3])
# bound_line says what the fleet costs at terms µs a client (each end's,
# and what else is counted) over the cores, beside the R99.
def bound_line(head, terms, tail):
    bound = s["clients"] * sum(terms) / 1e6 / cores
    line = (f"{head}: {s['clients']} x ({' + '.join(f'{x:.1f}' for x in terms)}) µs"
            f" / {cores} cores = {bound:.2f} s")
    if rec and rec.get("r99_s") is not None and bound > 0:
        line += f"; R99 {rec['r99_s']:.2f} s = {rec['r99_s'] / bound:.2f}x{tail}"
    return line
if lg is not None and tg is not None:
    print(bound_line("CPU bound", (lg, tg), " the bound"))
else:
    print("CPU bound: - (no CPU per connect from the ramp)")
# The kernel's packet work in the ramp: the machine's irq and softirq time
# from the run's start to its last first connect, per first connect. On
# loopback it is both ends' work, which no process is charged: the CPU
# bound with it is what the ramp's connects cost the machine.
def ramp_softirq():
    start = float(sys.argv[9])
    before = s["events"][0]["start_s"] if s.get("events") else s["duration_s"]
    end, firsts = None, 0
    for row in csv.DictReader(open(sys.argv[8])):
        t, n = float(row["t_s"]), int(float(row["successes"]))
        if t >= before:
            break
        if n > 0:
            end, firsts = t + 0.1, firsts + n
    pts = []
    for line in open(sys.argv[6]):
        f = line.split()
        if len(f) > 8 and f[1] == "cpu":
            pts.append((float(f[0]), (int(f[7]) + int(f[8])) / int(sys.argv[7])))
    def at(w):
        for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
            if t0 <= w <= t1:
                return v0 + (v1 - v0) * (w - t0) / (t1 - t0)
        return None
    if end is None or firsts <= 0:
        return None
    at_start, at_end = at(start), at(start + end)
    if at_start is None or at_end is None:
        return None
    return 1e6 * (at_end - at_start) / firsts, end
try:
    soft = ramp_softirq() if lg is not None and tg is not None else None
except (OSError, KeyError, ValueError, IndexError):
    soft = None
if soft:
    sq, end = soft
    print(bound_line(f"CPU bound with the kernel's packet work (irq + softirq, /proc/stat, {sq:.1f} µs"
                     f" a first connect in the ramp, to {end:.1f} s)", (lg, tg, sq), ""))
# Memory a connection, whole-process and marginal (docs/performance.md).
# The first sample of a role is taken before its first connect.
first = {}
try:
    for row in csv.DictReader(open(sys.argv[4])):
        if row["role"] not in first and int(row["processes"]) > 0:
            first[row["role"]] = row
except OSError:
    pass
for role in ("loadgen", "target"):
    r = res.get(role, {})
    conns, procs = r.get("peak_conns") or 0, r.get("processes") or 0
    if conns <= 0:
        print(f"memory a connection, {role}: - (no connections counted)")
        continue
    rss, anon = r.get("peak_rss_bytes", 0), r.get("peak_anon_bytes", 0)
    line = f"memory a connection, {role}: RSS {rss / conns:.0f} B, anonymous {anon / conns:.0f} B"
    f = first.get(role)
    if f:
        line += (f"; marginal RSS {(rss - int(f['rss_bytes'])) / conns:.0f} B, anonymous"
                 f" {(anon - int(f.get('anon_bytes') or 0)) / conns:.0f} B")
    if procs:
        line += f"; the binary's mapped pages {(rss - anon) / procs / 2**20:.1f} MiB a process ({procs} processes)"
    print(line)
PY
exit "$rc"
