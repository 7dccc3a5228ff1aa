package storm

import (
	"net"
	"net/netip"
	"testing"
)

// TestOnThisHost: the kernel counters a run reads are the server's only
// when --url's host is this machine; otherwise listen_overflows is null.
func TestOnThisHost(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"ws://127.0.0.1:1/", true},
		{"ws://127.3.4.5:80/x", true},
		{"wss://[::1]:443/", true},
		{"ws://localhost:1/", true},
		{"ws://192.0.2.1:80/", false},    // TEST-NET-1: never an address of this machine
		{"ws://host.invalid:80/", false}, // does not resolve
		{"ws://%zz/", false},             // does not parse
	} {
		if got := onThisHost(tc.url); got != tc.want {
			t.Errorf("onThisHost(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
	// An address of one of this machine's interfaces is this host.
	ifs, _ := net.InterfaceAddrs()
	for _, ia := range ifs {
		p, err := netip.ParsePrefix(ia.String())
		if err != nil || p.Addr().IsLoopback() || !p.Addr().Is4() {
			continue
		}
		if u := "ws://" + p.Addr().String() + ":80/"; !onThisHost(u) {
			t.Errorf("onThisHost(%q) = false for an interface's address", u)
		}
		break
	}
}
