package loadgen

import (
	"fmt"
	"net/netip"
	"strings"
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
