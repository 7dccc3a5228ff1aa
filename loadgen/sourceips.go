package loadgen

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/stampede-dev/stampede/spec"
)

// MaxSourceIPs bounds the addresses ParseSourceIPs expands a list to.
const MaxSourceIPs = 4096

// ParseSourceIPs reads a list of source addresses as the command line
// writes them: comma-separated items, each an address (127.0.0.2) or an
// inclusive range of one family (127.0.0.2-127.0.0.9). An empty string is
// an empty list.
func ParseSourceIPs(s string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(item, "-")
		first, err := netip.ParseAddr(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("source address %q: %w", item, err)
		}
		last := first
		if isRange {
			if last, err = netip.ParseAddr(strings.TrimSpace(hi)); err != nil {
				return nil, fmt.Errorf("source range %q: %w", item, err)
			}
			if first.Is4() != last.Is4() || last.Less(first) {
				return nil, fmt.Errorf("source range %q: want LOW-HIGH of one family", item)
			}
		}
		for a := first; ; a = a.Next() {
			if len(out) == MaxSourceIPs {
				return nil, fmt.Errorf("more than %d source addresses", MaxSourceIPs)
			}
			out = append(out, a)
			if a == last {
				break
			}
		}
	}
	return out, nil
}

// CheckLocalSources returns a *spec.FieldError on Client.SourceIPs naming
// the first address that is not this host's: a client cannot bind to it,
// so every attempt of a run from it would fail as local. An address is
// this host's when an interface has it, or when it falls in a prefix of a
// loopback interface (all of 127.0.0.0/8 on Linux). It reads the
// interfaces; it opens no socket.
func CheckLocalSources(ips []netip.Addr) error {
	if len(ips) == 0 {
		return nil
	}
	var own []netip.Addr
	var loops []netip.Prefix
	ifs, err := net.Interfaces()
	if err != nil {
		return spec.Errorf("Client.SourceIPs", "cannot list this host's addresses: %w", err)
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(n.IP)
			if !ok {
				continue
			}
			ip = ip.Unmap()
			own = append(own, ip)
			if ifc.Flags&net.FlagLoopback != 0 {
				ones, _ := n.Mask.Size()
				loops = append(loops, netip.PrefixFrom(ip, ones).Masked())
			}
		}
	}
	for _, ip := range ips {
		ip = ip.Unmap()
		if slices.Contains(own, ip) || slices.ContainsFunc(loops, func(p netip.Prefix) bool { return p.Contains(ip) }) {
			continue
		}
		return spec.Errorf("Client.SourceIPs", "%s is not an address of this host (ip addr lists them); a client cannot connect from it", ip)
	}
	return nil
}
