package loadgen

import (
	"strings"
	"testing"
)

// FuzzParseSourceIPs: no list makes the parser panic or expand past
// MaxSourceIPs, and a parsed list written back as addresses parses to
// itself.
func FuzzParseSourceIPs(f *testing.F) {
	for _, s := range []string{
		"127.0.0.2", "127.0.0.2-127.0.0.9", "::1-::3", " 127.0.0.2 , ,127.0.0.3",
		"127.0.0.9-127.0.0.2",                        // backwards
		"127.0.0.1-::1",                              // two families
		"0.0.0.0-255.255.255.255",                    // far past the cap
		"::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", // the last address has no Next
		"255.255.255.254-255.255.255.255",
		"fe80::1%eth0", "127.0.0.1-", "-", "1.2.3.4-5.6.7.8-9.9.9.9", "::ffff:127.0.0.1-127.0.0.2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addrs, err := ParseSourceIPs(s)
		if err != nil {
			return
		}
		if len(addrs) > MaxSourceIPs {
			t.Fatalf("%q: %d addresses, cap %d", s, len(addrs), MaxSourceIPs)
		}
		parts := make([]string, len(addrs))
		for i, a := range addrs {
			if !a.IsValid() {
				t.Fatalf("%q: address %d is invalid", s, i)
			}
			parts[i] = a.String()
		}
		again, err := ParseSourceIPs(strings.Join(parts, ","))
		if err != nil {
			t.Fatalf("%q: its own addresses %q do not parse: %v", s, parts, err)
		}
		if len(again) != len(addrs) {
			t.Fatalf("%q: %d addresses, written back %d", s, len(addrs), len(again))
		}
		for i := range again {
			if again[i] != addrs[i] {
				t.Fatalf("%q: address %d is %v, written back %v", s, i, addrs[i], again[i])
			}
		}
	})
}
