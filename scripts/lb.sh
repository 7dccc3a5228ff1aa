#!/usr/bin/env bash
# lb.sh: a real load balancer, HAProxy, in front of three WebSocket
# backends, to drill a deploy through (docs/loadbalancer.md).
#
#   scripts/lb.sh up DIR [--backlog N] [--accept-rate R] [--tls]
#                        [--backend stampede|node] [--backends N] [--instances N]
#                        [--rate-limit auto|off|N] [--queue N]
#   scripts/lb.sh down DIR
#
# up starts --backends (default 3) backends, each on its own loopback port:
# `stampede target` processes (the bundled server, with --backlog and
# --accept-rate per backend) or, with --backend node, Node's `ws` server
# (scripts/lb/node, installed with npm when missing). In front of them it
# starts --instances (default 2) HAProxy processes (the Debian package,
# installed with apt-get when missing) sharing one frontend port on
# 127.0.0.1 (SO_REUSEPORT): one process may hold at most 20,000 files here
# and each client costs HAProxy two. Every instance has its runtime API,
# admin level, on DIR/haproxy-K.sock. --tls makes HAProxy terminate TLS
# with a test CA it generates (DIR/tls/ca.pem): the frontend is wss://.
# Config, pids and logs all live in DIR. The last line printed is the
# frontend's URL, ws://127.0.0.1:PORT/ (wss:// with --tls). up on a DIR
# whose processes run fails; a failed up stops what it started.
#
# down stops everything up started, by its pid files, and waits for it to
# exit. It is idempotent and removes nothing.
#
# The stampede binary is $STAMPEDE, else bin/stampede (built with
# `go build` when missing).
#
# Exit status: 0 ok, 2 bad usage, 3 haproxy (or node/npm for --backend
# node) missing and not installable, 1 anything else.
set -euo pipefail
LB_NAME=lb
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lb/lib.sh
source "$here/lb/lib.sh"

usage() { lb_die 2 "usage: $0 up DIR [--backlog N] [--accept-rate R] [--tls] [--backend stampede|node] [--backends N] [--instances N] [--rate-limit auto|off|N] [--queue N] | down DIR"; }

[ $# -ge 2 ] || usage
cmd=$1 dir=$2
shift 2

# stop_all stops the HAProxy instances first (no client is sent to a
# backend that is going), then the backends.
stop_all() {
	local f rc=0
	for f in "$dir"/haproxy-*.pid; do
		[ -e "$f" ] || continue
		lb_stop "$f" TERM 5 || rc=1
	done
	for f in "$dir"/s*.pid; do
		[ -e "$f" ] || continue
		lb_stop "$f" TERM 5 || rc=1
	done
	return $rc
}

case $cmd in
down)
	[ $# -eq 0 ] || usage
	[ -d "$dir" ] || lb_die 1 "$dir: no such directory"
	stop_all || lb_die 1 "a process of $dir did not exit"
	exit 0
	;;
up) ;;
*) usage ;;
esac

backlog=64 accept_rate=0 tls=0 backend=stampede backends=3 instances=2 rate_limit_arg=auto queue=""
while [ $# -gt 0 ]; do
	case $1 in
	--backlog) backlog=${2:-} && shift 2 || usage ;;
	--accept-rate) accept_rate=${2:-} && shift 2 || usage ;;
	--tls) tls=1 && shift ;;
	--backend) backend=${2:-} && shift 2 || usage ;;
	--backends) backends=${2:-} && shift 2 || usage ;;
	--instances) instances=${2:-} && shift 2 || usage ;;
	--rate-limit) rate_limit_arg=${2:-} && shift 2 || usage ;;
	--queue) queue=${2:-} && shift 2 || usage ;;
	*) usage ;;
	esac
done
[[ $backlog =~ ^[1-9][0-9]*$ ]] || lb_die 2 "--backlog: want a whole number of connections, at least 1, got \"$backlog\""
[[ $accept_rate =~ ^[0-9]+(\.[0-9]+)?$ ]] || lb_die 2 "--accept-rate: want accepts per second (0 = unlimited), got \"$accept_rate\""
[[ $backends =~ ^[1-9]$ ]] || lb_die 2 "--backends: want 1 to 9, got \"$backends\""
[[ $instances =~ ^[1-4]$ ]] || lb_die 2 "--instances: want 1 to 4, got \"$instances\""
[[ $rate_limit_arg =~ ^(auto|off|[1-9][0-9]*)$ ]] || lb_die 2 "--rate-limit: want auto, off or sessions per second per instance, got \"$rate_limit_arg\""
[[ -z $queue || $queue =~ ^[1-9][0-9]*$ ]] || lb_die 2 "--queue: want the frontend's accept queue per instance, at least 1, got \"$queue\""
case $backend in
stampede | node) ;;
*) lb_die 2 "--backend: want stampede or node, got \"$backend\"" ;;
esac
if [ "$backend" = node ] && { [ "$accept_rate" != 0 ] || [ "$backlog" != 64 ]; }; then
	lb_die 2 "--backlog and --accept-rate are knobs of the bundled backend; Node's ws server runs as it comes (--backend node)"
