package chaos

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stampede-dev/stampede/fault"
)

// proxyPrefix turns fault words into a schedule entry for the parser.
const proxyPrefix = "at 0s proxy "

// ParseProxyFault parses a set of proxy faults written as in a schedule's
// proxy event, without "proxy" and "for", e.g. "latency=200ms jitter=20ms"
// or "loss=1%". "" and "off" are the empty set (every fault off).
func ParseProxyFault(words string) (fault.Set, error) {
	w := strings.TrimSpace(words)
	if w == "" || w == "off" {
		return fault.Set{}, nil
	}
	if strings.ContainsAny(w, ";#\n\r") {
		return fault.Set{}, fmt.Errorf("proxy fault %q: expected fault words such as latency=200ms, found a separator", words)
	}
	s, err := Parse(proxyPrefix + w + " for 1s")
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return fault.Set{}, fmt.Errorf("proxy fault %q, col %d: %s", w, max(1, se.Col-len(proxyPrefix)), se.Msg)
		}
		return fault.Set{}, fmt.Errorf("proxy fault %q: %w", w, err)
	}
	return s.Entries[0].Event.Proxy, nil
}
