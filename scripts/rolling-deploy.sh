#!/usr/bin/env bash
# rolling-deploy.sh: restart every backend of a `scripts/lb.sh up DIR`, one
# at a time, through HAProxy's runtime API, as a deploy would: the kind of
# command `stampede drill --restart-cmd` runs (docs/loadbalancer.md).
#
#   scripts/rolling-deploy.sh DIR [--drain-timeout D] [--up-timeout D] [--signal SIG]
#                                 [--spread D] [--hint D]
#
# For each backend sN, on every HAProxy instance of DIR:
#   1. drain:   `set server be/sN state drain` (no new client goes to it),
#               then wait until its sessions are 0 or --drain-timeout
#               (seconds, default 2) has passed. WebSocket clients do not
#               leave by themselves: after the timeout the restart ends them.
#   2. restart: --signal (default TERM: the bundled target and the Node
#               server close their clients with 1001; KILL: the kernel resets
#               them, as a crash or an expired grace period does, and
#               clients see 1006) to the backend, or, with --spread or
#               --hint (seconds; bundled targets only), a graceful stop
#               through its control API that sends its close frames spread
#               over --spread and, with --hint, closes 1013 telling each
#               client to come back within --hint seconds (the other
#               backends are up: HAProxy sends it there); wait for it to exit,
#               `shutdown sessions server be/sN` for anything left,
#               `set server be/sN health down`, and start it again with the
#               same command line (DIR/sN.cmd).
#   3. up:      wait until every instance's health check sees it UP
#               (`show servers state`: srv_op_state 1, warming up under
#               slowstart, or 2), at most --up-timeout
#               seconds (default 20).
#   4. ready:   `set server be/sN state ready`; next backend.
#
# Each step prints one line on stdout:
#   stampede-event: KIND NAME TIME [DETAIL]
# KIND is deploy-start, drain, restart, up, ready or deploy-end; NAME the
# backend (or "deploy"); TIME UTC RFC 3339 with milliseconds. A drill's
# --restart-cmd records these lines as events (docs/loadbalancer.md).
# Exit status: 0 every backend restarted and ready, 2 bad usage, 1 a step
# failed (the line on stderr says which; the backend stays as it was left).
set -euo pipefail
LB_NAME=rolling-deploy
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lb/lib.sh
source "$here/lb/lib.sh"

usage() { lb_die 2 "usage: $0 DIR [--drain-timeout SECONDS] [--up-timeout SECONDS] [--signal TERM|INT|USR1|KILL] [--spread SECONDS] [--hint SECONDS]"; }
[ $# -ge 1 ] || usage
dir=$1
shift
drain_timeout=2 up_timeout=20 signal=TERM spread="" hint=""
while [ $# -gt 0 ]; do
	case $1 in
	--spread) spread=${2:-} && shift 2 || usage ;;
	--hint) hint=${2:-} && shift 2 || usage ;;
	--drain-timeout) drain_timeout=${2:-} && shift 2 || usage ;;
	--up-timeout) up_timeout=${2:-} && shift 2 || usage ;;
	--signal) signal=${2:-} && shift 2 || usage ;;
	*) usage ;;
	esac
done
[[ $drain_timeout =~ ^[0-9]+(\.[0-9]+)?$ ]] || lb_die 2 "--drain-timeout: want seconds, got \"$drain_timeout\""
[[ $up_timeout =~ ^[0-9]+(\.[0-9]+)?$ ]] || lb_die 2 "--up-timeout: want seconds, got \"$up_timeout\""
for v in spread hint; do
	[ -z "${!v}" ] || [[ ${!v} =~ ^[0-9]+(\.[0-9]+)?$ ]] || lb_die 2 "--$v: want seconds, got \"${!v}\""