fi

# install PACKAGE COMMAND installs a Debian package when COMMAND is missing.
install() {
	command -v "$2" >/dev/null 2>&1 || [ -x "/usr/sbin/$2" ] && return 0
	echo "lb: installing $1" >&2
	{ apt-get install -y -qq "$1" >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "$1" >/dev/null 2>&1; }; } ||
		lb_die 3 "$2 is not installed and apt-get could not install $1"
}
install haproxy haproxy
haproxy_bin=$(command -v haproxy || echo /usr/sbin/haproxy)
[ -x "$haproxy_bin" ] || lb_die 3 "haproxy is not installed and apt-get could not install it"
command -v socat >/dev/null 2>&1 || install socat socat

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
for f in "$dir"/haproxy-*.pid "$dir"/s*.pid; do
	[ -e "$f" ] || continue
	if pid=$(lb_alive "$f"); then
		lb_die 1 "$dir is already up ($(basename "$f" .pid), pid $pid): run '$0 down $dir' first"
	fi
done
rm -f "$dir"/haproxy-*.sock "$dir"/haproxy-*.pid "$dir"/s*.pid "$dir"/s*.cmd

started=0
cleanup() {
	if [ "$started" = 1 ]; then stop_all || true; fi
}
trap cleanup EXIT

# The backend's command and its health check.
case $backend in
stampede)
	stampede=${STAMPEDE:-$here/../bin/stampede}
	if [ ! -x "$stampede" ]; then
		echo "lb: building $stampede" >&2
		(cd "$here/.." && go build -o "$stampede" ./cmd/stampede) || lb_die 1 "could not build $stampede"
	fi
	stampede=$(cd "$(dirname "$stampede")" && pwd)/$(basename "$stampede")
	check="option httpchk GET /http" # the target's plain-HTTP endpoint: 200
	;;
node)
	install nodejs node
	command -v npm >/dev/null 2>&1 || install npm npm
	nodedir=$here/lb/node
	if [ ! -d "$nodedir/node_modules/ws" ]; then
		echo "lb: npm ci in $nodedir" >&2
		(cd "$nodedir" && npm ci --no-audit --no-fund --silent >/dev/null 2>&1) ||
			lb_die 3 "could not install the ws package (npm ci in $nodedir)"
	fi
	check="option httpchk GET /healthz"
	;;
esac

# Ports below the ephemeral range (net.ipv4.ip_local_port_range), so a
# client's sockets and TIME_WAIT do not hold them when a backend restarts:
# 20000-29999 when the range starts above 30000 (the default 32768), else
# 1100 up to the range's start, never a reserved port
# (ip_local_reserved_ports) nor one any socket uses now.
read -r eph_lo _ </proc/sys/net/ipv4/ip_local_port_range
reserved=$(cat /proc/sys/net/ipv4/ip_local_reserved_ports 2>/dev/null || true)
if [ "$eph_lo" -gt 30000 ]; then
	port_base=20000 port_span=10000
else
	port_base=1100 port_span=$((eph_lo - 1100))
	[ "$port_span" -gt 100 ] || lb_die 1 "the ephemeral port range starts at $eph_lo: no room below it for servers"
