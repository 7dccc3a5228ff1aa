#!/usr/bin/env bash
# hosts.sh: network-namespace hosts to run a several-host fleet on one
# machine (docs/hosts.md).
#
#   scripts/hosts.sh up N [--set K] [--addrs M]
#                                       make exactly N hosts (1..200)
#   scripts/hosts.sh down [--set K]     remove them (nothing up: fine)
#   scripts/hosts.sh status [--set K]   print what is up
#
# up makes N network namespaces, stampede-h1 .. stampede-hN, each joined by
# a veth pair to the Linux bridge stampede-br0. The bridge holds 10.203.0.1/24
# in the root namespace, so a coordinator there reaches every host; host i
# holds 10.203.0.(10+i)/24 on its eth0 and 127.0.0.1 on its lo. --addrs M
# (default 1) gives each host M addresses, the j-th (from 0) being
# 10.203.0.(10+i+N*j), so a loadgen host has M source addresses of its own
# (one address holds at most ~20,000 clients to one target, docs/sizing.md);
# 10+N*M must stay under 255. Nothing else
# gets an address: the veth ends on the bridge have none (IPv6 off on them).
# No host has a default route, no forwarding or NAT is added: a packet from a
# host reaches the bridge, the root namespace or another host, never the
# outside. Inside each host (never in the root namespace) it raises the
# per-namespace limits a storm needs: net.ipv4.ip_local_port_range
# "10000 65535" (55,536 ports to one destination instead of 28,232),
# net.core.somaxconn and net.ipv4.tcp_max_syn_backlog 65535.
#
# Set K (0..99, default 0) is a separate group: bridge stampede-brK, hosts
# stampedeK-h1.., subnet 10.203.K.0/24, so tests (which take sets 1 and up,
# internal/netnshost) never disturb a set a person brought up by hand.
#
# up is idempotent (running it again repairs and keeps what is there; a
# smaller N removes the hosts above it); a failed up removes the whole set.
# down deletes the hosts' veth pairs, namespaces and the bridge; it ends no
# process, and names any process still running in a host it removed.
#
# up and status print one line per host, "NAME ADDRESS [ADDRESS...]", and
# last one machine-readable line (a host's addresses joined by commas, its
# first address first):
#   hosts set=K bridge=stampede-brK root=10.203.K.1 NAME=ADDR[,ADDR...] ...
#
# Exit status: 0 ok, 2 bad usage, 3 network namespaces cannot be made here
# (not root, no ip command, no CAP_SYS_ADMIN), 1 anything else.
set -euo pipefail

die() {
	echo "hosts: $2" >&2
	exit "$1"
}
usage() { die 2 "usage: $0 up N [--set K] [--addrs M] | down [--set K] | status [--set K]"; }

[ $# -ge 1 ] || usage
cmd=$1
shift
n=""
if [ "$cmd" = up ]; then
	[ $# -ge 1 ] || usage
	n=$1
	shift
	[[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 200 ] || die 2 "up N: want a number of hosts from 1 to 200, got \"$n\""
fi
set_k=0 m=1
while [ $# -gt 0 ]; do
	case $1 in
	--set) set_k=${2:-} && shift 2 || usage ;;
	--addrs) [ "$cmd" = up ] || usage; m=${2:-} && shift 2 || usage ;;
	*) usage ;;
	esac
done
[[ $set_k =~ ^(0|[1-9][0-9]?)$ ]] || die 2 "--set: want a set number from 0 to 99, got \"$set_k\""
[[ $m =~ ^[1-9][0-9]*$ ]] || die 2 "--addrs: want a number of addresses per host, at least 1, got \"$m\""
[ "$cmd" != up ] || [ $((10 + n * m)) -le 254 ] || die 2 "up $n --addrs $m: $n hosts of $m addresses do not fit a /24 (10+N*M must be at most 254)"
case $cmd in up | down | status) ;; *) usage ;; esac

[ "$(id -u)" = 0 ] || die 3 "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null 2>&1 || die 3 "the ip command (iproute2) is missing"

bridge=stampede-br$set_k
subnet=10.203.$set_k
root_addr=$subnet.1
if [ "$set_k" = 0 ]; then prefix=stampede; else prefix=stampede$set_k; fi
host() { echo "$prefix-h$1"; }
veth() { echo "stp${set_k}h$1"; } # the root end, on the bridge (<= 15 chars)
addr() { echo "$subnet.$((10 + $1 + n * ${2:-0}))"; } # host $1's address $2
# addrs_of prints host $1's IPv4 addresses on eth0, lowest first.
addrs_of() {
	ip -n "$(host "$1")" -4 -o addr show dev eth0 2>/dev/null | awk '{sub("/.*", "", $4); print $4}' | sort -t. -k4,4n
}

