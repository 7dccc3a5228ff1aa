#!/usr/bin/env bash
# Scale benchmark: 50,000 WebSocket connections on this machine.
#
#   lab/scale.sh [flags of lab/scale]     e.g. -only memory, -clients 50000
#
# 1. `stampede run --clients 50000` with an abrupt restart (down=2s): prints
#    connected_before, recovered, R50..R100 and the loadgen/target peak RSS
#    and open files from summary.json.
# 2. Coordinator memory (-only coordinator): the restart at 50,000 and 100,000
#    clients; the coordinator's peak RSS grows by at most 20 %, no agent message
#    is over 1 MiB.
# 3. Loadgen memory: marginal RSS per connected client between 10,000 and
#    50,000 clients (no chaos), over all loadgen worker processes.
# It takes about 3 minutes and needs no host tuning: stampede sizes its
# worker processes, target processes and 127.x source addresses itself.
# STAMPEDE=path uses a built binary instead of building ./cmd/stampede.
# Results folders go to a temporary folder unless -out DIR is given.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exe=${STAMPEDE:-}
if [ -z "$exe" ]; then
	exe=$tmp/stampede
	go build -o "$exe" ./cmd/stampede
	# The lean worker binary beside it is what run starts for each worker.
	CGO_ENABLED=0 go build -o "$tmp/stampede-worker" ./cmd/stampede-worker
fi
go -C lab build -o "$tmp/scale" ./scale
echo "machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), $(go version | cut -d' ' -f3), open files $(ulimit -Hn)"
"$tmp/scale" -exe "$exe" "$@"
