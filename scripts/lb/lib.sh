# lib.sh: what scripts/lb.sh and scripts/rolling-deploy.sh share. Sourced,
# not run. The folder DIR of `lb.sh up DIR` holds everything: lb.env (the
# layout, sourced here), one sN.cmd/sN.pid/sN.log per backend, and one
# haproxy-K.cfg/.pid/.sock/.log per HAProxy instance (docs/loadbalancer.md).

# lb_die STATUS MESSAGE prints MESSAGE on stderr as the script's own and
# exits with STATUS.
lb_die() {
	echo "${LB_NAME:-lb}: $2" >&2
	exit "$1"
}

# lb_alive PIDFILE prints the pid in PIDFILE if that process is alive.
lb_alive() {
	local pid
	[ -s "$1" ] || return 1
	pid=$(cat "$1")
	[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# lb_stop PIDFILE [SIGNAL] [WAIT_S] sends SIGNAL (default TERM) to the
# process of PIDFILE, waits up to WAIT_S seconds (default 5) for it to
# exit, then kills it. A missing or dead process is no error.
lb_stop() {
	local pid i
	pid=$(lb_alive "$1") || return 0
	kill "-${2:-TERM}" "$pid" 2>/dev/null || true
	for ((i = 0; i < ${3:-5} * 20; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 40; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}

# lb_answers PORT says whether something accepts on 127.0.0.1:PORT.
lb_answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# lb_start_backend DIR NAME starts backend NAME with the command line that
# `up` wrote in DIR/NAME.cmd, in its own session (it outlives the script),
# output appended to DIR/NAME.log, pid in DIR/NAME.pid; it waits up to 10 s
# for its port to accept.
lb_start_backend() {
	local dir=$1 name=$2 port i cmd=()
	# shellcheck disable=SC1090
	source "$dir/$name.cmd" # sets cmd=(...) and port=
	echo "--- $(date -u +%FT%T.%3NZ) start: ${cmd[*]}" >>"$dir/$name.log"
	setsid "${cmd[@]}" >>"$dir/$name.log" 2>&1 </dev/null &
	echo $! >"$dir/$name.pid"
	for ((i = 0; i < 200; i++)); do
		lb_alive "$dir/$name.pid" >/dev/null || {
			echo "backend $name exited at its start; see $dir/$name.log" >&2
			return 1
		}
		lb_answers "$port" && return 0
		sleep 0.05
	done
	echo "backend $name does not accept on 127.0.0.1:$port after 10 s; see $dir/$name.log" >&2
	return 1
}

# lb_api SOCKET COMMAND sends one command to an HAProxy runtime API socket
# and prints the answer.
lb_api() {
	if command -v socat >/dev/null 2>&1; then
		echo "$2" | socat -t 5 - "UNIX-CONNECT:$1"
	else
		python3 - "$1" "$2" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
EOF
	fi
}

# lb_api_all DIR COMMAND sends COMMAND to every HAProxy instance of DIR;
# an answer other than empty (HAProxy's "done") fails it.
lb_api_all() {
	local sock out rc=0
	for sock in "$1"/haproxy-*.sock; do
		out=$(lb_api "$sock" "$2") || {
			echo "$sock: $2: no answer" >&2
			rc=1
			continue
		}
		if [ -n "$(echo "$out" | tr -d '[:space:]')" ]; then
			echo "$sock: $2: $out" >&2
			rc=1
		fi
	done
	return $rc
}

# lb_server_field DIR NAME FIELD prints FIELD (a `show stat` CSV column
# name: scur, status, check_status...) of server be/NAME, one line per
# HAProxy instance.
lb_server_field() {
	local sock
	for sock in "$1"/haproxy-*.sock; do
		lb_api "$sock" "show stat" | awk -F, -v srv="$2" -v field="$3" '
			NR == 1 { sub(/^# /, ""); for (i = 1; i <= NF; i++) col[$i] = i; next }
			$1 == "be" && $2 == srv { print $(col[field]) }'
	done
}
