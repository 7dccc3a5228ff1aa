#!/usr/bin/env bash
# The drill against a wss:// nginx: does a deploy keep TLS resumption?
#
# Starts the bundled target (`stampede target`, ws://) and an nginx of its
# own (the Debian package; config, pid file, logs and temp paths in a
# temporary folder, loopback ports, no system service) that terminates TLS
# in front of it with `ssl_session_tickets on` and an
# `ssl_session_ticket_key` file. Then `stampede drill --url wss://...`
# holds the fleet while its --restart-cmd stops nginx (SIGTERM, a fast
# shutdown: every WebSocket is cut) and starts it again; not a reload,
# which keeps open WebSockets on the old workers. Twice:
#
#   kept    the ticket key file survives the restart: the clients' sessions
#           still decrypt, and the reconnects resume (want above 90 %)
#   fresh   a new key file at each start, as a deploy that generates its
#           keys (or keeps them in memory) does: none resume (want under 10 %)
#
# For each it prints the drill's figure: the reconnects' TLS handshakes,
# full and resumed, from summary.json (events[].tls_full, tls_resumed of
# the deploy event), and R99.
#
#   lab/tls-nginx.sh [-n N] [--cert-kind ecdsa-p256|rsa-2048] [--keep DIR]
#
# Default -n 2000 clients, ECDSA P-256. Run it under the heavy lock. The
# drills' results folders are kept in --keep DIR (default: removed).
# STAMPEDE=path uses a built binary; nginx is installed with apt-get when
# missing. Exit status 1 when a case misses its share, 3 when nginx is
# missing and apt-get could not install it.
set -euo pipefail

n=2000 kind=ecdsa-p256 keep=""
while [ $# -gt 0 ]; do
	case "$1" in
		-n) n=$2; shift 2 ;;
		--cert-kind) kind=$2; shift 2 ;;
		--keep) keep=$2; shift 2 ;;
		-h|--help) sed -n '2,27p' "$0"; exit 0 ;;
		*) echo "tls-nginx.sh: unknown argument $1 (use -n N, --cert-kind K, --keep DIR)" >&2; exit 2 ;;
	esac
done
case "$kind" in
	ecdsa-p256) keyargs=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
	rsa-2048) keyargs=(-newkey rsa:2048) ;;
	*) echo "tls-nginx.sh: --cert-kind: want ecdsa-p256 or rsa-2048, got $kind" >&2; exit 2 ;;
esac
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
if [ ! -x "$nginx_bin" ]; then
	echo "tls-nginx.sh: installing nginx" >&2
	{ apt-get install -y -qq nginx >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq nginx >/dev/null 2>&1; }; } ||
		{ echo "tls-nginx.sh: nginx is not installed and apt-get could not install it" >&2; exit 3; }
	nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
fi

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
target_pid=""
cleanup() {
	if [ -s "$tmp/nginx/nginx.pid" ]; then
		pid=$(cat "$tmp/nginx/nginx.pid")
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
	[ -z "$target_pid" ] || kill -TERM "$target_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
exe=${STAMPEDE:-}
if [ -z "$exe" ]; then
	go build -o "$tmp/stampede" ./cmd/stampede
	exe=$tmp/stampede
fi

# A loopback port free now (the kernel's choice, released at once).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The bundled target, plain ws://: its ready line names its address.
"$exe" target --addr 127.0.0.1:0 >"$tmp/target.out" 2>"$tmp/target.log" &
target_pid=$!
for _ in $(seq 1 100); do grep -q '"ready":true' "$tmp/target.out" && break; sleep 0.1; done
upstream=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["addr"])' "$tmp/target.out")

