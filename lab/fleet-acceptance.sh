#!/usr/bin/env bash
# fleet-acceptance.sh: the several-host acceptance at scale, on 4 network-namespace
# hosts of this machine (scripts/hosts.sh; docs/fleet.md). Needs root.
#
#   lab/fleet-acceptance.sh [all|storm|kill|coordinator|nats]...
#
#   storm        target agent on h1, loadgen agents on h2..h4 (capacity and
#                source addresses each), coordinator in the root namespace;
#                CLIENTS clients, 'at 20s restart abrupt down=2s': recovered
#                clients, the agents' clock offsets and bounds, each host's
#                kernel counters (the target host's PassiveOpens at least
#                CLIENTS, listen_overflows gating on the target host's), and
#                the merged connect and TTR percentiles against an offline
#                merge of the agents' own agents/*/ histograms (stampede
#                hlog). When the loadgen hosts' addresses cannot carry
#                their shares, the run must be refused before it starts,
#                in one line naming the limit (exit status 2).
#   kill         the same fleet, --on-agent-loss continue, kill -9 of the h4
#                loadgen agent mid-run: how long until it is marked lost, its
#                clients_lost, the exit status.
#   coordinator  the same fleet, the coordinator killed (-9) mid-run: how long
#                until no connection to the target is left and every agent has
#                exited.
#   nats         the storm run through the machine's NATS at 127.0.0.1:4222
#                (--nats; the hosts reach it through a `stampede proxy` relay
#                on the bridge address, since it listens on loopback only),
#                and an agent with a wrong token: its one line and exit status.
#
# Environment: CLIENTS (120000), DURATION (100s: the 2-core machine needs
# about 25 s after the target is ready to bring 120,000 back), SET (hosts.sh set, 9),
# ADDRS (source addresses per host, 1: 40,000 clients on one address are
# refused; 2 carry them),
# RUN_FLAGS (more flags of every run; default "--backlog 4096 --ramp 10000",
# so the whole fleet is connected before the restart at 20 s),
# HOSTS_SH (scripts/hosts.sh), BIN_DIR (a folder holding stampede and
# stampede-worker built from this tree; default: build them into the work
# folder), KEEP=1 keeps the work folder. Run it under the
# shared lock on a shared machine: flock "$STAMPEDE_LOCK" lab/...
# It prints figures; it exits 1 when a figure misses its acceptance.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
CLIENTS=${CLIENTS:-120000}
DURATION=${DURATION:-100s}
SET=${SET:-9}
ADDRS=${ADDRS:-1}
RUN_FLAGS=${RUN_FLAGS:---backlog 4096 --ramp 10000}
HOSTS_SH=${HOSTS_SH:-$root/scripts/hosts.sh}
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(all)
[ "${scenarios[0]}" != all ] || scenarios=(storm kill coordinator nats)

[ "$(id -u)" = 0 ] || { echo "fleet-acceptance: needs root (network namespaces)" >&2; exit 3; }
command -v python3 >/dev/null || { echo "fleet-acceptance: needs python3" >&2; exit 3; }

work=$(mktemp -d /tmp/stampede-fleet.XXXXXX)
pids=()
failed=0
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	"$HOSTS_SH" down --set "$SET" >/dev/null 2>&1 || true
	[ "${KEEP:-0}" = 1 ] && echo "work folder: $work" || rm -rf "$work"
}
trap cleanup EXIT
miss() { echo "MISS: $*"; failed=1; }

if [ -n "${BIN_DIR:-}" ]; then
	bin=$BIN_DIR/stampede
else
	echo "== building"
	(cd "$root" && go build -o "$work/bin/stampede" ./cmd/stampede && go build -o "$work/bin/stampede-worker" ./cmd/stampede-worker)
	bin=$work/bin/stampede
fi
ulimit -n 20000 2>/dev/null || true

