#!/usr/bin/env bash
# nginx-limit.sh: a real rate limiter to aim an HTTP fleet at (docs/cli.md,
# "A real rate limiter: scripts/nginx-limit.sh").
#
#   scripts/nginx-limit.sh up DIR --rate R [--burst B] [--retry-after S]
#   scripts/nginx-limit.sh down DIR
#
# up starts nginx (the Debian package, installed with apt-get when missing)
# with everything it writes in DIR: config, pid, logs, temp paths. It
# listens on 127.0.0.1 only, on a free port, where limit_req lets R
# requests per second (burst B, default R/10, no delay) through to a small
# backend (a second nginx server on another loopback port answering
# 200 "ok") and answers the rest 429 with "Retry-After: S" (default 1).
# All clients share one limit, whatever their source address. The last
# line it prints is the URL, http://127.0.0.1:PORT/. up on a DIR whose
# nginx is running fails; a failed up stops what it started.
#
# down stops the nginx of DIR by its pid file and waits for it to exit.
# It removes nothing, in DIR or outside it.
#
# Exit status: 0 ok, 2 bad usage, 3 nginx missing and not installable,
# 1 anything else.
set -euo pipefail

die() {
	echo "nginx-limit: $2" >&2
	exit "$1"
}
usage() { die 2 "usage: $0 up DIR --rate R [--burst B] [--retry-after S] | down DIR"; }

[ $# -ge 2 ] || usage
cmd=$1 dir=$2
shift 2

# running prints the pid of DIR's nginx if it is alive.
running() {
	local pid
	[ -s "$dir/nginx.pid" ] || return 1
	pid=$(cat "$dir/nginx.pid")
	[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

stop() {
	local pid
	pid=$(running) || return 0
	kill -QUIT "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

case $cmd in
down)
	[ $# -eq 0 ] || usage
	[ -d "$dir" ] || die 1 "$dir: no such directory"
	stop
	exit 0
	;;
up) ;;
*) usage ;;
esac

rate="" burst="" retry_after=1
while [ $# -gt 0 ]; do
	case $1 in
	--rate) rate=${2:-} && shift 2 || usage ;;
	--burst) burst=${2:-} && shift 2 || usage ;;
	--retry-after) retry_after=${2:-} && shift 2 || usage ;;
	*) usage ;;
	esac
done
[[ $rate =~ ^[1-9][0-9]*$ ]] || die 2 "--rate: want a whole number of requests per second, at least 1, got \"$rate\""
[ -n "$burst" ] || burst=$((rate / 10))
[[ $burst =~ ^[0-9]+$ ]] || die 2 "--burst: want a whole number of requests, got \"$burst\""
[[ $retry_after =~ ^[0-9]+$ ]] || die 2 "--retry-after: want whole seconds, got \"$retry_after\""

nginx_bin=$(command -v nginx || true)
[ -n "$nginx_bin" ] || [ ! -x /usr/sbin/nginx ] || nginx_bin=/usr/sbin/nginx
if [ -z "$nginx_bin" ]; then
	echo "nginx-limit: installing nginx" >&2
	{ apt-get install -y -qq nginx >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq nginx >/dev/null 2>&1; }; } ||
		die 3 "nginx is not installed and apt-get could not install it"
	nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
	[ -x "$nginx_bin" ] || die 3 "nginx is not installed and apt-get could not install it"
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if pid=$(running); then
	die 1 "nginx is already up in $dir (pid $pid): run '$0 down $dir' first"
fi
mkdir -p "$dir/tmp"

started=0
cleanup() {
	if [ "$started" = 1 ]; then stop; fi
}
trap cleanup EXIT

burst_arg=""
[ "$burst" = 0 ] || burst_arg="burst=$burst nodelay"

# write_conf PORT BACKEND_PORT writes DIR/nginx.conf.
write_conf() {
	cat >"$dir/nginx.conf" <<EOF
# Written by scripts/nginx-limit.sh: $rate r/s, burst $burst, Retry-After $retry_after.
# Why each setting: docs/cli.md, "A real rate limiter". One worker: it
# answers ~5,000 requests/s with a quarter of a core here, and a second
# one would only take CPU from the fleet on the same machine. Its
# connections are sized to a process's file limit (20,000 here), not to
# the clients: a fleet that falls behind opens more than one each.
user root;
worker_processes 1;
worker_rlimit_nofile 20000;
daemon on;
pid $dir/nginx.pid;
error_log $dir/error.log error;
events { worker_connections 16384; }
http {
	# Buffered: one write per 64 KiB of lines, not one per request.
	access_log $dir/access.log combined buffer=64k flush=1s;
	client_body_temp_path $dir/tmp/body;
	proxy_temp_path $dir/tmp/proxy;
	fastcgi_temp_path $dir/tmp/fastcgi;
	uwsgi_temp_path $dir/tmp/uwsgi;
	scgi_temp_path $dir/tmp/scgi;
	# A keep-alive client is never made to reconnect by a request count.
	keepalive_requests 1000000;
	# One key for every client: the fleet may come from many loopback
	# addresses, and the limit is the server's, not per address.
	limit_req_zone \$server_addr zone=stampede:1m rate=${rate}r/s;
	limit_req_status 429;
	limit_req_log_level warn; # below error_log's level: not a line per rejection
	upstream backend {
		server 127.0.0.1:$2;
		keepalive 32;
	}
	server {
		listen 127.0.0.1:$1 backlog=4096;
		location / {
			# nodelay: a request above the rate is answered 429 at once;
			# a burst without it would be queued, not rejected.
			limit_req zone=stampede $burst_arg;
			error_page 429 = @limited;
			proxy_pass http://backend;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
		# A "return" runs before limit_req, so only the rejection uses it.
		location @limited {
			add_header Retry-After $retry_after always;
			return 429 "rate limited\n";
		}
	}
	server {
		listen 127.0.0.1:$2;
		location / { return 200 "ok\n"; }
	}
}
EOF
}

# answers PORT says whether something accepts on 127.0.0.1:PORT (a connect
# only: no request spends a token of the limit).
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Ports below the usual ephemeral range (net.ipv4.ip_local_port_range), so
# a client's TIME_WAIT sockets do not hold them; a taken pair is retried.
for _ in $(seq 1 10); do
	port=$((20000 + RANDOM % 10000))
	bport=$((port + 1))
	if answers "$port" || answers "$bport"; then continue; fi
	write_conf "$port" "$bport"
	: >"$dir/error.log"
	started=1
	if ! "$nginx_bin" -p "$dir/" -e "$dir/error.log" -c "$dir/nginx.conf" 2>>"$dir/error.log"; then
		started=0
		grep -q "Address already in use" "$dir/error.log" && continue
		die 1 "nginx did not start: $(tail -n 3 "$dir/error.log" | tr '\n' ' ')"
	fi
	for _ in $(seq 1 100); do
		if answers "$port" && answers "$bport"; then
			trap - EXIT
			echo "nginx-limit: up in $dir (pid $(cat "$dir/nginx.pid")), $rate r/s, burst $burst, 429 with Retry-After: $retry_after" >&2
			echo "http://127.0.0.1:$port/"
			exit 0
		fi
		sleep 0.1
	done
	die 1 "nginx started but 127.0.0.1:$port does not answer; see $dir/error.log"
done
die 1 "no free port pair found in 10 tries"