fi
is_reserved() {
	local r
	for r in ${reserved//,/ }; do
		if [[ $r == *-* ]]; then
			[ "$1" -ge "${r%-*}" ] && [ "$1" -le "${r#*-}" ] && return 0
		else
			[ "$1" = "$r" ] && return 0
		fi
	done
	return 1
}
free_port() {
	local p
	for _ in $(seq 1 100); do
		p=$((port_base + (RANDOM * 32768 + RANDOM) % port_span))
		is_reserved "$p" && continue
		[ -z "$(ss -Hatn "( sport = :$p )" 2>/dev/null)" ] || continue
		lb_answers "$p" && continue
		echo "$p"
		return 0
	done
	lb_die 1 "no free port found in 100 tries"
}

started=1
servers=""
for i in $(seq 1 "$backends"); do
	# A port taken between the check and the bind is tried again.
	for try in 1 2 3 4 5; do
		port=$(free_port)
		case $backend in
		stampede)
			line=("$stampede" target --addr "127.0.0.1:$port" --backlog "$backlog" --accept-rate "$accept_rate" --control-addr 127.0.0.1:0)
			;;
		node) line=(node "$nodedir/server.js" "$port") ;;
		esac
		{
			printf 'cmd=('
			printf '%q ' "${line[@]}"
			printf ')\nport=%q\n' "$port"
		} >"$dir/s$i.cmd"
		lb_start_backend "$dir" "s$i" && break
		grep -qi "address already in use" "$dir/s$i.log" && [ "$try" -lt 5 ] ||
			lb_die 1 "backend s$i did not start: $(tail -n 3 "$dir/s$i.log" | tr '\n' ' ')"
	done
	servers+="	server s$i 127.0.0.1:$port"$'\n'
done

scheme=ws bind_tls=""
if [ "$tls" = 1 ]; then
	scheme=wss
	mkdir -p "$dir/tls"
	(
		cd "$dir/tls"
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=stampede lb test CA" \
			-keyout ca.key -out ca.pem -addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign"
		openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server.key -out server.csr
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
			-extfile server.ext -out server.crt
		cat server.crt server.key >server.pem
	) >"$dir/tls/openssl.log" 2>&1 || lb_die 1 "openssl could not make the test CA; see $dir/tls/openssl.log"
	bind_tls="ssl crt $dir/tls/server.pem alpn http/1.1"
fi

# HAProxy answers 503 itself when no server can take a client (all down,
# or the queue timed out): with a Retry-After, so clients that honour it
# come back when a backend may be up, instead of at their own pace.
cat >"$dir/503.http" <<'EOF'
HTTP/1.1 503 Service Unavailable
Cache-Control: no-cache
Connection: close
Content-Type: text/plain
Retry-After: 2

no backend can take this connection now; retry after 2 s
EOF
sed -i 's/$/\r/' "$dir/503.http"

fport=$(free_port)
# With a backend accept rate, each instance admits at most its share of
# what the backends left during a rolling deploy (all but one) accept: a
# reconnect herd then waits in HAProxy's accept queue instead of
# overflowing a backend's backlog, where a dropped SYN costs a 1 s resend.
# The frontend's accept queue (bind backlog) holds about one second of what
# the instance admits: a burst that does not fit is dropped at SYN and
# resent by the kernel, not queued past a client's upgrade timeout.
# Without a rate limit, 1024.
rate_limit="" fe_backlog=1024
if [[ $rate_limit_arg =~ ^[0-9]+$ ]]; then
	rate_limit="rate-limit sessions $rate_limit_arg" fe_backlog=$rate_limit_arg
elif [ "$rate_limit_arg" = auto ] && [ "$accept_rate" != 0 ]; then
	fe_backlog=$(awk -v r="$accept_rate" -v n="$backends" -v k="$instances" \
		'BEGIN { n = n > 1 ? n - 1 : 1; x = r * n / k; printf "%d", (x == int(x)) ? x : int(x) + 1 }')
	rate_limit="rate-limit sessions $fe_backlog"
