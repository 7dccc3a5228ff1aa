#!/usr/bin/env bash
# Starts the local services the tests use (Redis on 127.0.0.1:6379,
# PostgreSQL on 127.0.0.1:5432 with database "test", NATS with JetStream on
# 127.0.0.1:4222 for the agents' tests) when they are installed but not
# answering. It never installs anything and never fails the caller:
# tests decide whether a missing service is a skip or (with
# STAMPEDE_REQUIRE_SERVICES=1) a failure.
set -u

if command -v redis-cli >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
	if command -v redis-server >/dev/null 2>&1; then
		echo "services: starting redis on 127.0.0.1:6379"
		mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
		redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
			--appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
	fi
fi

if command -v pg_isready >/dev/null 2>&1 && ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
	if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
		echo "services: starting postgresql on 127.0.0.1:5432"
		pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
	fi
fi

nats_up() { (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; }
if ! nats_up && command -v nats-server >/dev/null 2>&1; then
	echo "services: starting nats-server on 127.0.0.1:4222"
	mkdir -p /var/lib/nats-server 2>/dev/null || true
	nats-server -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server >/dev/null 2>&1 &
fi

# Wait briefly for them, so the first test does not race their start-up.
for _ in $(seq 1 20); do
	ok=1
	if command -v redis-cli >/dev/null 2>&1; then redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || ok=0; fi
	if command -v pg_isready >/dev/null 2>&1; then pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null || ok=0; fi
	if command -v nats-server >/dev/null 2>&1; then nats_up || ok=0; fi
	[ "$ok" = 1 ] && break
	sleep 0.5
done
exit 0
