#!/usr/bin/env bash
# Host tuning for large stampede runs on Linux.
#
#   scripts/tune-host.sh            print what would change and why (changes nothing)
#   scripts/tune-host.sh --apply    change it (root; not persistent across reboots)
#
# stampede's tests and `make bench` need none of this: they size themselves to
# the defaults. Tuning matters for fleets near the limits (50,000+ clients on
# one machine) and for comparing against a production host's settings.
set -euo pipefail

apply=0
case "${1:-}" in
	--apply) apply=1 ;;
	"" ) ;;
	-h|--help) sed -n '2,10p' "$0"; exit 0 ;;
	*) echo "tune-host.sh: unknown argument $1 (use --apply or nothing)" >&2; exit 2 ;;
esac

changes=0
# want NAME VALUE WHY: compare a sysctl with the wanted value. A single
# number is a minimum: a larger current value is left alone.
want() {
	local name=$1 value=$2 why=$3 path cur
	path=/proc/sys/${name//.//}
	if [ ! -e "$path" ]; then
		printf '  %-36s (not on this kernel) %s\n' "$name" "$why"
		return
	fi
	cur=$(tr -s '\t ' ' ' <"$path")
	if [ "$cur" = "$value" ] || { [[ $value =~ ^[0-9]+$ && $cur =~ ^[0-9]+$ ]] && [ "$cur" -ge "$value" ]; }; then
		printf '  %-36s = %-14s ok\n' "$name" "$cur"
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

echo "stampede host tuning ($([ "$apply" = 1 ] && echo applying || echo dry run))"
want net.core.somaxconn 65535 \
	"the ceiling on any listen backlog; stampede sets its target's backlog explicitly (--backlog) but the kernel clamps it to this"
want net.ipv4.tcp_max_syn_backlog 65535 \
	"the SYN queue; a storm of reconnects fills it before the accept queue"
want net.ipv4.ip_local_port_range "10000 65000" \
	"ephemeral ports per (source IP, destination): 28,232 by default; wider lets one source address hold more clients"
want net.ipv4.ip_local_reserved_ports "7000-7999" \
	"keep target and control ports out of the ephemeral range, so a client socket never takes the port a restarting target needs"
want fs.file-max 2097152 \
	"system-wide open files; each connection is one file on each side"
want fs.nr_open 1048576 \
	"the per-process open-file ceiling; this machine's hard RLIMIT_NOFILE (20,000) is set outside and cannot be raised here"

echo "  ulimit -n (soft/hard): $(ulimit -Sn)/$(ulimit -Hn)  (stampede raises soft to hard itself and uses several processes above ~15,000 connections)"
if [ "$apply" = 0 ] && [ "$changes" -gt 0 ]; then
	echo "$changes setting(s) differ; run with --apply as root to change them."
fi