# nginx's certificate, for 127.0.0.1: the drill trusts it with --ca.
d=$tmp/nginx
mkdir -p "$d/tmp"
openssl req -x509 -nodes "${keyargs[@]}" -days 1 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
port=$(free_port)
# A worker per core (auto), as deployed; its connections sized for the
# fleet's two each (client and upstream) within a process's 20,000 files.
# TLS 1.2 and 1.3; tickets from the key file (80 bytes: AES-256), no
# session cache, so a resumption can only come from a ticket.
cat >"$d/nginx.conf" <<EOF
user root;
worker_processes auto;
worker_rlimit_nofile 20000;
daemon on;
pid $d/nginx.pid;
error_log $d/error.log error;
events { worker_connections 16384; }
http {
	access_log off;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server {
		listen 127.0.0.1:$port ssl backlog=4096;
		ssl_certificate $d/cert.pem;
		ssl_certificate_key $d/key.pem;
		ssl_protocols TLSv1.2 TLSv1.3;
		ssl_session_cache off;
		ssl_session_tickets on;
		ssl_session_ticket_key $d/ticket.key;
		location / {
			proxy_pass http://$upstream;
			proxy_http_version 1.1;
			proxy_set_header Upgrade \$http_upgrade;
			proxy_set_header Connection "upgrade";
			proxy_read_timeout 1h;
			proxy_send_timeout 1h;
		}
	}
}
EOF
openssl rand 80 >"$d/ticket.key"
"$nginx_bin" -p "$d" -c "$d/nginx.conf" -t -q -e "$d/error.log"

# The deploy: stop nginx (SIGTERM: a fast shutdown), wait for its master
# to exit, make new ticket keys when asked ($1 = fresh), start it.
cat >"$d/restart.sh" <<EOF
set -e
pid=\$(cat "$d/nginx.pid")
kill -TERM "\$pid"
while kill -0 "\$pid" 2>/dev/null; do sleep 0.05; done
echo "nginx stopped"
if [ "\$1" = fresh ]; then openssl rand 80 >"$d/ticket.key"; echo "new ticket keys"; fi
"$nginx_bin" -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
echo "nginx started"
EOF

# A ramp of 500 a second, the deploy 10 s after the ramp ends, 30 s to
# come back.
ramp=500
at=$(( n / ramp + 10 ))
dur=$(( at + 30 ))
fail=0
printf '%-6s %8s %8s %9s %8s  %s\n' "keys" "full" "resumed" "resumed%" "R99 s" "drill exit"
for keys in kept fresh; do
	out=$tmp/drill-$keys
	openssl rand 80 >"$d/ticket.key"
	"$nginx_bin" -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
	status=0
	"$exe" drill --url "wss://127.0.0.1:$port/" --ca "$d/cert.pem" --clients "$n" --ramp "$ramp" \
		--restart-cmd "sh $d/restart.sh $keys" --at "${at}s" --duration "${dur}s" \
		--slo 'recovered_share==100%' --out "$out" -q >"$tmp/drill-$keys.txt" 2>"$tmp/drill-$keys.log" || status=$?
	read -r full resumed r99 < <(python3 -c 'import json,sys
s = json.load(open(sys.argv[1] + "/summary.json"))
e = [e for e in s["events"] if e["kind"] == "deploy"]
r = [r for r, e in zip(s["recovery"], s["events"]) if e["kind"] == "deploy"]
print(e[0].get("tls_full", 0) if e else 0, e[0].get("tls_resumed", 0) if e else 0, (r[0].get("r99_s") if r else None) or 0)' "$out")
	share=$(awk -v f="$full" -v r="$resumed" 'BEGIN { if (f + r) printf "%.1f", 100 * r / (f + r); else print 0 }')
	printf '%-6s %8d %8d %9s %8.2f  %d\n' "$keys" "$full" "$resumed" "$share" "$r99" "$status"
	grep 'TLS handshakes' "$tmp/drill-$keys.txt" | sed 's/^/  drill:/' || true
	case "$keys" in
		kept) awk -v s="$share" 'BEGIN { exit !(s > 90) }' || { echo "  FAIL: not above 90 % resumed"; fail=1; } ;;
		fresh) awk -v s="$share" 'BEGIN { exit !(s < 10) }' || { echo "  FAIL: not under 10 % resumed"; fail=1; } ;;
	esac
	[ "$status" = 0 ] || { echo "  FAIL: the drill exited $status:"; tail -n 5 "$tmp/drill-$keys.log" | sed 's/^/    /'; fail=1; }
	[ "$(( full + resumed ))" -ge "$n" ] || { echo "  FAIL: $(( full + resumed )) of $n came back"; fail=1; }
	pid=$(cat "$d/nginx.pid")
	kill -TERM "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r "$out" "$keep/"; fi
done
echo "nginx $("$nginx_bin" -v 2>&1 | sed 's,.*/,,'), $("$exe" version 2>/dev/null | head -n 1)"
exit $fail
