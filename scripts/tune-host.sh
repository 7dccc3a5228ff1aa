#!/usr/bin/env bash
# Host tuning for large stampede runs on Linux, up to a million connections
# with both ends on one machine (docs/sizing.md).
#
#   scripts/tune-host.sh            print what would change and why (changes nothing)
#   scripts/tune-host.sh --apply    change it (root; not persistent across reboots)
#
# stampede's tests and `make bench` need none of this: they size themselves to
# the defaults. Tuning matters for fleets near the limits (250,000+ clients on
# one machine) and for comparing against a production host's settings. The
# per-process open-file limit (hard RLIMIT_NOFILE) is set outside the machine
# and is not changed here; `stampede run` uses as many processes as it needs.
set -euo pipefail

apply=0
case "${1:-}" in
	--apply) apply=1 ;;
	"" ) ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "tune-host.sh: unknown argument $1 (use --apply or nothing)" >&2; exit 2 ;;
esac

changes=0
# want NAME VALUE WHY: compare a sysctl with the wanted value. A single
# number is a minimum: a larger current value is left alone. Several numbers
# (tcp_mem) are minimums field by field.
want() {
	local name=$1 value=$2 why=$3 path cur ok=1
	path=/proc/sys/${name//.//}
	if [ ! -e "$path" ]; then
		printf '  %-36s (not on this kernel or module not loaded) %s\n' "$name" "$why"
		return
	fi
	cur=$(tr -s '\t ' ' ' <"$path")
	if [ "$cur" != "$value" ]; then
		read -r -a c <<<"$cur"
		read -r -a v <<<"$value"
		if [ "${#c[@]}" != "${#v[@]}" ] || [ "$name" = net.ipv4.ip_local_port_range ] || [ "$name" = net.ipv4.ip_local_reserved_ports ]; then
			ok=0
		else
			for i in "${!v[@]}"; do
				if ! [[ ${c[$i]} =~ ^[0-9]+$ && ${v[$i]} =~ ^[0-9]+$ ]] || [ "${c[$i]}" -lt "${v[$i]}" ]; then
					ok=0
				fi
			done
		fi
	fi
	if [ "$ok" = 1 ]; then
		printf '  %-36s = %-22s ok\n' "$name" "$cur"
		return
	fi
	changes=$((changes + 1))
	if [ "$apply" = 1 ]; then
		printf '%s\n' "$value" >"$path"
		printf '  %-36s %s -> %s   (%s)\n' "$name" "$cur" "$value" "$why"
	else
		printf '  %-36s %s -> %s   would change: %s\n' "$name" "$cur" "$value" "$why"
	fi
}

echo "stampede host tuning for up to 1,000,000 connections on one machine ($([ "$apply" = 1 ] && echo applying || echo dry run))"
echo "files"
want fs.file-max 4194304 \
	"system-wide open files: a million connections are two million sockets with both ends here"
want fs.nr_open 1048576 \
	"the ceiling a process's RLIMIT_NOFILE can be raised to; this machine's hard limit (20,000) is set outside and cannot be raised here"
echo "listen and accept queues (the herd after a restart)"
want net.core.somaxconn 65535 \
	"the ceiling on any listen backlog; stampede sets its target's backlog explicitly (--backlog) but the kernel clamps it to this"
want net.ipv4.tcp_max_syn_backlog 262144 \
	"the SYN queue; a storm of reconnects fills it before the accept queue"
want net.ipv4.tcp_syncookies 1 \
	"SYN cookies answer a full SYN queue instead of dropping; the herd counters show them"
want net.core.netdev_max_backlog 65536 \
	"packets queued per CPU before the stack takes them; loopback bursts of SYNs land here"
echo "ports"
want net.ipv4.ip_local_port_range "10000 65000" \
	"ephemeral ports per (source IP, destination): 28,232 by default; wider lets one source address hold more clients (stampede uses 127.x addresses either way)"
want net.ipv4.ip_local_reserved_ports "7000-7999" \
	"keep target and control ports out of the ephemeral range, so a client socket never takes the port a restarting target needs"
echo "socket memory and closing sockets"
# tcp_mem is in pages (4 KiB): min, pressure, max for all TCP buffers. An
# idle connection holds none; a restart storm queues handshakes and frames
# on a million sockets at once.
want net.ipv4.tcp_mem "1048576 2097152 3145728" \
	"TCP buffer memory in pages (4, 8, 12 GiB): above 'pressure' the kernel shrinks buffers, above 'max' it drops"
want net.ipv4.tcp_max_orphans 1048576 \
	"sockets closed by a process that exited (an abrupt restart closes a million at once); beyond it they are reset"
want net.ipv4.tcp_max_tw_buckets 2097152 \
	"TIME_WAIT sockets; beyond it new ones are destroyed at once (harmless, but logged)"
# The established hash table is sized at boot and cannot be changed here:
# report it, and how to size it.
if [ -r /proc/sys/net/ipv4/tcp_ehash_entries ]; then
	ehash=$(cat /proc/sys/net/ipv4/tcp_ehash_entries)
	printf '  %-36s = %-22s %s\n' net.ipv4.tcp_ehash_entries "$ehash" \
		"(read-only: every packet walks a bucket; a million clients with both ends here are 2,000,000 sockets, so ask for 4194304 buckets with thash_entries= at boot, or net.ipv4.tcp_child_ehash_entries for a network namespace created after it, as lab/million.sh does)"
fi
echo "connection tracking (only if the nf_conntrack module is loaded)"
want net.netfilter.nf_conntrack_max 2097152 \
	"tracked connections, when a firewall rule tracks them; a full table drops new connections ('table full, dropping packet')"

echo "  ulimit -n (soft/hard): $(ulimit -Sn)/$(ulimit -Hn)  (stampede raises soft to hard itself and gives each process 90 % of it)"
if [ "$apply" = 0 ] && [ "$changes" -gt 0 ]; then
	echo "$changes setting(s) differ; run with --apply as root to change them."
fi
