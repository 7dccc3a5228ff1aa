package storm

import (
	"net/url"
	"strconv"
)

// urlPort returns the TCP port a ws:// or wss:// URL dials: its explicit
// port, else 443 for wss:// and 80 for ws://; 0 when the URL does not
// parse. Resources count the loadgen's TCP sockets by it.
func urlPort(s string) uint16 {
	u, err := url.Parse(s)
	if err != nil {
		return 0
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return 0
		}
		return uint16(n)
	}
	if u.Scheme == "wss" || u.Scheme == "https" {
		return 443
	}
	return 80
}