done
shaped=""
[ -z "$spread$hint" ] || shaped=1
[ -z "$shaped" ] || [ "$signal" = TERM ] || lb_die 2 "--signal: --spread and --hint stop the backend gracefully, not with $signal"
signal=${signal#SIG}
[[ $signal =~ ^(TERM|INT|USR1|KILL)$ ]] || lb_die 2 "--signal: want TERM, INT, USR1 or KILL, got \"$signal\""
[ -s "$dir/lb.env" ] || lb_die 1 "$dir: no lb.env; is it the folder of 'scripts/lb.sh up'?"
dir=$(cd "$dir" && pwd)
backends=0 backend=stampede
# shellcheck disable=SC1091
source "$dir/lb.env"
[ -z "$shaped" ] || [ "$backend" = stampede ] || lb_die 2 "--spread, --hint: only the bundled target (lb.sh up --backend stampede) takes them, not $backend"

# shaped_stop NAME stops backend NAME gracefully through its control API
# (address and token from its ready line in DIR/NAME.log): its close
# frames spread over --spread, 1013 with a return hint within --hint. The
# token goes to curl on stdin, never on a command line. It waits for the
# exit, then as lb_stop does.
shaped_stop() {
	local name=$1 ready ctl token q
	ready=$(grep '"ready":true' "$dir/$name.log" | tail -n 1)
	ctl=$(sed -n 's/.*"control":"\([^"]*\)".*/\1/p' <<<"$ready")
	token=$(sed -n 's/.*"token":"\([^"]*\)".*/\1/p' <<<"$ready")
	[ -n "$ctl" ] && [ -n "$token" ] || { echo "$name: no control address in its ready line ($dir/$name.log)" >&2; return 1; }
	q=mode=graceful
	[ -z "$spread" ] || q+="&spread=${spread}s"
	[ -z "$hint" ] || q+="&hint=${hint}s"
	printf 'Authorization: Bearer %s\n' "$token" |
		curl -fsS -m 5 -X POST -H @- "http://$ctl/shutdown?$q" >/dev/null || return 1
	lb_stop "$dir/$name.pid" 0 "$(awk -v s="${spread:-0}" 'BEGIN { printf "%d", s + 10 }')"
}

event() {
	local kind=$1 name=$2
	shift 2
	echo "stampede-event: $kind $name $(date -u +%FT%T.%3NZ)${*:+ $*}"
}

now_ms() { date +%s%3N; }
ms() { awk -v s="$1" 'BEGIN { printf "%d", s * 1000 }'; }

# sessions NAME sums be/NAME's current sessions over the instances.
sessions() { lb_server_field "$dir" "$1" scur | awk '{ n += $1 } END { print n + 0 }'; }

# op_states NAME prints be/NAME's srv_op_state on each instance (2 = UP).
op_states() {
	local sock
	for sock in "$dir"/haproxy-*.sock; do
		lb_api "$sock" "show servers state be" | awk -v srv="$1" '$4 == srv { print $6 }'
	done
}

for sock in "$dir"/haproxy-*.sock; do
	[ -S "$sock" ] || lb_die 1 "$dir has no HAProxy runtime socket; is it up?"
	lb_api "$sock" "show info" >/dev/null || lb_die 1 "$sock does not answer"
done

event deploy-start deploy "$backends backend(s)"
for i in $(seq 1 "$backends"); do
	name=s$i
	lb_alive "$dir/$name.pid" >/dev/null || lb_die 1 "$name is not running before its restart"

	before=$(sessions "$name")
	lb_api_all "$dir" "set server be/$name state drain" || lb_die 1 "$name: drain failed"
	event drain "$name" "$before session(s)"
	end=$(($(now_ms) + $(ms "$drain_timeout")))
	left=$before
	while [ "$left" -gt 0 ] && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.2
		left=$(sessions "$name")
	done

	event restart "$name" "$left session(s) left after the drain"
	if [ -n "$shaped" ]; then
		shaped_stop "$name" || lb_die 1 "$name did not stop through its control API"
	else
		lb_stop "$dir/$name.pid" "$signal" 10 || lb_die 1 "$name did not exit"
	fi
	lb_api_all "$dir" "shutdown sessions server be/$name" || lb_die 1 "$name: shutdown sessions failed"
	lb_api_all "$dir" "set server be/$name health down" || lb_die 1 "$name: health down failed"
	lb_start_backend "$dir" "$name" || lb_die 1 "$name did not start again"

	end=$(($(now_ms) + $(ms "$up_timeout")))
	while :; do
		states=$(op_states "$name" | sort -u | tr '\n' ' ')
		# 1 is UP and warming up (slowstart), 2 UP: neither is 0 (down).
		[[ $states =~ ^([12] )+$ ]] && break
		[ "$(now_ms)" -lt "$end" ] || lb_die 1 "$name: HAProxy does not see it UP after ${up_timeout}s (srv_op_state: $states)"
		sleep 0.1
	done
	event up "$name" "pid $(cat "$dir/$name.pid")"

	lb_api_all "$dir" "set server be/$name state ready" || lb_die 1 "$name: ready failed"
	event ready "$name"
done
event deploy-end deploy