fi
[ -z "$queue" ] || fe_backlog=$queue
# write_cfg K writes the configuration of HAProxy instance K; the
# instances differ only in their runtime API socket. Every choice is
# explained in docs/loadbalancer.md ("The configuration").
write_cfg() {
	cat >"$dir/haproxy-$1.cfg" <<EOF
# Written by scripts/lb.sh: instance $1 of $instances, $backends $backend backend(s).
global
	# Two files per client (its socket and its backend's) under the
	# 20,000-file cap of one process here, with room for checks and logs.
	maxconn 9000
	stats socket $dir/haproxy-$1.sock mode 600 level admin
	stats timeout 30s
	tune.ssl.default-dh-param 2048

defaults
	mode http
	option dontlognull
	# A SYN dropped by a backend's full backlog is resent after about 1 s
	# and 2 s on this kernel: 3 s lets HAProxy's connect ride out two
	# resends before it counts a failure.
	timeout connect 3s
	# A client that opened TCP has 10 s to send its upgrade request.
	timeout http-request 10s
	timeout client 30s
	timeout server 30s
	# After the 101 the connection is a tunnel: WebSocket clients may be
	# silent for long (their pings keep it alive), so the tunnel waits 1 h.
	timeout tunnel 1h
	timeout client-fin 5s
	timeout server-fin 5s
	# A client waits at most 5 s in HAProxy's queue for a server slot,
	# then gets the 503 below.
	timeout queue 5s
	timeout check 2s
	# A failed connect to a backend is tried again, on another server
	# (redispatch), before the client sees an error: a restarting backend
	# costs a reconnect, not a 503.
	retries 3
	option redispatch 1
	errorfile 503 $dir/503.http

frontend fe
	# About a second of what this instance admits (its rate limit; 1024
	# without one): a burst beyond it is dropped at SYN and resent by the
	# client, not queued past its handshake timeout.
	bind 127.0.0.1:$fport backlog $fe_backlog $bind_tls
	maxconn 9000
	$rate_limit
	default_backend be

backend be
	# A reconnect herd is spread evenly over every server that is up:
	# leastconn would send all of it to the one just restarted (it holds
	# the fewest), at that one server's accept rate.
	balance roundrobin
	$check
	http-check expect status 200
	default-server check inter 500ms fall 2 rise 2 maxconn 6000
$servers
EOF
}

# start_haproxy writes every instance's configuration for the frontend
# port $fport and starts them; it fails when one exits at once (a port
# taken between the check and the bind: the caller tries another).
start_haproxy() {
	local k
	for k in $(seq 1 "$instances"); do
		write_cfg "$k"
		"$haproxy_bin" -c -q -f "$dir/haproxy-$k.cfg" >"$dir/haproxy-$k.log" 2>&1 ||
			lb_die 1 "haproxy rejects $dir/haproxy-$k.cfg: $(tail -n 5 "$dir/haproxy-$k.log" | tr '\n' ' ')"
		setsid "$haproxy_bin" -db -f "$dir/haproxy-$k.cfg" >>"$dir/haproxy-$k.log" 2>&1 </dev/null &
		echo $! >"$dir/haproxy-$k.pid"
	done
	for _ in $(seq 1 50); do
		for k in $(seq 1 "$instances"); do
			lb_alive "$dir/haproxy-$k.pid" >/dev/null || return 1
		done
		[ -S "$dir/haproxy-$instances.sock" ] && return 0
		sleep 0.1
	done
}
for try in 1 2 3 4 5; do
	start_haproxy && break
	for f in "$dir"/haproxy-*.pid; do lb_stop "$f" TERM 5 || true; done
	grep -qi "address already in use" "$dir"/haproxy-*.log && [ "$try" -lt 5 ] ||
		lb_die 1 "haproxy did not start: $(grep -h ALERT "$dir"/haproxy-*.log | head -n 3 | tr '\n' ' ')"
	rm -f "$dir"/haproxy-*.sock
	fport=$(free_port)
done

# Up when every instance answers on its socket and sees every backend UP.
ok=0
for _ in $(seq 1 200); do
	ok=1
	for k in $(seq 1 "$instances"); do
		lb_alive "$dir/haproxy-$k.pid" >/dev/null ||
			lb_die 1 "haproxy instance $k exited: $(tail -n 5 "$dir/haproxy-$k.log" | tr '\n' ' ')"
		if [ ! -S "$dir/haproxy-$k.sock" ]; then
			ok=0
			continue
		fi
	done
	if [ "$ok" = 1 ]; then
		for i in $(seq 1 "$backends"); do
			for st in $(lb_server_field "$dir" "s$i" status); do
				[ "$st" = UP ] || ok=0
			done
		done
	fi
	[ "$ok" = 1 ] && lb_answers "$fport" && break
	ok=0
	sleep 0.1
done
[ "$ok" = 1 ] || lb_die 1 "haproxy did not see every backend UP within 20 s; see $dir/haproxy-*.log"

cat >"$dir/lb.env" <<EOF
# Written by scripts/lb.sh up; read by scripts/rolling-deploy.sh.
backend=$backend
backends=$backends
instances=$instances
scheme=$scheme
frontend=127.0.0.1:$fport
EOF
trap - EXIT
echo "lb: up in $dir: $instances haproxy instance(s) on 127.0.0.1:$fport, $backends $backend backend(s)$([ "$backend" = stampede ] && echo ", backlog $backlog, accept rate $accept_rate/s each"), runtime API $dir/haproxy-*.sock$([ "$tls" = 1 ] && echo ", test CA $dir/tls/ca.pem")" >&2
echo "$scheme://127.0.0.1:$fport/"
