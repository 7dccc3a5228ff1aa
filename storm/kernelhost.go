package storm

import (
	"net"
	"net/netip"
	"net/url"
)

// onThisHost reports whether url's host is an address of this machine
// (loopback, or one of its interfaces), where the kernel counters this
// run reads are those of the server's listener (docs/results.md
// "kernel.csv"). A name is resolved; one that does not resolve is not.
func onThisHost(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	addrs := []netip.Addr{}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, a)
	} else if ips, err := net.LookupIP(host); err == nil {
		for _, ip := range ips {
			if a, ok := netip.AddrFromSlice(ip); ok {
				addrs = append(addrs, a.Unmap())
			}
		}
	}
	if len(addrs) == 0 {
		return false
	}
	ifs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if a.IsLoopback() || a.IsUnspecified() {
			continue
		}
		local := false
		for _, ia := range ifs {
			if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().Unmap() == a.Unmap() {
				local = true
			}
		}
		if !local {
			return false
		}
	}
	return true
}