echo "== hosts"
line=$("$HOSTS_SH" up 4 --set "$SET" --addrs "$ADDRS" | tail -n 1)
echo "$line"
bridge_ip=$(sed -n 's/.* root=\([^ ]*\).*/\1/p' <<<"$line")
declare -a hname haddrs
i=0
for kv in $line; do
	case $kv in hosts | set=* | bridge=* | root=*) continue ;; esac
	hname[i]=${kv%%=*}
	haddrs[i]=${kv#*=}
	i=$((i + 1))
done
[ ${#hname[@]} = 4 ] || { echo "fleet-acceptance: hosts.sh gave ${#hname[@]} hosts, want 4" >&2; exit 1; }
per_host=$(((CLIENTS + 2) / 3))

# wait_url LOG: the join URL the coordinator prints.
wait_url() {
	for _ in $(seq 1 600); do
		u=$(grep -o 'nats://[0-9.]*:[0-9]*' "$1" | head -n 1 || true)
		[ -n "$u" ] && { echo "$u"; return; }
		sleep 0.1
	done
	echo "fleet-acceptance: no join URL in $1" >&2
	cat "$1" >&2
	exit 1
}

# agents URL TAG: one target agent on h1, loadgen agents on h2..h4; their
# PIDs in agent_pids (h1 first).
agent_pids=()
agents() {
	local url=$1 tag=$2
	agent_pids=()
	ip netns exec "${hname[0]}" "$bin" agent --nats "$url" --token-file "$work/token" --name "${hname[0]}" --role target \
		>"$work/$tag-${hname[0]}.log" 2>&1 &
	agent_pids+=($!)
	pids+=($!)
	for j in 1 2 3; do
		ip netns exec "${hname[j]}" "$bin" agent --nats "$url" --token-file "$work/token" --name "${hname[j]}" --role loadgen \
			--capacity "$per_host" --source-ips "${haddrs[j]}" >"$work/$tag-${hname[j]}.log" 2>&1 &
		agent_pids+=($!)
		pids+=($!)
	done
}

# coordinator TAG ARGS...: the run in the root namespace, in the background
# (PID in co_pid).
coordinator() {
	local tag=$1
	shift
	"$bin" run --clients "$CLIENTS" --agents 4 --insecure-listen --token-file "$work/token" --out "$work/$tag" --progress-interval 5s \
		--agent-timeout 2m $RUN_FLAGS "$@" >"$work/$tag.out" 2>"$work/$tag.log" &
	co_pid=$!
	pids+=($co_pid)
}

# figures TAG: the storm run's figures from its folder.
figures() {
	local dir=$work/$1
	python3 - "$dir/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for r in s.get("recovery", []):
    print(f"recovered: {r['recovered']}/{r['connected_before']} (R50 {r.get('r50_s')} s, R100 {r.get('r100_s')} s)")
for a in s.get("agents", []):
    print(f"agent {a['name']:<16} {a['role']:<8} host {a['host']:<12} clients {a.get('clients', 0):>6}  "
          f"offset {a['clock_offset_ms']:+.3f} ms ± {a['offset_error_ms']:.3f} ms  start skew {a['start_skew_ms']:.1f} ms  "
          f"lost {a['lost']} clients_lost {a['clients_lost']}")
print(f"complete: {s.get('complete')}")
for h in s.get("hosts", []):
    k = h["kernel"]
    fig = (f"PassiveOpens {k['PassiveOpens']} ActiveOpens {k['ActiveOpens']} ListenOverflows {k['ListenOverflows']} "
           f"ListenDrops {k['ListenDrops']} TCPSynRetrans {k['TCPSynRetrans']}") if k else f"- ({h.get('kernel_note')})"
    print(f"host {h['name']:<16} {','.join(h['roles']):<12} {fig}")
for o in s.get("slo", []):
    print(f"slo {o['expr']}: value {o['value']} pass {o['pass']}")
PY
	for f in connect ttr; do
		m=$("$bin" hlog "$dir/$f.hlog")
		o=$("$bin" hlog "$dir"/agents/*/"$f.hlog")
		echo "$f merged:         $m"
		echo "$f offline merge:  $o"
		[ "$m" = "$o" ] && echo "$f: equal" || miss "$f merged percentiles differ from the offline merge of agents/*/"
	done
}

storm() {
	echo "== storm: $CLIENTS clients over 4 hosts ($ADDRS address(es) each), at 20s restart abrupt down=2s"
	coordinator storm --listen "$bridge_ip:0" --chaos 'at 20s restart abrupt down=2s' --duration "$DURATION" --slo 'listen_overflows<=1000000000'
	agents "$(wait_url "$work/storm.log")" storm
	rc=0
	wait "$co_pid" || rc=$?
	echo "exit status: $rc"
	if [ ! -s "$work/storm/summary.json" ]; then
		# Refused before the run: one line naming the limit, exit status 2.
		refusal=$(grep '^stampede:' "$work/storm.log" || true)
		echo "refused before the run: $refusal"
		[ "$rc" = 2 ] && [ "$(printf '%s\n' "$refusal" | grep -c .)" = 1 ] || miss "no run and no one-line refusal (exit status $rc)"
		return
	fi
	grep -E '^(hub|target|loadgen|chaos|lost):' "$work/storm.log" || true
	figures storm
	python3 - "$work/storm/summary.json" "$CLIENTS" <<'PY' || miss "not every client recovered, or not 4 agents with clock bounds, or the target host's counters missing"
import json, sys
s = json.load(open(sys.argv[1])); n = int(sys.argv[2])
r = s["recovery"][0]
ok = r["connected_before"] == n and r["recovered"] == n and len(s["agents"]) == 4 and all(a["offset_error_ms"] > 0 for a in s["agents"])
targets = [h for h in s.get("hosts", []) if "target" in h["roles"]]
ok = ok and len(s.get("hosts", [])) == 5 and all(h["kernel"] is not None for h in s["hosts"])
ok = ok and len(targets) == 1 and targets[0]["kernel"]["PassiveOpens"] >= n
ok = ok and s["kernel_read"] and s["slo"][0]["value"] == targets[0]["kernel"]["ListenOverflows"]
sys.exit(0 if ok else 1)
PY
}

kill_agent() {
	echo "== kill: $CLIENTS clients, kill -9 of the ${hname[3]} loadgen agent mid-run, --on-agent-loss continue"
	coordinator kill --listen "$bridge_ip:0" --duration "$DURATION" --on-agent-loss continue
	agents "$(wait_url "$work/kill.log")" kill
	for _ in $(seq 1 1200); do grep -q '^loadgen:' "$work/kill.log" && break; sleep 0.1; done
	sleep 20
	victim=${agent_pids[3]}
	t_kill=$(date +%s.%N)
	kill -9 "$victim"
	echo "killed agent ${hname[3]} (pid $victim) at unix $t_kill"
	rc=0
	wait "$co_pid" || rc=$?
	echo "exit status: $rc"
	grep -E '^lost:' "$work/kill.log" || true
	t_lost=$(sed -n "s/^lost: agent ${hname[3]}.* unix \([0-9.]*\):.*/\1/p" "$work/kill.log" | head -n 1)
	if [ -n "$t_lost" ]; then
		d=$(python3 -c "print(f'{$t_lost - $t_kill:.3f}')")
		echo "marked lost ${d}s after the kill"
		python3 -c "import sys; sys.exit(0 if $t_lost - $t_kill <= 5 else 1)" || miss "lost after more than 5 s"
	else
		miss "the killed agent was never marked lost"
	fi
	python3 - "$work/kill/summary.json" <<'PY' || miss "no lost agent with its clients counted"
import json, sys
s = json.load(open(sys.argv[1]))
lost = [a for a in s["agents"] if a["lost"]]
for a in lost:
    print(f"lost agent {a['name']}: clients_lost {a['clients_lost']}, lost at {a.get('lost_at_s', 0):.3f}s")
print(f"connect successes {s['connect']['successes']}, complete {s['complete']}")
sys.exit(0 if lost and lost[0]["clients_lost"] > 0 else 1)
PY
	[ "$rc" = 0 ] || miss "--on-agent-loss continue exited $rc"
}

kill_coordinator() {
	echo "== coordinator: $CLIENTS clients, the coordinator killed (-9) mid-run"
	coordinator coord --listen "$bridge_ip:0" --duration 120s --on-agent-loss continue
	agents "$(wait_url "$work/coord.log")" coord
	port=""
	for _ in $(seq 1 1200); do
		port=$(sed -n 's/^target: .* on [0-9.]*:\([0-9]*\),.*/\1/p' "$work/coord.log" | head -n 1)
		grep -q '^loadgen:' "$work/coord.log" && [ -n "$port" ] && break
		sleep 0.1
	done
	sleep 25
	conns() { ip netns exec "${hname[0]}" ss -Htn state established "( sport = :$port )" 2>/dev/null | wc -l; }
	echo "connections to the target before: $(conns)"
	# Watchers: each agent's exit instant, and the target's connection
	# count with the instant each count was taken (after ss returned: an
	# upper bound), so a slow poll on a busy machine does not add to them.
	for p in "${agent_pids[@]}"; do
		(while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; date +%s.%N >"$work/exit-$p") &
	done
	(while :; do c=$(conns); echo "$(date +%s.%N) $c"; [ "$c" = 0 ] && break; sleep 0.1; done >"$work/conns") &
	sampler=$!
	sleep 0.5
	if ! kill -0 "$co_pid" 2>/dev/null; then
		miss "the coordinator ended before it was killed (see $work/coord.log)"
		grep -E '^lost:' "$work/coord.log" || true
		return
	fi
	t_kill=$(date +%s.%N)
	kill -9 "$co_pid"
	wait "$co_pid" 2>/dev/null || true
	for _ in $(seq 1 300); do
		n=0
		for p in "${agent_pids[@]}"; do [ -s "$work/exit-$p" ] && n=$((n + 1)); done
		[ "$n" = ${#agent_pids[@]} ] && ! kill -0 "$sampler" 2>/dev/null && break
		sleep 0.1
	done
	kill "$sampler" 2>/dev/null || true
	t_noconn=$(awk -v k="$t_kill" '$2 == 0 { printf "%.2f", $1 - k; exit }' "$work/conns")
	t_noagent=""
	for p in "${agent_pids[@]}"; do
		[ -s "$work/exit-$p" ] || { t_noagent=""; break; }
		t_noagent=$(python3 -c "print(f'{max(${t_noagent:-0}, $(cat "$work/exit-$p") - $t_kill):.2f}')")
	done
	awk -v k="$t_kill" '{ printf "  %+.2fs: target connections %s\n", $1 - k, $2 }' "$work/conns" | tail -n 6
	echo "no connection to the target after ${t_noconn:-never}s; every agent exited after ${t_noagent:-never}s"
	python3 -c "import sys; sys.exit(0 if '$t_noconn' and '$t_noagent' and float('$t_noconn') <= 5 and float('$t_noagent') <= 5 else 1)" ||
		miss "the fleet outlived its coordinator by more than 5 s"
	echo "coordinator killed at $(date -u -d "@$t_kill" +%H:%M:%S.%N | cut -c1-12) UTC; the agents' last lines:"
	for h in "${hname[@]}"; do tail -n 1 "$work/coord-$h.log" | sed "s/^/  /"; done
}

machine_nats() {
	echo "== nats: the storm run through the machine's NATS at 127.0.0.1:4222"
	if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
		miss "no NATS on 127.0.0.1:4222"
		return
	fi
	"$bin" proxy --listen "$bridge_ip:14222" --upstream 127.0.0.1:4222 >"$work/relay.out" 2>"$work/relay.log" &
	pids+=($!)
	for _ in $(seq 1 100); do grep -q ready "$work/relay.out" && break; sleep 0.1; done
	coordinator nats --nats nats://127.0.0.1:4222 --chaos 'at 20s restart abrupt down=2s' --duration "$DURATION"
	for _ in $(seq 1 100); do [ -s "$work/token" ] && grep -q 'agents: waiting' "$work/nats.log" && break; sleep 0.1; done
	printf 'not-the-run-token-0123456789\n' >"$work/wrong"
	rc=0
	out=$(ip netns exec "${hname[1]}" "$bin" agent --nats "nats://$bridge_ip:14222" --token-file "$work/wrong" --name stranger --role loadgen --join-timeout 20s 2>&1 >/dev/null) || rc=$?
	echo "wrong token: exit status $rc, $(printf '%s\n' "$out" | grep -vc '^$') line(s): $out"
	[ "$rc" != 0 ] && [ "$(printf '%s\n' "$out" | grep -vc '^$')" = 1 ] || miss "a wrong token was not refused with one line"
	agents "nats://$bridge_ip:14222" nats
	rc=0
	wait "$co_pid" || rc=$?
	echo "exit status: $rc"
	figures nats
	python3 - "$work/nats/summary.json" "$CLIENTS" <<'PY' || miss "the run over the machine's NATS did not recover every client"
import json, sys
s = json.load(open(sys.argv[1])); n = int(sys.argv[2])
r = s["recovery"][0]
sys.exit(0 if r["connected_before"] == n and r["recovered"] == n and len(s["agents"]) == 4 else 1)
PY
}

for s in "${scenarios[@]}"; do
	rm -f "$work/token"
	case $s in
	storm) storm ;;
	kill) kill_agent ;;
	coordinator) kill_coordinator ;;
	nats) machine_nats ;;
	*) echo "fleet-acceptance: unknown scenario $s (storm, kill, coordinator, nats, all)" >&2; exit 2 ;;
	esac
done
[ "$failed" = 0 ] && echo "== all figures met" || echo "== some figures missed (MISS lines above)"
exit "$failed"