# One change at a time on this machine: two ups of one set would race, and
# bridges of different sets share the root namespace's tables.
lockdir=/run/lock
[ -d "$lockdir" ] && [ -w "$lockdir" ] || lockdir=/tmp
exec 9>"$lockdir/stampede-hosts.lock"
flock 9

# hosts_of_set prints the index of every host of the set that exists.
hosts_of_set() {
	ip netns list | awk '{print $1}' | sed -n "s/^$prefix-h\([1-9][0-9]*\)\$/\1/p" | sort -n
}

remove_host() {
	local i=$1 name pids
	name=$(host "$i")
	ip link del "$(veth "$i")" 2>/dev/null || true
	if ip netns list | awk '{print $1}' | grep -qx "$name"; then
		pids=$(ip netns pids "$name" 2>/dev/null | xargs)
		[ -z "$pids" ] || echo "hosts: $name still has processes ($pids); its network is gone, they are not ended" >&2
		ip netns del "$name"
	fi
}

down() {
	local i
	for i in $(hosts_of_set); do remove_host "$i"; done
	# veth ends left without their namespace (a namespace deleted by hand)
	for i in $(ip -o link show type veth 2>/dev/null | sed -n "s/^[0-9]*: \(stp${set_k}h[0-9]*\)[@:].*/\1/p"); do
		ip link del "$i" 2>/dev/null || true
	done
	ip link del "$bridge" 2>/dev/null || true
}

report() {
	local i a line="hosts set=$set_k bridge=$bridge root=$root_addr"
	for i in $(hosts_of_set); do
		a=$(addrs_of "$i" | xargs)
		echo "$(host "$i") $a"
		line+=" $(host "$i")=${a// /,}"
	done
	echo "$line"
}

case $cmd in
down)
	down
	exit 0
	;;
status)
	if ! ip link show "$bridge" >/dev/null 2>&1 && [ -z "$(hosts_of_set)" ]; then
		echo "hosts: set $set_k is down" >&2
	fi
	report
	exit 0
	;;
esac

# Can namespaces be made at all (a container without CAP_SYS_ADMIN cannot)?
probe=stampede-probe-$$
ip netns add "$probe" 2>/dev/null || die 3 "cannot make a network namespace here (ip netns add failed: no CAP_SYS_ADMIN?)"
ip netns del "$probe"

# The subnet must be ours alone: a route to it through another device means
# someone else uses these addresses.
other=$(ip -4 route show "$subnet.0/24" | grep -v " dev $bridge " || true)
[ -z "$other" ] || die 1 "$subnet.0/24 is already routed elsewhere ($other); use another --set"

ok=0
trap '[ "$ok" = 1 ] || { echo "hosts: up failed; removing set $set_k" >&2; down; exit 1; }' EXIT

ip link show "$bridge" >/dev/null 2>&1 || ip link add "$bridge" type bridge
ip addr replace "$root_addr/24" dev "$bridge"
ip link set "$bridge" up

# hosts above N, from an earlier, larger up
for i in $(hosts_of_set); do
	[ "$i" -le "$n" ] || remove_host "$i"
done

for i in $(seq 1 "$n"); do
	name=$(host "$i") v=$(veth "$i")
	ip netns list | awk '{print $1}' | grep -qx "$name" || ip netns add "$name"
	# The pair is whole when the root end exists and the host has eth0;
	# anything else is rebuilt.
	if ! ip link show "$v" >/dev/null 2>&1 || ! ip -n "$name" link show eth0 >/dev/null 2>&1; then
		ip link del "$v" 2>/dev/null || true
		ip -n "$name" link del eth0 2>/dev/null || true
		ip link add "$v" type veth peer name eth0 netns "$name"
	fi
	# a bridge port needs no address, and has none
	printf '1\n' >"/proc/sys/net/ipv6/conf/$v/disable_ipv6" 2>/dev/null || true
	ip link set "$v" master "$bridge"
	ip link set "$v" up
	ip -n "$name" link set lo up
	# deleting a primary address must not take its secondaries with it
	ip netns exec "$name" sysctl -q -w net.ipv4.conf.eth0.promote_secondaries=1 >/dev/null
	want=" "
	for j in $(seq 0 $((m - 1))); do
		want+="$(addr "$i" "$j") "
		ip -n "$name" addr replace "$(addr "$i" "$j")/24" dev eth0
	done
	# addresses of an earlier up with other N or M
	for a in $(addrs_of "$i"); do
		[[ $want == *" $a "* ]] || ip -n "$name" addr del "$a/24" dev eth0
	done
	ip -n "$name" link set eth0 up
	# nothing may leave the machine: never a default route
	while ip -n "$name" route show default | grep -q .; do ip -n "$name" route del default; done
	ip -n "$name" -6 route del default 2>/dev/null || true
	ip netns exec "$name" sysctl -q -w \
		net.ipv4.ip_local_port_range="10000 65535" \
		net.core.somaxconn=65535 \
		net.ipv4.tcp_max_syn_backlog=65535 >/dev/null
done

ok=1
report
