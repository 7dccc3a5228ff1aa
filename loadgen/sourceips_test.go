package loadgen

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stampede-dev/stampede/spec"
)

// TestCheckLocalSources: loopback addresses (all of 127.0.0.0/8 is this
// host's) pass; an address of no interface here is refused, naming it.
func TestCheckLocalSources(t *testing.T) {
	for _, tc := range []struct {
		name string
		ips  []string
		bad  string // the address the error names; "" for none
	}{
		{"none", nil, ""},
		{"loopback", []string{"127.0.0.1", "127.0.0.2", "127.3.4.5"}, ""},
		{"TEST-NET-1", []string{"127.0.0.2", "192.0.2.1"}, "192.0.2.1"},
		{"documentation v6", []string{"2001:db8::1"}, "2001:db8::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ips []netip.Addr
			for _, s := range tc.ips {
				ips = append(ips, netip.MustParseAddr(s))
			}
			err := CheckLocalSources(ips)
			var fe *spec.FieldError
			switch {
			case tc.bad == "" && err != nil:
				t.Errorf("error %v; want none", err)
			case tc.bad != "" && (!errors.As(err, &fe) || fe.Field != "Client.SourceIPs"):
				t.Errorf("error %v; want a field error on Client.SourceIPs", err)
			case tc.bad != "" && fe.Reason[:len(tc.bad)] != tc.bad:
				t.Errorf("reason %q; want it to name %s", fe.Reason, tc.bad)
			}
		})
	}
}
