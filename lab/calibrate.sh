#!/usr/bin/env bash
# Calibration of the simulator: real storms and the same storms
# simulated, side by side with relative errors.
#
#   flock "$STAMPEDE_LOCK" lab/calibrate.sh [flags of lab/calibrate]
#       e.g. -clients 10000 (one size), -policies exp-jitter (one policy),
#            -reuse (keep real runs already done),
#            -out DIR (where the results folders go; default a temporary folder)
#   lab/calibrate.sh -from DIR[,DIR...] [-netdev-backlog N] [-reuse]
#       simulates real runs already made, of any command (250,000 or a
#       million clients, say), each on its own inputs: the command's flags,
#       its layout, its restart's timing, its loadgens' attempt rate, the
#       cores it had (the machine's less the share other processes took)
#       and, with those, the CPU a first connect cost each end on that
#       machine (--cpu-per-connect, from summary.json resources.loadgen and
#       resources.target cpu_us_per_connect, measured over the ramp);
#       writes DIR-sim beside each and prints the figures side by side, and
#       whether R90 and R99 are within 15 %. -netdev-backlog: the machine's
#       net.core.netdev_max_backlog during those runs (65536 after
#       scripts/tune-host.sh --apply, as lab/million.sh's TUNE=1 sets it).
#       Each run's line also gives its herd's costs: from Ready to 90 %
#       back, the loadgen's CPU per attempt and the target's per upgrade.
#   lab/calibrate.sh -from DIR[,DIR...] -herd-from RUN [-netdev-backlog N]
#       the same, every simulation given RUN's herd costs (--cpu-costs
#       attempt=,upgrade=,accept=) in place of its own first connects';
#       writes DIR-sim-herd-RUN (RUN's last element).
#
# For 10,000 and 50,000 clients and the policies fixed, exp and exp with
# jitter and spread, it runs `stampede run` (backlog 128, 2,000 accepts/s,
# TCP_SYNCNT 2, 5 s upgrade timeout, abrupt restart down=2s, keepalive off,
# one loopback source address per 2,500 clients so the loadgen's connect()
# does not starve the machine) and `stampede simulate` with the same flags
# and the real run's layout and restart timing, then prints R50/R90/R99,
# herd peak, wasted attempts per client and ListenOverflows, real beside
# simulated, whether the policies rank the same, and whether the
# calibration criterion holds. Each real run's lines say how busy the machine was. The
# real runs are heavy (50,000 connections, about 4 minutes each; 15 minutes
# in all): run it under the shared lock. STAMPEDE=path uses a built binary.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exe=${STAMPEDE:-}
if [ -z "$exe" ]; then
	exe=$tmp/stampede
	go build -o "$exe" ./cmd/stampede
	go build -o "$tmp/stampede-worker" ./cmd/stampede-worker
fi
go -C lab build -o "$tmp/calibrate" ./calibrate
out=$tmp/runs
for a in "$@"; do
	if [ "${prev:-}" = "-out" ]; then out=$a; fi
	prev=$a
done
echo "machine: $(nproc) cores, kernel $(uname -r), $(go version | cut -d' ' -f3)"
"$tmp/calibrate" -exe "$exe" -out "$out" "$@"
